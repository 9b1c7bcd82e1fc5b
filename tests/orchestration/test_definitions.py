import os

import dagster as dg
import pytest

from n8n_deepeval_pipeline.orchestration.assets import ASSET_NAMES
from n8n_deepeval_pipeline.orchestration.definitions import PRELOADED_MODULES, build_definitions
from tests.conftest import EXAMPLE


def test_definitions_pin_assets_jobs_schedules_sensors_and_resources(monkeypatch, tmp_path):
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "results.duckdb"))
    defs = build_definitions([EXAMPLE / "benchmark.yaml"])
    graph = defs.resolve_asset_graph()
    assert {key.to_user_string() for key in graph.get_all_asset_keys()} == {
        f"support_agent/{name}" for name in ASSET_NAMES
    }
    assert sorted(job.name for job in defs.jobs) == [
        "support_agent__benchmark",
        "support_agent__rescore",
    ]
    rescore = defs.resolve_job_def("support_agent__rescore")
    assert sorted(key.path[1] for key in rescore.asset_layer.executable_asset_keys) == [
        "benchmark_report",
        "consistency_stats",
        "metric_scores",
        "run_aggregates",
        "version_comparison",
        "workflow_checks",
    ]
    assert [s.name for s in defs.schedules] == ["support_agent__nightly"]
    assert [s.name for s in defs.sensors] == ["support_agent__workflow_changed"]
    assert set(defs.resources) == {
        "worker_pool",
        "judge",
        "score_journal",
        "n8n",
        "io_manager",
        "human_labels",  # people's labels, beside the results (no asset writes them)
        "step_io_manager",  # the scoring chunks' rows between steps
    }
    # local profile: steps in the run's process, or forked from a preloaded server
    job = defs.resolve_job_def("support_agent__benchmark")
    assert job.executor_def.name == "in_process"
    monkeypatch.setenv("N8N_DEEPEVAL_LOCAL_EXECUTOR", "multiprocess")
    forked = build_definitions([EXAMPLE / "benchmark.yaml"]).resolve_job_def(job.name)
    assert forked.executor_def.name == "local_forkserver"
    assert "n8n_deepeval_pipeline.orchestration.definitions" in PRELOADED_MODULES
    monkeypatch.setenv("N8N_DEEPEVAL_LOCAL_EXECUTOR", "threads")
    with pytest.raises(ValueError, match="choose in_process or multiprocess"):
        build_definitions([EXAMPLE / "benchmark.yaml"])
    partitions = graph.get(dg.AssetKey(["support_agent", "metric_scores"])).partitions_def
    assert isinstance(partitions, dg.DynamicPartitionsDefinition)
    assert partitions.name == "support_agent__workflow_hash"
    checks = {key.name for key in graph.asset_check_keys}
    assert checks == {
        "every_run_scored",
        "error_rate",
        "no_metric_errors",
        "no_regression",
        "version_passes",
        "workflow_checks_pass",
    }
    descriptions = {
        spec.key.name: spec.description
        for asset in defs.assets
        for spec in getattr(asset, "check_specs", [])
    }
    assert descriptions["error_rate"] == (
        "The scores are complete as `run` holds them (it exits 3 otherwise): at most 5% of "
        "the workflow calls failed, at most 5% of the scores have no judgement (judge or "
        "worker errors; checks.maxErrorRate, or `run --max-error-rate`), and the judge never "
        "stopped answering (unless `--max-error-rate` allows a share)."
    )
    assert all(descriptions.values()), descriptions  # none says "No description provided"


def test_module_loads_the_bundled_example_by_default(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("N8N_DEEPEVAL_BENCHMARKS", raising=False)
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "results.duckdb"))
    from n8n_deepeval_pipeline.orchestration.definitions import load_definitions

    defs = load_definitions()
    assert sorted(s.name for s in defs.sensors) == [
        "image_workflow__workflow_changed",
        "kitchen_sink_conversational__workflow_changed",
        "kitchen_sink_non_conversational__workflow_changed",
        "mcp_agent__workflow_changed",
        "support_agent__workflow_changed",
    ]


def test_two_benchmarks_with_one_name_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "results.duckdb"))
    with pytest.raises(ValueError, match="already used"):
        build_definitions([EXAMPLE / "benchmark.yaml", EXAMPLE / "benchmark.yaml"])


def _no_regression_spec(defs):
    graph = defs.resolve_asset_graph()
    key = dg.AssetCheckKey(dg.AssetKey(["support_agent", "version_comparison"]), "no_regression")
    return graph.get_check_spec(key)


def test_no_regression_is_a_verdict_by_default_and_blocks_only_when_asked(
    monkeypatch, tmp_path, example_copy
):
    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "results.duckdb"))
    default = _no_regression_spec(build_definitions([example_copy]))
    assert not default.blocking
    assert default.partitions_def.name == "support_agent__workflow_hash"  # a result per version
    text = example_copy.read_text()
    example_copy.write_text(text.replace("compare:\n", "compare:\n  blocking: true\n", 1))
    assert "blocking: true" in example_copy.read_text()
    assert _no_regression_spec(build_definitions([example_copy])).blocking


def test_the_benchmarks_variable_names_files_as_well_as_folders(
    tmp_path, monkeypatch, example_copy
):
    """What `n8n-deepeval ui FILE` hands Dagster: the files named, not the bundled example."""
    from n8n_deepeval_pipeline import settings

    other = tmp_path / "folder" / "benchmarks" / "x.benchmark.yaml"
    other.parent.mkdir(parents=True)
    other.write_text("name: x\n")
    monkeypatch.setenv(settings.BENCHMARKS_ENV, f"{example_copy}{os.pathsep}{tmp_path / 'folder'}")
    assert settings.discover_benchmark_files(settings.benchmark_paths()) == sorted(
        [example_copy.resolve(), other.resolve()]
    )


def test_the_judge_resource_takes_each_providers_settings_from_the_environment(monkeypatch):
    from n8n_deepeval_pipeline.orchestration.definitions import build_resources

    settings = {
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "bedrock",
        "N8N_DEEPEVAL_JUDGE_MODEL": "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "N8N_DEEPEVAL_JUDGE_REGION": "eu-west-1",
        "N8N_DEEPEVAL_JUDGE_DEPLOYMENT": "my-deployment",
        "N8N_DEEPEVAL_JUDGE_API_KEY": "aws-secret",
        "N8N_DEEPEVAL_JUDGE_AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "N8N_DEEPEVAL_JUDGE_AWS_SESSION_TOKEN": "aws-session",
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    judge = build_resources()["judge"]
    assert (judge.region, judge.deployment) == ("eu-west-1", "my-deployment")
    # keys by name only, resolved when a run starts (never in the definitions)
    assert judge.aws_access_key_id == dg.EnvVar("N8N_DEEPEVAL_JUDGE_AWS_ACCESS_KEY_ID")
    assert judge.aws_session_token == dg.EnvVar("N8N_DEEPEVAL_JUDGE_AWS_SESSION_TOKEN")
    assert judge.temperature is None  # what DeepEval's class sends by default


def test_a_blank_judge_variable_is_unset_as_the_registry_says(monkeypatch):
    from n8n_deepeval_pipeline.orchestration.definitions import build_resources

    for name in (
        "N8N_DEEPEVAL_JUDGE_PROVIDER",
        "N8N_DEEPEVAL_JUDGE_MODEL",
        "N8N_DEEPEVAL_JUDGE_STRUCTURED_OUTPUTS",
        "N8N_DEEPEVAL_JUDGE_API_KEY",
        "N8N_DEEPEVAL_JUDGE_AWS_ACCESS_KEY_ID",
    ):
        monkeypatch.setenv(name, "  " if name.endswith("MODEL") else "")
    judge = build_resources()["judge"]
    assert (judge.provider, judge.model) == ("dry-run", "dry-run")
    assert judge.structured_outputs == "strict"
    assert judge.api_key is None and judge.aws_access_key_id is None
    spec = judge.spec_for(None)
    assert (spec.provider, spec.model, spec.api_key) == ("dry-run", "dry-run", None)


def test_a_workflow_target_gets_an_optimize_job_launched_with_the_sections_choices(
    monkeypatch, tmp_path
):
    from n8n_deepeval_pipeline.benchmark.config import load_benchmark
    from n8n_deepeval_pipeline.orchestration.optimize_job import OptimizeRunConfig

    monkeypatch.setenv("N8N_DEEPEVAL_DUCKDB", str(tmp_path / "results.duckdb"))
    (tmp_path / "workflow.json").write_text(
        (EXAMPLE / "workflow.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "cases.csv").write_text("id,input\na,hi\nb,yo\nc,hey\n", encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(
        "name: agent\nworkflow: workflow.json\ndataset: {path: cases.csv}\n"
        "target: {type: n8n_workflow, startNodeName: AI Agent, endNodeName: AI Agent}\n"
        "metrics: [{metric: exact_match}]\n"
        "optimize: {gepa: {iterations: 2}, split: {seed: 5}, budget: {workflowCalls: 30}}\n",
        encoding="utf-8",
    )
    defs = build_definitions([EXAMPLE / "benchmark.yaml", tmp_path / "agent.yaml"])
    # A recorded target has no prompt to set: the example gets no such job.
    assert sorted(job.name for job in defs.jobs) == [
        "agent__benchmark", "agent__optimize", "agent__rescore",
        "support_agent__benchmark", "support_agent__rescore"]  # fmt: skip
    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert "agent/prompt_optimization" in keys
    job = defs.resolve_job_def("agent__optimize")
    (op,) = job.graph.node_defs
    fields = set(op.config_schema.config_type.fields)
    assert {"node", "parameter", "algorithm", "seed", "held_out", "workflow_calls",
            "judge_calls", "cost_usd", "adopt_when", "fresh", "adopt"} == fields  # fmt: skip
    assert set(op.required_resource_keys) == {"n8n", "judge", "worker_pool"}
    # A launch's choices go over the file's, field by field; the algorithm's options stay.
    launched = OptimizeRunConfig(seed=9, workflow_calls=12, node="AI Agent")
    chosen = launched.applied(load_benchmark(tmp_path / "agent.yaml")).optimize
    assert (chosen.split.seed, chosen.split.held_out) == (9, 0.3)
    assert (chosen.budget.workflow_calls, chosen.gepa.iterations, chosen.node) == (
        12,
        2,
        "AI Agent",
    )
