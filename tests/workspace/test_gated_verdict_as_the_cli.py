"""With calibration.gate on, the workspace decides each version as `compare` does now.

A real store made by the commands a user types, judged by the loopback judge (the same
request, the same answer). Runs pass when agent_loop_detection (no judge) and helpfulness
pass. The first version runs before anyone labelled: helpfulness decides none of its runs.
Ann then labels its helpfulness as the judge did (calibrated), and the edited workflow
(workflow.v2.json) runs with helpfulness deciding: it loses ord-missing and returns-policy.
Bob labels that version's helpfulness against the judge: helpfulness is uncalibrated again,
and `compare` decides both versions without it (no regression), though the second
version's stored run verdicts were decided with it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from starlette.requests import Request
from starlette.testclient import TestClient

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.workspace import create_app
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.page_request import PageRequest
from n8n_deepeval_pipeline.workspace.store import StoreSource, reading
from n8n_deepeval_pipeline.workspace.verdict import version_verdicts
from tests.conftest import loopback_judge_environment
from tests.workspace.conftest import cli

pytestmark = pytest.mark.slow

BENCHMARK = "support_agent"


@pytest.fixture
def judged(tmp_path, monkeypatch):
    judge = LoopbackJudge(latency_s=0.0).start()
    for name, value in loopback_judge_environment(tmp_path, f"{judge.base_url}/v1").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("N8N_DEEPEVAL_WORKSPACE_URL", raising=False)
    yield
    judge.stop()


def edit(path: Path, **changes: object) -> None:
    document = yaml.safe_load(path.read_text())
    document.update(changes)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def label(home: Path, benchmark: Path, sheet: Path, reviewer: str, agree: bool) -> None:
    """The current version's helpfulness labelled by ``reviewer``, as the judge said or not."""
    exported = cli(home, "labels", "export", str(benchmark), "--out", str(sheet),
                   "--metric", "helpfulness")  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-2000:]
    rows = list(csv.DictReader(sheet.open()))
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            said = (row["judge_passed"] == "True") == agree
            writer.writerow({**row, "label": "pass" if said else "fail", "reviewer": reviewer})
    imported = cli(home, "labels", "import", str(benchmark), str(sheet))
    assert imported.returncode == 0, imported.stderr[-2000:]


def helpfulness(home: Path, benchmark: Path) -> tuple[str, bool]:
    measured = cli(home, "calibration", str(benchmark), "--json")
    standings = json.loads(measured.stdout)["standings"]
    found = next(s for s in standings if s["metric"] == "helpfulness")
    return found["state"], found["gated"]


def page_request(source: StoreSource, files: BenchmarkFiles, reader) -> PageRequest:
    """What a page of the benchmark is handed, as the app builds it for a request."""
    scope = {
        "type": "http",
        "method": "GET",
        "path": f"/benchmarks/{BENCHMARK}",
        "path_params": {"benchmark": BENCHMARK},
        "query_string": b"",
        "headers": [],
    }
    return PageRequest(Request(scope), reader, files, source)


def test_labels_given_after_the_runs_decide_the_workspace_s_verdict_as_compare_s(
    judged, example_copy, tmp_path
):
    home = tmp_path
    edit(
        example_copy,
        aggregate={"passRule": "allPass", "metrics": ["agent_loop_detection", "helpfulness"]},
        calibration={"minKappa": 0.6, "minLabels": 20, "gate": True},
    )
    first = cli(home, "run", str(example_copy), "--json")
    assert first.returncode == 0, first.stderr[-2000:]
    label(home, example_copy, tmp_path / "ann.csv", "ann", agree=True)
    assert helpfulness(home, example_copy) == ("calibrated", False)

    edit(example_copy, workflow="workflow.v2.json")
    second = cli(home, "run", str(example_copy), "--json")
    assert second.returncode == 5, second.stderr[-2000:]  # helpfulness decided: it regressed
    ran = json.loads(second.stdout)["outcome"]
    # The first version's runs were decided without helpfulness (then too few labels), so
    # every case whose helpfulness fails three times in three is flagged.
    assert ran["gate"]["flagged_cases"] == [
        "ord-missing", "ord-status-2", "ord-total", "refund", "returns-policy"]  # fmt: skip
    assert round(ran["pass_rate"], 4) == 0.2593  # 7 of 27 runs
    keys = [json.loads(done.stdout)["workflow_hash"][:12] for done in (first, second)]

    label(home, example_copy, tmp_path / "bob.csv", "bob", agree=False)
    assert helpfulness(home, example_copy) == ("uncalibrated", True)
    compared = cli(home, "compare", str(example_copy), "--json")
    assert compared.returncode == 0, compared.stdout + compared.stderr[-2000:]
    said = json.loads(compared.stdout)
    assert said["outcome"]["gate"]["has_regression"] is False
    assert said["outcome"]["pass_rate"] == ran["pass_rate"]  # compare re-decides no pass rate

    source, files = (
        StoreSource("duckdb", str(home / "results.duckdb")),
        BenchmarkFiles([example_copy]),
    )
    with reading(source) as reader:
        page = page_request(source, files, reader)
        assert [version.key for version in page.versions] == keys
        verdicts = page.verdicts(keys)
        # What the stored run verdicts alone say: the regression compare no longer sees.
        stored = version_verdicts(reader, BENCHMARK, page.benchmark, page.versions, page.baselines)
    assert stored[keys[1]].outcome.model_dump(mode="json") == ran
    assert stored[keys[1]].outcome.model_dump(mode="json") != said["outcome"]
    # The workspace's outcome is compare's, field for field.
    assert verdicts[keys[1]].outcome.model_dump(mode="json") == said["outcome"]
    cases = {case["row_id"]: case["verdict"] for case in said["result"]["cases"]}
    comparison = verdicts[keys[1]].comparison
    assert comparison is not None
    assert {case.row_id: case.verdict for case in comparison.cases} == cases

    # The pages say it: the version passes the gate, on its page, the home page and compare.
    client = TestClient(create_app(source, files))
    version_page = client.get(f"/benchmarks/{BENCHMARK}/versions/{keys[1]}").text
    assert "passes the gate" in version_page and "regressed" not in version_page
    home_page = client.get("/").text
    assert "passes the gate" in home_page and "regressed" not in home_page
    compare_page = client.get(f"/benchmarks/{BENCHMARK}/compare").text
    assert '<div class="banner good">No case is likely regression or worse.</div>' in compare_page
