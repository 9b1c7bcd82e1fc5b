"""A benchmark whose target is a webhook (FakeN8nWebhooks, a test double), end to end."""

import json

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.orchestration.assets import VERDICT_TAG
from n8n_deepeval_pipeline.orchestration.automation import current_hash
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from tests.n8n_api.fake_n8n import TOKEN, FakeN8nWebhooks
from tests.orchestration.conftest import PARTITIONS, example_key, query

pytestmark = pytest.mark.slow


def webhook_benchmark(example_copy, url):
    document = yaml.safe_load(example_copy.read_text())
    document["target"] = {"type": "n8n_webhook", "url": url, "maxConcurrency": 3}
    document["metrics"] = [{"metric": "exact_match", "label": "exact_answer"}, {"metric": "bias"}]
    document["aggregate"] = {"passRule": "allPass"}
    example_copy.write_text(yaml.safe_dump(document))
    return example_copy


@pytest.mark.parametrize("path", ["agent", "error"])
def test_live_outputs_are_scored_and_failed_calls_are_target_error_rows(
    example_copy, environment, tmp_path, path
):
    with FakeN8nWebhooks() as fake:
        url = f"{fake.base_url}/webhook/{path}?token={TOKEN}"
        benchmark_file = webhook_benchmark(example_copy, url)
        defs = build_definitions([benchmark_file])
        key = example_key(benchmark_file)
        (tmp_path / "dagster").mkdir()
        with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
            instance.add_dynamic_partitions(PARTITIONS, [key])
            job = defs.resolve_job_def("support_agent__benchmark")
            result = job.execute_in_process(
                partition_key=key, instance=instance, raise_on_error=False
            )
            verdict = instance.get_run_by_id(result.run_id).tags[VERDICT_TAG]
    # Every call failing leaves the version incomplete: its run is no success (the report's
    # version_passes check fails it, once every asset is materialised).
    assert (result.success, verdict) == (
        (True, "passed") if path == "agent" else (False, "incomplete")
    )
    assert fake.calls[f"/webhook/{path}"] == 27  # 9 rows × 3 runs, each called once
    outputs = query(
        environment, "select actual_output, error_kind from support_agent.agent_outputs"
    )
    scores = query(
        environment,
        "select count(*), count(distinct run_id), count(error_kind) "
        "from support_agent.metric_scores",
    )
    if path == "agent":
        assert {kind for _, kind in outputs} == {None}
        assert all(text.startswith("Echo: ") for text, _ in outputs)
        assert scores == [(54, 27, 0)]
    else:
        assert outputs == [(None, "target_error")] * 27
        kinds = query(
            environment, "select distinct error_kind, error from support_agent.metric_scores"
        )
        assert kinds == [
            ("target_error", "target_error: HTTP 200: error in the answer: upstream model failed")
        ]
        assert scores == [(54, 27, 54)]  # nothing lost: every run × metric has its row
    stored = (tmp_path / "db" / "results.duckdb").read_bytes()
    assert TOKEN.encode() not in stored
    assert not any(
        TOKEN.encode() in file.read_bytes()
        for file in (tmp_path / "dagster").rglob("*")
        if file.is_file()
    )


def test_record_keeps_a_live_run_for_offline_rescoring(example_copy, environment, tmp_path):
    recording = tmp_path / "recorded.jsonl"
    with FakeN8nWebhooks() as fake:
        path = webhook_benchmark(example_copy, f"{fake.base_url}/webhook/agent")
        live = CliRunner().invoke(main, ["run", str(path), "--json", "--record", str(recording)])
    assert live.exit_code == 0, live.output
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    full = current_hash(load_benchmark(path), N8nResource())
    assert len(lines) == 27
    assert {line["workflow_hash"] for line in lines} == {full}
    assert {line["output"][:6] for line in lines} == {"Echo: "}
    document = yaml.safe_load(path.read_text())
    document["target"] = {"type": "recorded", "outputs": str(recording)}
    path.write_text(yaml.safe_dump(document))
    offline = CliRunner().invoke(main, ["run", str(path), "--json"])  # the fake is gone
    assert offline.exit_code == 0, offline.output

    def summary(output):
        return json.loads(output)

    assert summary(offline.stdout)["pass_rate"] == summary(live.stdout)["pass_rate"]
    assert summary(offline.stdout)["metrics"] == summary(live.stdout)["metrics"]


def test_failed_workflow_calls_make_an_incomplete_run_named_apart_from_unjudged_scores(
    example_copy, environment
):
    runner = CliRunner()
    with FakeN8nWebhooks() as fake:
        path = webhook_benchmark(example_copy, f"{fake.base_url}/webhook/refunds-fail")
        default = runner.invoke(main, ["run", str(path)])
        strict = runner.invoke(main, ["run", str(path), "--max-error-rate", "0"])
        allowed = runner.invoke(main, ["run", str(path), "--json", "--max-error-rate", "0.2"])
        webhook_benchmark(example_copy, f"{fake.base_url}/webhook/error")
        all_failed = runner.invoke(main, ["run", str(path), "--json"])
    # 1 row of 9 is about a refund: 3 of 27 calls fail, above checks.maxErrorRate 5%
    assert default.exit_code == 3, default.output
    lines = default.stdout.splitlines()
    # exact_match never passes an echo, and decides alone (bias is a dry-run placeholder);
    # the mean leaves the 3 unscored runs out, and says so
    assert lines[1] == (
        "runs 27 · pass rate 0.0% (allPass) · mean overall score 0.000 (leaves out 3 errored runs)"
    )
    assert "WARNING: INCOMPLETE RUN: 3 of 27 workflow calls failed (11.1%)" in lines
    assert default.stderr.splitlines()[-1] == (
        "incomplete: 11.1% of the workflow calls failed (3 of 27 runs), "
        "above checks.maxErrorRate 5.0%"
    )
    assert strict.exit_code == 3
    assert strict.stderr.splitlines()[-1] == (
        "incomplete: 11.1% of the workflow calls failed (3 of 27 runs), above --max-error-rate 0.0%"
    )
    assert allowed.exit_code == 0, allowed.output
    errors = json.loads(allowed.stdout)["errors"]
    assert (errors["runs"], errors["failed_target_calls"], errors["unjudged"]) == (27, 3, 0)
    assert errors["failed_target_call_rate"] == pytest.approx(3 / 27)
    assert errors["unjudged_rate"] == 0.0
    assert all_failed.exit_code == 3  # every call failed: never a success
    summary = json.loads(all_failed.stdout)
    assert (summary["errors"]["failed_target_calls"], summary["unscored_runs"]) == (27, 27)
    assert "incomplete: 100.0% of the workflow calls failed (27 of 27 runs)" in all_failed.stderr
