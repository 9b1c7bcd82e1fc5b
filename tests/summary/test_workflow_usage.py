"""A version's workflow spend: tokens and cost over measured runs, latency percentiles."""

import numpy as np
import pytest

from n8n_deepeval_pipeline.summary.run_summary import workflow_usage_lines
from n8n_deepeval_pipeline.summary.workflow_usage import UNNAMED_MODEL, workflow_usage
from n8n_deepeval_pipeline.tables.rows import AgentOutput


def output(index, latency, prompt=None, completion=None, cost=None, usage=None, estimated=False):
    return AgentOutput(
        workflow_hash="h",
        run_id=f"h:r:{index}",
        latency_s=latency,
        llm_prompt_tokens=prompt,
        llm_completion_tokens=completion,
        llm_tokens_estimated=None if prompt is None else estimated,
        llm_cost_usd=cost,
        llm_usage=usage,
    )


def node(model, calls, prompt, completion, cost):
    return {"node": "Chat Model", "model": model, "calls": calls, "prompt_tokens": prompt,
            "completion_tokens": completion, "estimated": False, "cost_usd": cost}  # fmt: skip


def test_tokens_and_cost_are_summed_over_measured_runs_and_latency_over_all():
    latencies = [0.5, 1.0, 1.5, 2.0, 10.0]
    outputs = [
        output(0, 0.5, 100, 10, 0.002, [node("gpt-4o", 2, 100, 10, 0.002)]),
        output(1, 1.0, 300, 30, 0.006, [node("gpt-4o", 3, 300, 30, 0.006)]),
        output(2, 1.5),  # not measured (its execution was not found)
        output(3, 2.0, 200, 20, 0.004, [node("gpt-4o", 1, 200, 20, 0.004)], estimated=True),
        output(4, 10.0),
    ]
    usage = workflow_usage(outputs)
    assert (usage.runs, usage.measured_runs) == (5, 3)
    assert (usage.prompt_tokens, usage.completion_tokens) == (600, 60)
    assert usage.tokens_per_run == 220
    assert usage.cost_usd == pytest.approx(0.012)
    assert usage.cost_per_run_usd == pytest.approx(0.004)
    assert usage.estimated
    assert usage.latency_p50_s == 1.5
    assert usage.latency_p95_s == pytest.approx(float(np.percentile(latencies, 95)))  # 8.4
    assert usage.latency_p95_s == pytest.approx(8.4)
    (only,) = usage.nodes
    assert (only.calls, only.prompt_tokens, only.cost_usd) == (6, 600, pytest.approx(0.012))
    line = workflow_usage_lines(usage)[0]
    assert "tokens 660 in 3 runs (220 per run, n8n's estimate)" in line
    assert "cost $0.0120 ($0.00400 per run)" in line
    assert "latency p50 1.50 s · p95 8.40 s" in line


def test_one_unpriced_run_makes_the_cost_unknown_and_names_the_model():
    outputs = [
        output(0, 1.0, 100, 10, 0.002, [node("gpt-4o", 1, 100, 10, 0.002)]),
        output(1, 1.0, 100, 10, None, [node(None, 1, 100, 10, None)]),
    ]
    usage = workflow_usage(outputs)
    assert usage.cost_usd is None and usage.cost_per_run_usd is None
    assert usage.unpriced_models == [UNNAMED_MODEL]
    assert f"cost unpriced ({UNNAMED_MODEL}: no price)" in workflow_usage_lines(usage)[0]


def test_recorded_outputs_have_a_latency_but_no_workflow_line():
    usage = workflow_usage([output(0, 1.0), output(1, 3.0)])
    assert usage.measured_runs == 0 and usage.cost_usd is None and usage.latency_p50_s == 2.0
    assert workflow_usage_lines(usage) == []
