"""A benchmark with a redTeam section: its three assets join the group and its job, with their
checks per version, the report reads them, and loading the definitions starts nothing."""

import dagster as dg

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from tests.red_team.test_red_team_run import write


def test_the_red_team_assets_join_the_benchmark_s_group_job_and_report(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "results.duckdb"))
    # A closed port: loading the definitions must not call the webhook (nor any judge).
    path = write(tmp_path, "http://127.0.0.1:9/webhook/agent", "Help customers.", 0.0)
    defs = build_definitions([path])
    graph = defs.resolve_asset_graph()
    red_team = {
        key.path[1] for key in graph.get_all_asset_keys() if key.path[1].startswith("red_team")
    }
    assert red_team == {"red_team_attacks", "red_team_results", "red_team_summary"}
    job = defs.resolve_job_def("red_team_webhook__benchmark")
    assert {f"red_team_webhook/{name}" for name in red_team} <= {
        key.to_user_string() for key in job.asset_layer.executable_asset_keys
    }
    rescore = defs.resolve_job_def("red_team_webhook__rescore")
    assert not any(  # an older version's attacks cannot be played again
        key.path[1].startswith("red_team") for key in rescore.asset_layer.executable_asset_keys
    )
    checks = {
        key.name for key in graph.asset_check_keys if key.asset_key.path[1] == "red_team_summary"
    }
    assert checks == {"no_new_breach", "breaches_within_fail_on"}
    summary = graph.get(dg.AssetKey(["red_team_webhook", "red_team_summary"]))
    assert isinstance(summary.partitions_def, dg.DynamicPartitionsDefinition)
    report = graph.get(dg.AssetKey(["red_team_webhook", "benchmark_report"]))
    assert {key.path[1] for key in report.parent_keys} >= {"red_team_results", "red_team_summary"}
