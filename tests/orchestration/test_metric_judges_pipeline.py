"""A judge per metric and a judge panel through the Dagster assets, stored in DuckDB."""

import json

import dagster as dg
import pytest
import yaml

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.orchestration.conftest import example_key, query, run_job

pytestmark = pytest.mark.slow


def test_a_metric_judge_and_a_dry_run_panel_are_stored_and_summarised(
    example_copy, environment, monkeypatch
):
    server = LoopbackJudge(latency_s=0.0, requests_per_minute=6000).start()  # sends headers
    monkeypatch.setenv("OWN_JUDGE_URL", server.base_url)
    document = yaml.safe_load(example_copy.read_text())
    document["runsPerRow"] = 1
    document["dataset"]["maxRows"] = 2
    document["target"]["ignoreUnusedOutputs"] = True
    document["metrics"] = [
        {
            "metric": "bias",
            "judge": {
                "provider": "openai-compatible",
                "model": "own-judge",
                "baseUrlEnv": "OWN_JUDGE_URL",
            },
        },
        {
            "metric": "g_eval",
            "name": "helpfulness",
            "criteria": "Does the answer resolve the customer's question?",
            "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"],
            "judges": [{"provider": "dry-run", "model": name} for name in ("a", "b", "c")],
            "panel": "mean",
        },
    ]
    document["aggregate"] = {"passRule": "allPass"}
    example_copy.write_text(yaml.safe_dump(document))
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    try:
        with dg.instance_for_test() as instance:
            result = run_job(defs, instance, key)
    finally:
        server.stop()
    assert result.success
    assert server.requests > 0
    rows = query(
        environment,
        "select metric, judge, dry_run, panel, judge_agreement, judge_scores "
        "from support_agent.metric_scores order by metric, run_id",
    )
    assert [row[:4] for row in rows] == [
        ("bias", "openai-compatible:own-judge", False, None),
        ("bias", "openai-compatible:own-judge", False, None),
        ("helpfulness", "dry-run:a, dry-run:b, dry-run:c", True, "mean"),
        ("helpfulness", "dry-run:a, dry-run:b, dry-run:c", True, "mean"),
    ]
    assert [row[4] for row in rows[:2]] == [None, None]
    for row in rows[2:]:
        assert 0 < row[4] <= 1
        assert [vote["judge"] for vote in json.loads(row[5])] == [
            "dry-run:a",
            "dry-run:b",
            "dry-run:c",
        ]
    # The scoring step says how the judge was paced: its concurrency and remaining budget.
    (scored,) = [
        event.event_specific_data.metadata
        for event in result.all_events
        if event.event_type_value == "STEP_OUTPUT" and ".score[" in (event.step_key or "")
    ]
    assert scored["judge/openai-compatible:own-judge/concurrency"].value >= 4
    assert 0 < scored["judge/openai-compatible:own-judge/remaining_requests"].value < 6000
    (materialisation,) = result.asset_materializations_for_node("support_agent__metric_scores")
    metadata = materialisation.metadata
    agreements = [row[4] for row in rows[2:]]
    mean = sum(agreements) / len(agreements)
    assert metadata["judge_agreement/helpfulness"].value == float(f"{mean:.4g}")  # as shown
    assert "judge_agreement/bias" not in metadata
    # no judge here has a price: no cost at all (the report's "—"), not a cost of 0
    assert {name for name in metadata if name.startswith("cost_usd")} == set()
