"""From labels to the gate on the example, through the commands a user types.

The judge is the loopback judge (deterministic: the same request, the same answer). Runs
pass when agent_loop_detection (no judge) and helpfulness pass, so helpfulness alone
decides them. The edited workflow (workflow.v2.json, recorded) loses every helpfulness
verdict of ord-missing and returns-policy: likely regressions, but ones only an
uncalibrated judge sees.
"""

import csv
import json

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.calibration.review_queue import MetricLabel
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import loopback_judge_environment

pytestmark = pytest.mark.slow


@pytest.fixture
def judged_home(tmp_path, monkeypatch):
    judge = LoopbackJudge(latency_s=0.0).start()
    home = tmp_path / "home"
    for name, value in loopback_judge_environment(home, f"{judge.base_url}/v1").items():
        monkeypatch.setenv(name, value)
    yield home
    judge.stop()


def edit(path, **changes):
    document = yaml.safe_load(path.read_text())
    document.update(changes)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def invoke(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def test_a_metric_the_benchmark_lacks_is_refused_naming_the_option(
    judged_home, example_copy, tmp_path
):
    refused = invoke(
        "labels", "export", example_copy, "--out", tmp_path / "x.csv", "--metric", "tone"
    )
    assert refused.exit_code == 1
    assert "Error: --metric 'tone' is not one of the benchmark's metrics (tool_correctness," in (
        refused.output
    )


def test_an_uncalibrated_judge_decides_no_run_and_flags_no_regression(
    judged_home, example_copy, tmp_path
):
    edit(
        example_copy,
        aggregate={"passRule": "allPass", "metrics": ["agent_loop_detection", "helpfulness"]},
        calibration={"minKappa": 0.6, "minLabels": 20, "gate": False},
    )
    first = invoke("run", example_copy)
    assert first.exit_code == 0, first.output

    # People label the first version's helpfulness offline: every answer passes for them.
    sheet = tmp_path / "labels.csv"
    exported = invoke("labels", "export", example_copy, "--out", sheet, "--blind",
                      "--metric", "helpfulness")  # fmt: skip
    assert exported.exit_code == 0, exported.output
    assert "27 rows to label (27 runs of f7ee35b359b4)" in exported.output
    rows = list(csv.DictReader(sheet.open()))
    assert "judge_score" not in rows[0]
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**row, "label": "pass", "reviewer": "ann"} for row in rows)
    imported = invoke("labels", "import", example_copy, sheet)
    assert imported.output.strip() == f"imported 27 labels by ann from {sheet}"

    measured = invoke("calibration", example_copy, "--json")
    calibration = json.loads(measured.stdout)
    (helpfulness,) = [m for m in calibration["standings"] if m["metric"] == "helpfulness"]
    assert helpfulness["state"] == "uncalibrated" and not helpfulness["gated"]
    assert helpfulness["why"].startswith("every label says pass")

    # The edited version, gate off: helpfulness flags ord-missing and returns-policy (each
    # 3/3 → 0/3).
    edit(example_copy, workflow="workflow.v2.json")
    regressed = invoke("run", example_copy, "--json")
    assert regressed.exit_code == 5, regressed.output
    summary = json.loads(regressed.stdout)
    assert summary["outcome"]["gate"]["flagged_cases"] == ["ord-missing", "returns-policy"]
    assert next(m for m in summary["metrics"] if m["metric"] == "helpfulness")["decides"]

    # Gate on: the same version run again; helpfulness decides nothing, nothing regressed.
    edit(example_copy, calibration={"minKappa": 0.6, "minLabels": 20, "gate": True})
    gated = invoke("run", example_copy, "--json")
    assert gated.exit_code == 0, gated.output
    summary = json.loads(gated.stdout)
    assert summary["outcome"]["gate"]["has_regression"] is False
    assert summary["pass_rate"] == 1.0  # agent_loop_detection alone decides: every run passes
    metric = next(m for m in summary["metrics"] if m["metric"] == "helpfulness")
    assert (metric["decides"], metric["calibration"]["state"], metric["calibration"]["gated"]) == (
        False, "uncalibrated", True)  # fmt: skip
    text = invoke("run", example_copy)
    assert (
        "CALIBRATION GATE: helpfulness decide no run and no regression (uncalibrated): the pass "
        "rate is decided by agent_loop_detection" in text.output
    )
    assert "helpfulness: every label says pass" in text.output
    compared = invoke("compare", example_copy)
    assert compared.exit_code == 0, compared.output  # the baseline decided without it too

    report = invoke("report", example_copy, "--out", tmp_path / "report")
    assert report.exit_code == 0, report.output
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'id="calibration"' in html and "uncalibrated: decides no run" in html
    review_page = settings.workspace_url("benchmarks", "support_agent", "review")
    assert f'on <a href="{review_page}">the review page</a>' in html  # helpfulness needs labels
    results = json.loads((tmp_path / "report" / "eval-results.json").read_text())
    # bias has no label at all, and aggregate.metrics leaves it out: no gate is needed
    assert [(s["metric"], s["state"], s["gated"]) for s in results["calibration"]["standings"]] == [
        ("helpfulness", "uncalibrated", True), ("bias", "too_few_labels", False)]  # fmt: skip
    decides = {m["metric"]: m["decides"] for m in results["metrics"]}
    assert (decides["helpfulness"], decides["agent_loop_detection"]) == (False, True)
    comment = (tmp_path / "report" / "eval-pr-comment.md").read_text()
    assert "Calibration gate" in comment and "helpfulness: every label says pass" in comment

    # Every label says pass: a threshold cannot be fitted from them, and the file is kept.
    before = example_copy.read_text()
    adopted = invoke("calibration", example_copy, "--adopt", "helpfulness")
    assert adopted.exit_code == 1 and example_copy.read_text() == before
    assert "0 labels of the rarer verdict: at least 10 of each are needed" in adopted.output


def test_review_prepares_a_queue_the_page_opens(judged_home, example_copy):
    from n8n_deepeval_pipeline import load_benchmark
    from n8n_deepeval_pipeline.calibration.review_queue import ReviewQueue, queue_path
    from n8n_deepeval_pipeline.orchestration.resources.human_labels import DuckDbLabelStore

    assert invoke("run", example_copy).exit_code == 0
    prepared = invoke("review", example_copy, "--sample", "6", "--reviewer", "ann", "--no-serve")
    assert prepared.exit_code == 0, prepared.output
    path = queue_path(judged_home, "support_agent", "ann")
    assert str(path) in prepared.output
    assert "review queue of support_agent f7ee35b359b4 for ann: " in prepared.output
    store = DuckDbLabelStore(load_benchmark(example_copy), judged_home / "results.duckdb")
    queue = ReviewQueue(path, store)
    assert sum(len(item.metrics) for item in queue.state.items) == 6
    first = queue.next()
    assert first.judge == () and first.input and first.output
    labels = {m.metric: MetricLabel(passed=True) for m in first.metrics}
    assert len(queue.label(first.run_id, labels).judge) == len(first.metrics)
    again = invoke("review", example_copy, "--sample", "100", "--reviewer", "ann", "--no-serve")
    pairs = 54 - len(first.metrics)  # 27 runs × 2 judged metrics, less those labelled
    assert f"{pairs} labels to give" in again.output
