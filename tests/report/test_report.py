"""The report of a version against its baseline: the figures, verdicts and text a reader sees.

The sample (tests/report/sample.py) has six cases of four runs; the candidate passes 15 of
its 24 runs and ``refund`` falls from 4/4 to 0/4.
"""

import json
import math
import re

import pytest
from markupsafe import escape

from n8n_deepeval_pipeline.report import (
    build_report,
    pr_comment,
    render_html,
    results_json,
    write_report,
)
from n8n_deepeval_pipeline.report.banners import outcome_banners
from n8n_deepeval_pipeline.report.build import Baseline, score_bins
from n8n_deepeval_pipeline.report.cases import OUTPUT_LIMIT, VersionRows
from n8n_deepeval_pipeline.report.formatting import p_value, points, signed_figure
from n8n_deepeval_pipeline.report.model import ComparisonReport, DropCause, Excerpt
from n8n_deepeval_pipeline.report.verdicts import GUIDANCE
from n8n_deepeval_pipeline.statistics.version_comparison import (
    RunOutcome,
    cases_failing_gate,
    compare_versions,
)
from n8n_deepeval_pipeline.summary.gate import version_gate
from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome
from n8n_deepeval_pipeline.summary.run_summary import summarise
from n8n_deepeval_pipeline.tables.comparison import version_runs
from tests.conftest import wilson_by_hand
from tests.report.sample import (
    BAD_ANSWERS,
    BASELINE,
    CANDIDATE,
    GOOD_ANSWERS,
    sample_report,
    version,
)


@pytest.fixture(scope="module")
def report():
    return sample_report()


@pytest.fixture(scope="module")
def html(report):
    return render_html(report)


# --- eval-results.json ---------------------------------------------------------------------


def test_results_json_headline(report):
    headline = results_json(report)["headline"]
    rate = headline["pass_rate"]
    assert (rate["passed"], rate["runs"], rate["rate"]) == (15, 24, 0.625)
    lower, upper = wilson_by_hand(15, 24)
    assert rate["interval"] == {
        "lower": pytest.approx(lower, abs=1e-5),
        "upper": pytest.approx(upper, abs=1e-5),
    }
    # Passes per case 0, 1, 4, 3, 4, 3 of 4: five cases pass at least once, two every time.
    assert headline["pass_at_k"]["4"] == pytest.approx(5 / 6)
    assert headline["pass_hat_k"]["4"] == pytest.approx(2 / 6)
    # Two judged metrics × 24 runs × 2 calls, less the 3 results that errored before judging.
    assert headline["judge_calls"] == 90
    assert headline["tokens"] == 90 * 460
    assert headline["cost_usd"] == pytest.approx(90 * 0.00021)
    assert headline["judge_label"] == "openai:gpt-4.1-mini"
    assert headline["dry_run_judge"] is False
    assert headline["errors_by_kind"] == {"target_error": 3, "timeout": 1}
    assert (headline["score_errors"], headline["unjudged_scores"]) == (4, 1)
    assert headline["output_errors"] == 1


def test_results_json_has_the_regression_row_and_counts(report):
    comparison = results_json(report)["comparison"]
    assert comparison["baseline_hash"] == BASELINE
    result = comparison["result"]
    refund = next(case for case in result["cases"] if case["row_id"] == "refund")
    assert refund["baseline"] == {"passed": 4, "runs": 4, "rate": 1.0}
    assert refund["candidate"] == {"passed": 0, "runs": 4, "rate": 0.0}
    assert refund["delta"] == -1.0
    assert refund["p_value_drop"] == pytest.approx(1 / math.comb(8, 4))
    assert refund["verdict"] == "regression"
    assert results_json(report)["outcome"]["gate"]["has_regression"] is True
    assert {verdict: n for verdict, n in result["verdict_counts"].items() if n} == {
        "regression": 1,
        "likely_regression": 1,
        "improvement": 1,
        "worth_watching": 1,
        "stable": 2,
    }


def test_results_json_is_plain_json_and_null_without_baseline():
    alone = results_json(sample_report(with_baseline=False))
    assert json.loads(json.dumps(alone)) == alone
    assert alone["comparison"] is None
    assert alone["workflow_hash"] == CANDIDATE
    assert all(case["verdict"] is None for case in alone["cases"])


# --- per-metric table and drill-down ------------------------------------------------------


def test_metric_rows_in_benchmark_order_with_pass_rate_errors_and_direction(report):
    rows = {row.metric: row for row in report.metrics}
    assert list(rows) == ["exact_answer", "helpfulness", "bias"]
    helpfulness = rows["helpfulness"]
    # Fails: billing 3 (low score), shipping 1 (timeout), address 1 (no output).
    assert helpfulness.pass_rate == pytest.approx(19 / 24)
    assert (helpfulness.errors, helpfulness.unscored, sum(helpfulness.score_bins)) == (2, 2, 22)
    assert (helpfulness.direction, helpfulness.threshold) == ("higher_is_better", 0.7)
    assert rows["bias"].direction == "lower_is_better"


def test_scores_fall_in_tenths_with_one_in_the_last():
    assert score_bins([0.0, 0.05, 0.5, 0.99, 1.0]) == (2, 0, 0, 0, 0, 1, 0, 0, 0, 2)


def test_cases_needing_attention_come_first(report):
    order = [case.row_id for case in report.cases]
    # Flagged by seriousness, then the stable ones, the one passing less often first.
    assert order == ["refund", "billing", "order_status", "address", "shipping", "greeting"]
    refund = report.cases[0]
    assert (refund.verdict, refund.passed, len(refund.runs)) == ("regression", 0, 4)
    assert refund.input.text == "I was charged twice for order 1182. Can I get my money back?"


def test_each_failed_run_says_why(report):
    cases = {case.row_id: case for case in report.cases}
    refund_run = cases["refund"].runs[0]
    assert refund_run.failure_categories == ("below_threshold",)
    exact = next(metric for metric in refund_run.metrics if metric.metric == "exact_answer")
    assert (exact.score, exact.success, exact.reason.text) == (
        0.0,
        False,
        "exact_answer scored 0.00 against 0.5.",
    )
    no_output = cases["address"].runs[3]
    assert no_output.failure_categories == ("target_error",)
    assert no_output.output is None
    assert no_output.output_error.text == "webhook answered HTTP 502 Bad Gateway"
    timed_out = cases["shipping"].runs[3]
    assert timed_out.failure_categories == ("timeout",)
    assert cases["greeting"].runs[0].failure_categories == ()


def test_a_long_output_is_cut_on_a_word_and_keeps_its_length(report, html):
    billing = next(case for case in report.cases if case.row_id == "billing")
    output = billing.runs[1].output
    whole = BAD_ANSWERS["billing"]
    assert output.truncated
    assert output.chars == len(whole)
    assert len(output.text) <= OUTPUT_LIMIT
    assert whole.startswith(output.text)
    assert whole[len(output.text)] == " "  # it ends where a word ends
    assert f"({len(whole):,} characters in all)" in html


def test_an_excerpt_of_a_short_text_is_the_text():
    assert Excerpt.of("short answer", 100) == Excerpt(
        text="short answer", chars=12, truncated=False
    )
    assert Excerpt.of("x" * 30, 10).text == "x" * 10  # no space to cut at: cut at the limit


# --- eval-pr-comment.md ------------------------------------------------------------------


def test_pr_comment_headline(report):
    comment = pr_comment(report)
    assert comment.startswith(f"### Benchmark support\\_agent · `{CANDIDATE[:12]}`\n")
    assert (
        f"> [!CAUTION]\n> **Against baseline `{BASELINE[:12]}`:** Regression: refund passes "
        "significantly less often than in the baseline. The gate fails on 1 case: this "
        "benchmark fails on regression (compare.failOn), so compare exits 1 and run exits 5."
    ) in comment
    assert (
        "**Pass rate 62.5%** over every case (15/24 runs, 95% CI 42.7–78.8%, allPass) · "
        "mean overall score 0.850" in comment
    )
    assert "pass@4 0.833 · pass^4 0.333" in comment
    assert "90 calls · 41,400 tokens · cost $0.0189 · 4 errors" in comment


def test_pr_comment_lists_only_flagged_cases_the_most_serious_first(report):
    comment = pr_comment(report)
    flagged = comment.split("#### Flagged cases")[1].split("Verdicts:")[0]
    rows = [line for line in flagged.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == [
        "| case | baseline | candidate | change | p | verdict | why it dropped |",
        "| refund | 4/4 | 0/4 | −100.0 pts | 0.014 | 🔴 regression "
        "| exact\\_answer fails 4/4 (was 0/4); below\\_threshold 4/4 (was 0/4) |",
        "| billing | 4/4 | 1/4 | −75.0 pts | 0.071 | 🟠 likely_regression "
        "| helpfulness fails 3/4 (was 0/4); below\\_threshold 3/4 (was 0/4) |",
        "| order\\_status | 0/4 | 4/4 | +100.0 pts | 0.014 | 🟢 improvement |  |",
        "| address | 1/4 | 3/4 | +50.0 pts | 0.243 | 🟡 worth_watching |  |",
    ]
    assert "Verdicts: 1 regression · 1 likely_regression · 1 improvement" in comment


def test_pr_comment_metric_deltas(report):
    comment = pr_comment(report)
    # helpfulness: 23/24 passes in the baseline (one timeout), 19/24 in the candidate.
    assert "| helpfulness | 0.765 | −0.054 | 79.2% | −16.7 pts |" in comment
    assert "| baseline | 66.7% | 46.7–82.0% | 16/24 |" in comment
    assert "| candidate | 62.5% | 42.7–78.8% | 15/24 |" in comment


def test_pr_comment_without_baseline_shows_the_metric_table():
    comment = pr_comment(sample_report(with_baseline=False))
    assert "No baseline to compare with" in comment
    assert "Flagged cases" not in comment
    assert "| helpfulness | 0.765 | 79.2% | 2 |" in comment


def test_numbers_are_written_with_a_real_minus_and_no_sign_on_zero():
    assert points(-1.0) == "−100.0 pts"
    assert points(0.0) == "0.0 pts"
    assert signed_figure(0.12) == "+0.120"
    assert p_value(0.0004) == "<0.001"


# --- report.html -------------------------------------------------------------------------


def test_html_headline_numbers_as_shown(html):
    assert '<div class="value">62.5%</div>' in html
    assert "95% CI 42.7–78.8% · 15 of 24 runs pass (allPass)" in html
    assert '<div class="value">0.850</div>' in html  # mean overall score
    assert '<div class="label">pass@4</div>\n    <div class="value">0.833</div>' in html
    assert '<div class="value">$0.0189</div>' in html
    assert "41,400 tokens · 90 judge calls" in html
    assert "Regression: refund passes significantly less often than in the baseline." in html


def test_html_verdict_badges_and_charts(html):
    for verdict, text in [
        ("regression", "regression"),
        ("likely_regression", "likely regression"),
        ("improvement", "improvement"),
        ("worth_watching", "worth watching"),
        ("stable", "stable"),
    ]:
        assert f'<span class="badge {verdict}">{text}</span>' in html
    assert html.count('<svg class="chart"') == 1 + 3  # the intervals; a histogram per metric
    # each metric's pass rate as a bar in its row, the baseline's as a tick across it
    assert html.count('<svg class="strip"') == 3
    assert 'aria-label="79.2%, baseline 95.8%"' in html  # helpfulness: 19/24 against 23/24


def test_html_is_self_contained(html):
    for forbidden in ("http://", "https://", "<script", "<link", "<img", "@import", "url("):
        assert forbidden not in html


def test_html_escapes_user_text(report, html):
    assert "Standard shipping takes &lt;b&gt;2 days&lt;/b&gt; within the country." in html
    assert "<b>2 days</b>" not in html
    hostile = report.model_copy(update={"benchmark": "<script>alert(1)</script>"})
    assert "<script" not in render_html(hostile)
    assert "\\<script\\>alert(1)\\</script\\>" in pr_comment(hostile)


def test_write_report_writes_the_three_files(report, tmp_path):
    paths = write_report(report, tmp_path / "out")
    assert sorted(paths) == ["eval-pr-comment.md", "eval-results.json", "report.html"]
    assert json.loads(paths["eval-results.json"].read_text("utf-8")) == results_json(report)
    assert paths["eval-pr-comment.md"].read_text("utf-8") == pr_comment(report)
    assert paths["report.html"].read_text("utf-8") == render_html(report)


def test_a_version_without_scored_runs_still_gets_a_report():
    summary = summarise("empty", CANDIDATE, [], [], [], [])
    report = build_report(
        summary, VersionRows([], [], [], []), fail_on="regression", limits=Limits.of(0.05)
    )
    assert results_json(report)["headline"]["pass_rate"] == {
        "passed": 0,
        "runs": 0,
        "rate": None,
        "interval": None,
    }
    assert '<div class="value">—</div>' in render_html(report)
    assert "(0/0 runs, 95% CI —" in pr_comment(report)


# --- the gate, the causes of each drop and the two versions side by side ------------------


def _gate_report(fail_on):
    """One case, 3/3 → 0/3: Fisher's p is 0.05 exactly, a likely regression at most."""
    comparison = compare_versions(
        {"ord-missing": [RunOutcome(passed=True)] * 3},
        {"ord-missing": [RunOutcome(passed=False)] * 3},
    )
    return ComparisonReport(baseline_hash=BASELINE, result=comparison, fail_on=fail_on)


def _status(fail_on):
    compared = _gate_report(fail_on)
    flagged = cases_failing_gate(compared.result, fail_on)
    outcome = VersionOutcome(
        benchmark="b",
        workflow_hash=CANDIDATE,
        runs=3,
        pass_rate=0.0,
        gate=version_gate(fail_on, BASELINE, flagged),
        limits=Limits.of(0.05),
    )
    (banner,) = outcome_banners(outcome, compared)
    return banner


def test_a_likely_regression_fails_a_gate_on_likely_regression_and_the_status_says_so():
    status = _status("likely_regression")
    assert status.level == "bad"
    assert status.text == (
        "Likely regression: ord-missing passes less often than in the baseline, by more than "
        "repeated runs usually explain. The gate fails on 1 case: this benchmark fails on "
        "likely_regression (compare.failOn), so compare exits 1 and run exits 5."
    )
    below = _status("regression")
    assert below.level == "warn"
    assert below.text == (
        "The gate passes: no case fails on regression (compare.failOn). "
        "1 likely regression below it to look at: ord-missing."
    )


def test_banner_and_pr_comment_speak_the_benchmarks_gate():
    gated = sample_report(fail_on="likely_regression")
    assert [case.row_id for case in gated.comparison.gate_failures] == ["refund", "billing"]
    html, comment = render_html(gated), pr_comment(gated)
    expected = (
        "Regression: refund passes significantly less often than in the baseline. "
        "Likely regression: billing passes less often than in the baseline, by more than "
        "repeated runs usually explain. The gate fails on 2 cases: this benchmark fails on "
        "likely_regression (compare.failOn), so compare exits 1 and run exits 5."
    )
    assert f'<div class="banner bad">{expected}</div>' in html
    assert f"> [!CAUTION]\n> **Against baseline `{BASELINE[:12]}`:** {expected}" in comment
    assert "No regression" not in html + comment
    # The chip marks the verdicts that fail this benchmark's gate, and only those.
    assert html.count('<span class="chip gate">fails the gate</span>') == 2
    assert render_html(sample_report()).count("fails the gate</span>") == 1


def test_errors_that_fail_no_run_are_named_on_the_errors_card_and_under_why_runs_failed():
    report = sample_report(reported_only=True)
    headline = report.headline
    # 24 missing_input results of a reported-only metric; the target_error and timeout
    # results each failed their run, so "Why runs failed" counts them.
    assert headline.errors_by_kind == {"missing_input": 24, "target_error": 3, "timeout": 1}
    assert headline.errors_failing_no_run == {"missing_input": 24}
    drift = {d.category: d for d in report.comparison.result.failure_drift}
    assert drift["missing_input"].candidate_count == 0
    assert drift["target_error"].candidate_count == 1  # the address run without output
    html = render_html(report)
    assert (
        "metric results; failing no run: missing_input 24 "
        "(reported-only metrics or runs that passed anyway)" in html
    )
    assert (
        "The candidate's errored results that failed no run are not here: "
        "missing_input 24 (the Errors card counts them)." in html
    )
    assert "failing no run" not in render_html(sample_report())


def test_each_dropped_case_says_which_metric_and_category_made_it_drop(report, html):
    cases = report.case_by_id
    assert cases["refund"].causes == (
        DropCause(kind="metric", name="exact_answer", baseline_failed=0, baseline_runs=4,
                  candidate_failed=4, candidate_runs=4),
        DropCause(kind="category", name="below_threshold", baseline_failed=0, baseline_runs=4,
                  candidate_failed=4, candidate_runs=4),
    )  # fmt: skip
    assert [(c.name, c.candidate_failed) for c in cases["billing"].causes] == [
        ("helpfulness", 3),
        ("below_threshold", 3),
    ]
    assert cases["address"].causes == ()  # it rose
    assert cases["shipping"].causes == ()  # 3/4 in both
    refund_row = html.split('<a href="#case-refund">refund</a>')[1].split("</tr>")[0]
    assert '<span class="cause">exact_answer fails 4/4 (was 0/4)</span>' in refund_row
    assert '<span class="chip">below_threshold 4/4 (was 0/4)</span>' in refund_row


def _case_html(html, row_id):
    return html.split(f'id="case-{row_id}"')[1].split('<details class="case"')[0]


def test_a_flagged_case_sets_the_baseline_runs_beside_the_candidates(report, html):
    refund = report.case_by_id["refund"]
    assert (refund.baseline_passed, len(refund.baseline_runs), refund.passed) == (4, 4, 0)
    assert refund.baseline_runs[0].output.text == GOOD_ANSWERS["refund"]
    section = _case_html(html, "refund")
    baseline, candidate = section.split('<div class="side candidate">')
    candidate, results = candidate.split('<table class="results paired">')
    assert f'<span class="version">baseline</span> <code>{BASELINE[:12]}</code>' in baseline
    assert f'<span class="version">candidate</span> <code>{CANDIDATE[:12]}</code>' in candidate
    good, bad = escape(GOOD_ANSWERS["refund"]), escape(BAD_ANSWERS["refund"])
    assert good in baseline and good not in candidate
    assert bad in candidate and bad not in baseline
    # One row per metric, both versions' results side by side; the candidate's failing
    # metric marked as the one that failed the run, its reason beside the baseline's.
    failing = results.split('<tr class="failing">')[1].split("</tr>")[0]
    assert '<td class="name">exact_<wbr>answer</td>' in failing
    assert failing.count("<td>") == 2
    pass_then_fail = failing.split("<td>")[1:]
    assert 'pass</span> <span class="score">1.000' in pass_then_fail[0]
    assert 'fail</span> <span class="score">0.000' in pass_then_fail[1]
    assert "exact_answer scored 0.00 against 0.5." in failing
    assert "baseline: exact_answer scored 1.00 against 0.5." in failing
    assert "baseline 4/4 → 0/4 runs pass" in section
    # A stable case keeps to the candidate's runs.
    assert '<div class="sides">' not in _case_html(html, "greeting")


def test_a_flagged_cases_baseline_is_open_and_elsewhere_passing_runs_are_folded(html):
    section = _case_html(html, "billing")  # flagged: baseline 4/4, candidate 1/4
    baseline, candidate = section.split('<div class="side candidate">')
    # the answer the candidate is compared with is open, beside its first failing runs:
    # runs 1 and 3 read the same (bias 0.1 in both), shown once with their count
    assert '<div class="run pass"><div class="run-head"><span class="version">baseline' in baseline
    head = candidate.split("</div>")[0]
    assert '<strong>runs 1, 3</strong> <span class="times">×2</span>' in head
    # the other runs follow: the baseline's three and the candidate's passing one folded,
    # its other failing run open
    assert section.count('<details class="run pass">') == 3 + 1
    assert section.count('<details class="run fail" open>') == 1
    stable = _case_html(html, "shipping")  # stable: 3/4 in both, no baseline beside it
    assert stable.count('<details class="run pass">') == 3
    assert '<details class="run pass" open>' not in stable


def _same_runs(run, indices):
    """Copies of ``run`` at other run indices: what the page shows of each is the same."""
    stem = run.run_id.rsplit(":", 1)[0]
    return tuple(
        run.model_copy(update={"run_index": i, "run_id": f"{stem}:{i}", "latency_s": 1.0 + i})
        for i in indices
    )


def test_runs_that_read_the_same_are_shown_once_with_their_count(report):
    from n8n_deepeval_pipeline.report.model import fold_runs

    refund = report.case_by_id["refund"]
    same = _same_runs(refund.runs[0], [0, 1, 3])
    other = refund.runs[2]  # the same failure, another helpfulness score
    groups = fold_runs((*same, other))
    assert [[run.run_index for run in group.runs] for group in groups] == [[0, 1, 3], [2]]
    assert (groups[0].indices, groups[1].indices) == ("0–1, 3", "2")
    assert groups[0].latency == "1.00–4.00 s"
    folded = report.model_copy(
        update={
            "cases": (
                refund.model_copy(update={"runs": _same_runs(refund.runs[0], range(4))}),
                *report.cases[1:],
            )
        }
    )
    candidate = _case_html(render_html(folded), "refund").split('<div class="side candidate">')[1]
    assert '<strong>runs 0–3</strong> <span class="times">×4</span>' in candidate
    assert '<details class="run fail"' not in candidate  # no other run of the candidate
    # eval-results.json keeps every run
    assert len(results_json(folded)["cases"][0]["runs"]) == 4


def test_metric_names_break_only_between_their_words_and_headers_stay_apart(html):
    assert "exact_<wbr>answer" in html  # a narrow column breaks it after the underscore
    assert "overflow-wrap: anywhere" not in html  # which broke names anywhere: "dete ction"
    assert '<th>metric</th><th>result</th><th class="num">score</th>' in html
    assert (
        '<th>metric</th><th>baseline</th><th>candidate</th><th class="num">threshold</th>' in html
    )


def test_case_details_come_in_the_order_of_the_cases_table(report, html):
    table = html.split("<h3>Cases</h3>")[1].split("</table>")[0]
    linked = re.findall(r'<a href="#case-([^"]+)">', table)
    details = re.findall(r'<details class="case" id="case-([^"]+)"', html)
    assert linked == details == [case.row_id for case in report.cases]
    assert details == ["refund", "billing", "order_status", "address", "shipping", "greeting"]


def _without_greeting_in_the_baseline():
    base, cand = version(BASELINE), version(CANDIDATE)
    kept = [run for run in base.runs if run.row_id != "greeting"]
    ids = {run.run_id for run in kept}
    rows = VersionRows(
        kept,
        [o for o in base.outputs if o.run_id in ids],
        [s for s in base.scores if s.run_id in ids],
        [a for a in base.aggregates if a.run_id in ids],
    )
    comparison = compare_versions(
        version_runs(rows.runs, rows.aggregates, rows.scores),
        version_runs(cand.runs, cand.aggregates, cand.scores),
    )
    against = Baseline(BASELINE, rows, comparison)
    return build_report(
        cand.summary(),
        cand.rows(),
        fail_on="regression",
        limits=Limits.of(0.05),
        baseline=against,
        dataset=cand.dataset,
    )


def test_both_candidate_pass_rates_say_which_cases_they_cover(html):
    assert '<div class="label">Pass rate · every case</div>' in html
    assert "15 of 24 runs pass (allPass) over all 6 cases of this version" in html
    assert (
        "Pass rate over the 6 cases both versions have: candidate 62.5% (15 of 24 runs) "
        "against the baseline's 66.7%.\nBoth versions have every case, so it is the "
        "headline's pass rate." in html
    )
    partial = _without_greeting_in_the_baseline()
    page, comment = render_html(partial), pr_comment(partial)
    # greeting passes 4/4 in the candidate: without it, 11 of 20 runs pass.
    assert "Pass rate over the 5 cases both versions have: candidate 55.0% (11 of 20 runs)" in page
    assert "The headline's 62.5% counts every case of this version; this one leaves out" in page
    assert (
        "Pass rates over the 5 cases both versions have: the headline's 62.5% counts every "
        "case of this version" in comment
    )
    assert "| candidate | 55.0% | " in comment


def test_each_verdict_present_says_what_it_asks_of_the_reader(report, html):
    guidance = html.split("The verdicts, and what each asks of you")[1].split("</dl>")[0]
    assert '<span class="count">2 cases</span>' in guidance  # stable: greeting, shipping
    present = ["likely_regression", "regression", "improvement", "worth_watching", "stable"]
    for verdict in present:
        assert escape(GUIDANCE[verdict]) in guidance
    assert GUIDANCE["insufficient_data"] not in guidance
    comment = pr_comment(report)
    assert f"- 🟠 likely_regression: {GUIDANCE['likely_regression']}" in comment
    assert "worth a glance" not in GUIDANCE["likely_regression"]  # our own words


def test_a_run_without_output_is_a_target_error_in_the_report_as_in_compare(report, html):
    """One name for a workflow call that gave nothing to score, wherever a reader meets it."""
    from n8n_deepeval_pipeline.console.comparison import render_comparison

    assert report.headline.errors_by_kind == {"target_error": 3, "timeout": 1}
    run = next(case for case in report.cases if case.row_id == "address").runs[3]
    assert {metric.error_kind for metric in run.metrics} == {"target_error"}
    assert run.failure_categories == ("target_error",)
    compared = render_comparison(report.comparison.result, BASELINE, CANDIDATE)
    everything = "\n".join([html, pr_comment(report), json.dumps(results_json(report)), compared])
    assert "no_output" not in everything and "no output:" not in everything
    assert "target_error: webhook answered HTTP 502 Bad Gateway" in html
    assert re.search(r"<td>target_error</td>", html)  # why runs failed, by compare's name


def test_results_json_carries_the_gate_that_run_and_compare_exit_on(report):
    """One gate object: what compare.failOn flags and the exit code each command gives."""
    gated = results_json(sample_report(fail_on="likely_regression"))["outcome"]
    assert gated["gate"] == {
        "fail_on": "likely_regression",
        "baseline": BASELINE[:12],
        "flagged_cases": ["billing", "refund"],
        "has_regression": True,
    }
    assert (gated["verdict"], gated["incomplete"]) == ("regressed", None)
    assert gated["exit_codes"] == {"run": 5, "compare": 1}
    # has_regression says what the gate does: no second opinion beside it
    report = results_json(sample_report(fail_on="likely_regression"))
    assert "has_regression" not in report["comparison"]["result"]
    assert "gate" not in report  # the outcome holds it, once
    alone = results_json(sample_report(with_baseline=False))["outcome"]
    gate = alone["gate"]
    assert (gate["baseline"], gate["flagged_cases"], gate["has_regression"]) == (None, [], False)
    assert alone["exit_codes"] == {"run": 0, "compare": 2}  # nothing to compare with


def test_the_banner_of_an_incomplete_run_says_so_and_the_exit_code_run_gives():
    """1 of 24 workflow calls failed (4.2%): above a 2% limit the run is incomplete, exit 3."""
    report = sample_report(fail_on="likely_regression", max_error_rate=0.02)
    why = "4.2% of the workflow calls failed (1 of 24 runs), above checks.maxErrorRate 2.0%"
    assert report.outcome.incomplete is not None
    assert report.outcome.incomplete.text == why
    assert report.outcome.exit_codes.model_dump() == {"run": 3, "compare": 1}
    html, comment = render_html(report), pr_comment(report)
    for text in (html, comment):
        assert "run exits 5" not in text
        assert "so compare exits 1; run exits 3, as the run is incomplete." in text
        assert f"Incomplete run: {why}, so run exits 3." in text


def test_no_banner_calls_a_run_incomplete_that_run_calls_complete(report, html):
    """1 of 72 scores unjudged (a timeout) is within checks.maxErrorRate: run exits 0 or 5."""
    assert report.outcome.incomplete is None
    assert "Incomplete run" not in html and "ncomplete run" not in pr_comment(report)
    assert "1 of 72 scores have no judgement (timeout or judge errors)" in html


def test_the_cases_that_dropped_are_open_and_the_others_folded(html):
    opened = re.findall(r'<details class="case" id="case-([^"]+)" open>', html)
    # regression and likely regression open; the improvement, worth_watching and stable
    # cases folded (a flagged one still sets both versions side by side when opened)
    assert opened == ["refund", "billing"]
    assert '<div class="sides">' in _case_html(html, "address")  # worth_watching, folded


def test_an_image_a_run_shows_is_a_file_beside_the_page_and_a_remote_one_a_link(report, tmp_path):
    from n8n_deepeval_pipeline.n8n_data.images import image_from_bytes, image_from_url
    from n8n_deepeval_pipeline.report.model import ReportImage
    from tests.png_images import RED_SQUARE

    red, remote = image_from_bytes(RED_SQUARE, "image/png"), image_from_url("https://x.io/a.png")
    case = report.cases[0]
    run = case.runs[0].model_copy(
        update={
            "output": Excerpt.of(f"Here <it> is:\n{red.marker}\nand {remote.marker}", 1500),
            "input_images": (red.sha256,),
        }
    )
    images = {
        red.sha256: ReportImage(
            src=f"images/{red.sha256}.png", remote=False, data_base64=red.data_base64
        ),
        remote.sha256: ReportImage(src=remote.url, remote=True),
    }
    shown = report.model_copy(
        update={
            "cases": (case.model_copy(update={"runs": (run, *case.runs[1:])}), *report.cases[1:]),
            "images": images,
        }
    )
    page = render_html(shown)
    assert (
        f'Here &lt;it&gt; is:\n<img class="image" src="images/{red.sha256}.png" alt="image ' in page
    )
    assert f'<a class="image-link" href="https://x.io/a.png">image {remote.sha256[:12]}</a>' in page
    assert f'given: <img class="image" src="images/{red.sha256}.png"' in page
    paths = write_report(shown, tmp_path / "out")
    assert (tmp_path / "out" / "images" / f"{red.sha256}.png").read_bytes() == RED_SQUARE
    results = paths["eval-results.json"].read_text("utf-8")
    assert red.data_base64 not in results  # the bytes are in the file, never in the JSON
    assert json.loads(results)["images"][red.sha256] == {
        "src": f"images/{red.sha256}.png",
        "remote": False,
    }
