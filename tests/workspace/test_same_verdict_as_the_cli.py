"""On a store made by real runs, the workspace says what the CLI says: `compare --json`'s outcome
for every version, the pass rates `run` printed, and the report links back to the page."""

from __future__ import annotations

import json

import pytest

from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.store import StoreSource, reading
from n8n_deepeval_pipeline.workspace.verdict import version_verdicts
from n8n_deepeval_pipeline.workspace.versions import baselines, scored_versions
from tests.workspace.conftest import cli

pytestmark = pytest.mark.slow


def test_every_versions_gate_is_compare_s(example_runs):
    settings = BenchmarkFiles([example_runs.benchmark]).settings_of("support_agent")
    assert settings.fail_on == "likely_regression"  # read from the example's file
    with reading(StoreSource("duckdb", str(example_runs.database))) as reader:
        versions = scored_versions(reader, "support_agent")
        found = baselines(reader, "support_agent", versions, settings)
        verdicts = version_verdicts(reader, "support_agent", settings, versions, found)
    assert [v.key for v in versions] == [example_runs.first, example_runs.second]
    compared = cli(example_runs.home, "compare", str(example_runs.benchmark), "--json")
    assert compared.returncode == 1  # the second version fails compare.failOn
    said = json.loads(compared.stdout)
    assert said["baseline"] == example_runs.first == found[example_runs.second]
    # the workspace's outcome is compare's, field for field (the verdict, both exit codes)
    assert verdicts[example_runs.second].outcome.model_dump(mode="json") == said["outcome"]
    assert said["outcome"]["gate"]["flagged_cases"] == ["ord-missing", "returns-policy"]
    cases = {case["row_id"]: case["verdict"] for case in said["result"]["cases"]}
    comparison = verdicts[example_runs.second].comparison
    assert comparison is not None
    assert {case.row_id: case.verdict for case in comparison.cases} == cases
    first = verdicts[example_runs.first].outcome
    assert (first.gate.baseline, first.gate.has_regression) == (None, False)
    assert first.exit_codes.compare == 2
    assert [round(v.pass_rate.rate or 0, 4) for v in versions] == [0.8889, 0.5185]


def test_the_report_is_stamped_lists_failed_checks_and_links_to_the_version(example_runs, tmp_path):
    out = tmp_path / "report"
    written = cli(example_runs.home, "report", str(example_runs.benchmark), "--out", str(out))
    assert written.returncode == 0, written.stderr[-2000:]
    html = (out / "report.html").read_text("utf-8")
    page = f"/benchmarks/support_agent/versions/{example_runs.second}"
    assert f'<a class="workspace" href="http://127.0.0.1:3001{page}">' in html
    assert "report written <time datetime=" in html and "run <time datetime=" in html
    assert (
        'workflow checks: 7 pass · 1 fail: <span class="error">✗ '
        "security/inbound_triggers_authenticated</span> webhook without inbound authentication"
    ) in html
    results = json.loads((out / "eval-results.json").read_text("utf-8"))
    assert results["workspace_url"] == f"http://127.0.0.1:3001{page}"
    assert [c["check_id"] for c in results["workflow_checks"] if c["status"] == "fail"] == [
        "inbound_triggers_authenticated"
    ]
    assert results["written_at"] > results["ran_at"]
