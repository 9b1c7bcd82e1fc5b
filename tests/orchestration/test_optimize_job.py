"""The optimize job, run in process as the UI launches it, against a test double of n8n.

The workflow's agent (``FakeHarnessN8n``: it signs off only when its system message asks)
lacks the sign-off the benchmark's Pattern Match wants; the judge (``PromptEngineer``)
diagnoses that and rewrites the prompt. The job searches, reports each round as a
materialisation of ``<benchmark>/prompt_optimization``, proves the rewrite on the held-out
rows through the benchmark's own assets, and (``adopt``) writes it into the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.testing.prompt_engineer import PromptEngineer
from tests.optimization.fake_harness_n8n import SIGN_OFF, FakeHarnessN8n
from tests.optimization.test_optimize_parity import WORKFLOW

pytestmark = pytest.mark.slow
INSTRUCTION = f"End every answer with: {SIGN_OFF}"


def write_benchmark(folder: Path) -> Path:
    (folder / "workflow.json").write_text(json.dumps(WORKFLOW), encoding="utf-8")
    rows = "\n".join(f"q{n},Question number {n}" for n in range(1, 9))
    (folder / "cases.csv").write_text(f"id,input\n{rows}\n", encoding="utf-8")
    document = {
        "name": "signing_agent",
        "workflow": "workflow.json",
        "dataset": {"path": "cases.csv", "columnMapping": {"input": "input"}},
        "runsPerRow": 2,
        "target": {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format"},
        "metrics": [{"metric": "pattern_match", "pattern": r"(?s).*Kind regards, Acme\..*"}],
        "optimize": {"gepa": {"iterations": 2, "minibatchSize": 3, "paretoSize": 2},
                     "split": {"heldOut": 0.375, "seed": 3}},
    }  # fmt: skip
    path = folder / "agent.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def test_the_job_reports_rounds_proves_on_held_out_rows_and_adopts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = PromptEngineer(INSTRUCTION, "the answers lack the sign-off", latency_s=0.0).start()
    try:
        with FakeHarnessN8n() as fake:
            for name, value in {"N8N_API_URL": fake.base_url, "N8N_API_KEY": "n8n-key",
                                "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
                                "N8N_DEEPEVAL_DUCKDB": str(tmp_path / "home" / "results.duckdb"),
                                "DEEPEVAL_POOL_SIZE": "1",
                                "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai",
                                "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4.1",
                                "N8N_DEEPEVAL_JUDGE_BASE_URL": judge.base_url,
                                "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-job"}.items():  # fmt: skip
                monkeypatch.setenv(name, value)
            path = write_benchmark(tmp_path)
            job = build_definitions([path]).resolve_job_def("signing_agent__optimize")
            config = {"ops": {"signing_agent__optimize_prompt": {"config": {"adopt": True}}}}
            with dg.DagsterInstance.ephemeral() as instance:
                result = job.execute_in_process(run_config=config, instance=instance)
            calls, left = sum(fake.calls.values()), dict(fake.workflows)
    finally:
        judge.stop()
    assert result.success
    events = [
        event.step_materialization_data.materialization
        for event in result.all_events
        if event.is_step_materialization
    ]
    assert {event.asset_key.to_user_string() for event in events} == {
        "signing_agent/prompt_optimization"
    }
    rounds, end = [e.metadata for e in events[:-1]], events[-1].metadata
    assert [meta["round"].value for meta in rounds] == [1, 2]
    assert rounds[-1]["best_score"].value == 1.0  # the sign-off found in the search
    assert all(meta["workflow_calls"].value > 0 for meta in rounds)
    assert end["held_out/verdict"].value == "significant_improvement"
    assert (end["held_out/base_pass_rate"].value, end["held_out/candidate_pass_rate"].value) == (
        0.0, 1.0)  # fmt: skip
    assert end["held_out/adopted"].value is True
    assert f"+{INSTRUCTION}" in end["prompt_diff"].value
    variants = yaml.safe_load(path.read_text(encoding="utf-8"))["target"]["variants"]
    ((_, overrides),) = variants.items()
    assert overrides["AI Agent"]["options.systemMessage"].endswith(INSTRUCTION)
    assert calls > 0 and left == {}  # every harness copy, the search's and the proof's, removed
