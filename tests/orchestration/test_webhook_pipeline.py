"""A benchmark whose target is a webhook (FakeN8nWebhooks, a test double), end to end."""

import json

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.cli import main
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
            assert job.execute_in_process(partition_key=key, instance=instance).success
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
