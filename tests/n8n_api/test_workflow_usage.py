"""The workflow's own model usage per run: tokens per model node, priced by the node's model."""

import pytest

from n8n_deepeval_pipeline.judging.prices import Price, PriceTable
from n8n_deepeval_pipeline.n8n_api.executions import ModelCall
from n8n_deepeval_pipeline.n8n_api.workflow_usage import node_usage, usage_fields, with_usage
from n8n_deepeval_pipeline.tables.rows import AgentOutput
from n8n_deepeval_pipeline.workflow.model_nodes import model_name, model_names

MODELS = {"OpenAI Chat Model": "gpt-4o-mini", "Local Model": "llama3.1:8b", "Router": None}
PRICES = PriceTable().extended({"llama3.1:8b": Price(input=0, output=0)})


def call(node, prompt, completion, estimated=False):
    return ModelCall(
        node=node, prompt_tokens=prompt, completion_tokens=completion, estimated=estimated
    )


def test_a_model_is_read_from_its_locator_its_string_or_modelName_never_an_expression():
    def node(**parameters):
        return {"name": "m", "parameters": parameters}

    assert model_name(node(model={"__rl": True, "mode": "list", "value": "gpt-4o"})) == "gpt-4o"
    assert model_name(node(model="claude-haiku-4-5")) == "claude-haiku-4-5"
    assert model_name(node(modelName="models/gemini-2.0-flash")) == "models/gemini-2.0-flash"
    assert model_name(node(model="={{ $json.model }}")) is None  # chosen at run time
    assert model_name(node(options={})) is None  # the node's default: not in the workflow
    workflow = {"nodes": [{"name": "A", "parameters": {"model": "gpt-4o"}}, {"name": "B"}]}
    assert model_names(workflow) == {"A": "gpt-4o", "B": None}


def test_each_node_is_summed_and_priced_by_its_model_per_million_tokens():
    calls = [
        call("OpenAI Chat Model", 1000, 100),
        call("OpenAI Chat Model", 3000, 300),
        call("Local Model", 500, 50, estimated=True),
    ]
    nodes = node_usage(calls, MODELS, PRICES)
    assert [(n.node, n.model, n.calls, n.prompt_tokens, n.completion_tokens) for n in nodes] == [
        ("OpenAI Chat Model", "gpt-4o-mini", 2, 4000, 400),
        ("Local Model", "llama3.1:8b", 1, 500, 50),
    ]
    # gpt-4o-mini: 0.15 in, 0.60 out per million tokens
    assert nodes[0].cost_usd == pytest.approx((4000 * 0.15 + 400 * 0.60) / 1e6)
    assert nodes[1].cost_usd == 0.0 and nodes[1].estimated
    fields = usage_fields(nodes)
    assert fields["llm_prompt_tokens"] == 4500
    assert fields["llm_completion_tokens"] == 450
    assert fields["llm_tokens_estimated"] is True
    assert fields["llm_cost_usd"] == pytest.approx(nodes[0].cost_usd)


def test_a_node_without_a_price_leaves_the_run_unpriced_not_cheaper():
    nodes = node_usage([call("OpenAI Chat Model", 10, 1), call("Router", 10, 1)], MODELS, PRICES)
    assert nodes[1].model is None and nodes[1].cost_usd is None
    assert usage_fields(nodes)["llm_cost_usd"] is None
    unknown = node_usage([call("Local Model", 10, 1)], MODELS, PriceTable())
    assert unknown[0].cost_usd is None  # no price for llama3.1:8b in the built-in table


def test_runs_are_matched_by_session_and_a_run_without_executions_stays_unmeasured():
    outputs = [
        AgentOutput(workflow_hash="h", run_id="h:a:0", session_id="s0", actual_output="x"),
        AgentOutput(workflow_hash="h", run_id="h:a:1", session_id="s1", actual_output="y"),
        AgentOutput(workflow_hash="h", run_id="h:a:2", session_id="s2", actual_output="z"),
    ]
    calls = {"s0": [call("OpenAI Chat Model", 100, 10)], "s1": []}
    measured = with_usage(outputs, calls, MODELS, PRICES)
    assert measured[0].llm_prompt_tokens == 100 and measured[0].llm_usage[0]["calls"] == 1
    # A run whose execution held no model call used none: measured, zero, free.
    assert (measured[1].llm_prompt_tokens, measured[1].llm_cost_usd) == (0, 0)
    assert measured[2].llm_prompt_tokens is None and measured[2].llm_usage is None
