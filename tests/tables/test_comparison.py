"""Stored runs of a version, grouped by dataset row for the version comparison."""

from datetime import UTC, datetime

import pytest

from n8n_deepeval_pipeline.statistics.version_comparison import (
    RunOutcome,
    cases_failing_gate,
    compare_versions,
)
from n8n_deepeval_pipeline.tables.comparison import (
    UnknownVersionError,
    baseline_version,
    resolve_version,
    variant_bases,
    verdict_rows,
    version_runs,
)
from n8n_deepeval_pipeline.tables.rows import (
    ExpandedRun,
    MetricScore,
    RunAggregate,
    WorkflowSnapshot,
)

HASH = "a" * 64


def _run(row_id, index):
    return ExpandedRun(
        workflow_hash=HASH,
        run_id=f"{HASH}:{row_id}:{index}",
        case_id=f"{HASH}:{row_id}",
        run_index=index,
        row_id=row_id,
        run_name="demo",
    )


def _aggregate(run, passed):
    return RunAggregate(
        workflow_hash=HASH, run_id=run.run_id, case_id=run.case_id, overall_score=None,
        raw_mean_score=None, overall_success=passed, pass_rule="allPass", metrics_passed=0,
        metrics_counted=1, metric_errors=0, judge_calls=0, tokens=0, cost_usd=None, metrics=[],
    )  # fmt: skip


def _score(run, success, error_kind=None):
    return MetricScore(
        workflow_hash=HASH, run_id=run.run_id, case_id=run.case_id, metric="exact",
        metric_slug="exact_match", score=None if error_kind else float(success), threshold=0.5,
        success=success, direction="higher_is_better", reason=None, error=None,
        error_kind=error_kind, judge=None, dry_run=False, judge_calls=0, judge_retries=0,
        cached_calls=0, prompt_tokens=0, completion_tokens=0, tokens=0, cost_usd=None,
        latency_s=0.0,
    )  # fmt: skip


def test_runs_are_grouped_by_row_id_with_their_pass_and_metric_outcomes():
    runs = [_run("refund", 0), _run("refund", 1), _run("greeting", 0)]
    aggregates = [_aggregate(runs[0], True), _aggregate(runs[1], False), _aggregate(runs[2], True)]
    scores = [_score(runs[0], True), _score(runs[1], False, "timeout"), _score(runs[2], True)]
    grouped = version_runs(runs, aggregates, scores)
    assert sorted(grouped) == ["greeting", "refund"]
    assert [outcome.passed for outcome in grouped["refund"]] == [True, False]
    (failed_metric,) = grouped["refund"][1].metrics
    assert (failed_metric.metric, failed_metric.error_kind, failed_metric.score) == (
        "exact",
        "timeout",
        None,
    )


def test_versions_are_named_by_prefix_and_the_baseline_is_the_one_before():
    known = ["aaa1111" + "0" * 57, "bbb2222" + "0" * 57, "bbb3333" + "0" * 57]
    assert resolve_version(known, "aaa1") == known[0]
    with pytest.raises(UnknownVersionError, match="2 versions starts with 'bbb'"):
        resolve_version(known, "bbb")
    with pytest.raises(UnknownVersionError, match="no known version starts with 'ccc'"):
        resolve_version(known, "ccc")
    assert baseline_version(known, known[2], None) == known[1]
    assert baseline_version(known, known[0], None) is None
    assert baseline_version(known, known[2], "aaa") == known[0]  # pinned in the benchmark


def test_a_variant_is_compared_with_its_base_and_is_never_a_baseline_itself():
    # v1, then v2 with its variants fast and terse, then v3 (an edit of v2)
    v1, v2, fast, terse, v3 = ("1" * 12, "2" * 12, "f" * 12, "e" * 12, "3" * 12)
    known = [v1, v2, fast, terse, v3]
    bases = {fast: v2, terse: v2}
    assert baseline_version(known, v3, None, bases) == v2  # not terse, registered just before
    assert baseline_version(known, fast, None, bases) == v2
    assert baseline_version(known, terse, "111", bases) == v2  # a pinned baseline is for edits
    assert baseline_version(known, v2, None, bases) == v1
    assert baseline_version([fast, v3], fast, None, bases) is None  # its base never ran
    with pytest.raises(UnknownVersionError, match="no known version starts with 'fff'"):
        baseline_version(known, v3, "fff", bases)  # a variant cannot be pinned as baseline


def test_snapshots_say_which_versions_are_variants_and_of_what():
    def snapshot(digest, base=None, variant=None):
        return WorkflowSnapshot(
            workflow_hash=digest, workflow_id=None, name="w", node_count=1, source="file",
            fetched_at=datetime.now(UTC), canonical_json="{}", variant=variant, base_hash=base,
        )  # fmt: skip

    base, fast = "a" * 64, "b" * 64
    bases = variant_bases([snapshot(base), snapshot(fast, base=base, variant="fast")])
    assert bases == {"b" * 12: "a" * 12}


def test_a_gate_flags_its_verdict_and_surer_ones_only():
    comparison = compare_versions(
        {"a": [RunOutcome(passed=True)] * 3, "b": [RunOutcome(passed=True)] * 10},
        {"a": [RunOutcome(passed=False)] * 3, "b": [RunOutcome(passed=False)] * 10},
    )
    assert {case.row_id: case.verdict for case in comparison.cases} == {
        "a": "likely_regression",
        "b": "regression",
    }
    assert cases_failing_gate(comparison, "regression") == ["b"]
    assert cases_failing_gate(comparison, "likely_regression") == ["a", "b"]
    (row_a, _) = verdict_rows(comparison, "base", "cand")
    assert (row_a.workflow_hash, row_a.baseline_hash, row_a.row_id, row_a.verdict) == (
        "cand",
        "base",
        "a",
        "likely_regression",
    )
    assert (row_a.baseline_passed, row_a.candidate_passed, row_a.delta) == (3, 0, -1.0)
