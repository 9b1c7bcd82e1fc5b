"""The report as a pull-request comment (``eval-pr-comment.md``): short, the flags first."""

from __future__ import annotations

import re

from n8n_deepeval_pipeline.report.banners import outcome_banners, unjudged_within_limit
from n8n_deepeval_pipeline.report.formatting import (
    MISSING,
    figure,
    fraction,
    interval,
    money,
    p_value,
    percent,
    points,
    short_hash,
    signed_figure,
    thousands,
)
from n8n_deepeval_pipeline.report.model import (
    CaseDetail,
    ComparisonReport,
    DropCause,
    Headline,
    MetricRow,
    Report,
)
from n8n_deepeval_pipeline.report.red_team import RedTeamReport
from n8n_deepeval_pipeline.report.verdicts import FLAGGED, GUIDANCE
from n8n_deepeval_pipeline.statistics.version_comparison import Verdict
from n8n_deepeval_pipeline.summary.outcome import VersionOutcome

_MARKER: dict[Verdict, str] = {
    "regression": "🔴",
    "likely_regression": "🟠",
    "unreliable_baseline": "🟣",
    "improvement": "🟢",
    "worth_watching": "🟡",
    "stable": "⚪",
    "insufficient_data": "⚪",
}
# Characters that would start markup (or a raw HTML tag) inside a comment.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")


def _text(value: str) -> str:
    """Benchmark text (ids, labels) shown literally on one line of a table."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(value.split()))


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _verdict(verdict: Verdict) -> str:
    return f"{_MARKER[verdict]} {verdict}"


_ALERT = {"bad": "> [!CAUTION]\n> ", "warn": "> [!WARNING]\n> ", "good": ""}


def _status(comparison: ComparisonReport | None, outcome: VersionOutcome) -> list[str]:
    """The outcome's banners as alerts, the one that decides the exit code first."""
    lines = []
    for banner in outcome_banners(outcome, comparison, _text):
        against = (
            f"**Against baseline `{short_hash(comparison.baseline_hash)}`:** "
            if banner.against and comparison is not None
            else ""
        )
        lines += [_ALERT[banner.level] + against + banner.text, ""]
    return lines


def _dry_run(report: Report) -> str:
    if report.placeholders_decide:
        return "every metric that decides a run needs a judge: the pass rate means nothing yet."
    return f"they decide no run (the pass rate is {_text(', '.join(report.deciding_metrics))}'s)."


def _headline(h: Headline, outcome: VersionOutcome, dry_run: str) -> list[str]:
    k = h.largest_k
    consistency = f"consistency {figure(h.mean_consistency)}"
    if k is not None:
        consistency += f" · pass@{k} {figure(h.pass_at_k[k])} · pass^{k} {figure(h.pass_hat_k[k])}"
    lines = [
        f"**Pass rate {percent(h.pass_rate.rate)}** over every case "
        f"({h.pass_rate.passed}/{h.pass_rate.runs} runs, "
        f"95% CI {interval(h.pass_rate.interval)}, {h.pass_rule}) · "
        f"mean overall score {figure(h.mean_overall_score)}  ",
        consistency + "  ",
        f"judge {_text(h.judge_label or MISSING)} · {thousands(h.judge_calls)} calls · "
        f"{thousands(h.tokens)} tokens · cost {money(h.cost_usd)} · "
        f"{thousands(h.score_errors)} errors",
    ]
    if h.dry_run_judge:
        lines += [
            "",
            f"> [!NOTE]\n> Dry-run judge: judge-backed scores are placeholders; {dry_run}",
        ]
    if h.unjudged_scores and outcome.incomplete is None:
        lines += [
            "",
            f"> [!WARNING]\n> {unjudged_within_limit(h)}",
        ]
    return lines


def _shared_note(comparison: ComparisonReport, headline: Headline) -> str:
    """Why the comparison's candidate pass rate may differ from the headline's."""
    shared = comparison.result.candidate_overall
    note = f"Pass rates over the {comparison.shared_cases} cases both versions have"
    if shared.runs == headline.pass_rate.runs:
        return note + ": both versions have every case, so the candidate's is the headline's."
    return (
        note + f": the headline's {percent(headline.pass_rate.rate)} counts every case of this "
        "version; cases only one version has are left out here, so that both are measured "
        "on the same cases."
    )


def _comparison(
    comparison: ComparisonReport, headline: Headline, details: dict[str, CaseDetail]
) -> list[str]:
    result = comparison.result
    lines = [
        "",
        _shared_note(comparison, headline),
        "",
        _row("version", "pass rate (shared cases)", "95% CI", "runs"),
        _row("---", "---:", "---:", "---:"),
    ]
    for name, overall in (
        ("baseline", result.baseline_overall),
        ("candidate", result.candidate_overall),
    ):
        lines.append(
            _row(name, percent(overall.rate), interval(overall.interval), fraction(overall))
        )
    lines += ["", "#### Flagged cases", "", *_flagged(comparison, details)]
    counts = " · ".join(f"{n} {verdict}" for verdict, n in result.verdict_counts.items() if n)
    lines += ["", f"Verdicts: {counts}.", "", *_guidance(comparison)]
    lines += _drift(comparison)
    return lines


def _cause(cause: DropCause) -> str:
    counts = (
        f"{cause.candidate_failed}/{cause.candidate_runs} "
        f"(was {cause.baseline_failed}/{cause.baseline_runs})"
    )
    if cause.kind == "metric":
        return f"{_text(cause.name)} fails {counts}"
    return f"{_text(cause.name)} {counts}"


def _causes(case: CaseDetail | None) -> str:
    return "; ".join(_cause(cause) for cause in case.causes) if case else ""


def _guidance(comparison: ComparisonReport) -> list[str]:
    """What each verdict present asks of the reader."""
    return [
        f"- {_verdict(verdict)}: {GUIDANCE[verdict]}"
        for verdict in FLAGGED
        if comparison.result.verdict_counts[verdict]
    ]


def _flagged(comparison: ComparisonReport, details: dict[str, CaseDetail]) -> list[str]:
    if not comparison.flagged_cases:
        return ["None."]
    lines = [
        _row("case", "baseline", "candidate", "change", "p", "verdict", "why it dropped"),
        _row("---", "---:", "---:", "---:", "---:", "---", "---"),
    ]
    lines += [
        _row(
            _text(case.row_id),
            fraction(case.baseline),
            fraction(case.candidate),
            points(case.delta),
            p_value(case.p_value),
            _verdict(case.verdict),
            _causes(details.get(case.row_id)),
        )
        for case in comparison.flagged_cases
    ]
    return lines


def _drift(comparison: ComparisonReport) -> list[str]:
    if not comparison.notable_drift:
        return []
    lines = ["", "#### Failure categories that moved", ""]
    lines += [
        _row("category", "baseline", "candidate", "change"),
        _row("---", "---:", "---:", "---:"),
    ]
    lines += [
        _row(
            drift.category,
            f"{drift.baseline_count} ({percent(drift.baseline_rate)})",
            f"{drift.candidate_count} ({percent(drift.candidate_rate)})",
            points(drift.rate_delta),
        )
        for drift in comparison.notable_drift
    ]
    return lines


def _metric_deltas(comparison: ComparisonReport) -> list[str]:
    lines = [
        _row("metric", "mean", "change", "pass rate", "change"),
        _row("---", "---:", "---:", "---:", "---:"),
    ]
    lines += [
        _row(
            _text(delta.metric),
            figure(delta.candidate.mean_score),
            signed_figure(delta.mean_score_delta),
            percent(delta.candidate.pass_rate),
            points(delta.pass_rate_delta),
        )
        for delta in comparison.result.metric_deltas
    ]
    return lines


def _metrics(metrics: tuple[MetricRow, ...]) -> list[str]:
    lines = [_row("metric", "mean", "pass rate", "errors"), _row("---", "---:", "---:", "---:")]
    lines += [
        _row(
            _text(metric.metric),
            figure(metric.mean_score),
            percent(metric.pass_rate),
            str(metric.errors),
        )
        for metric in metrics
    ]
    return lines


def _red_team(section: RedTeamReport) -> list[str]:
    """Each vulnerability's breaches, its limit and its change from the baseline."""
    lines = [
        "",
        "#### Red team",
        "",
        f"{section.breaches} of {section.judged} judged attack runs breached "
        f"({section.errors} errored); {section.mocked_tool_calls} of {section.tool_calls} "
        "tool calls they provoked were mocked and never ran.",
        "",
        _row("vulnerability", "breaches", "rate", "95% CI", "failOn", "baseline", "verdict"),
        _row("---", "---:", "---:", "---:", "---:", "---:", "---"),
    ]
    for line in section.vulnerabilities:
        flags = (" · over failOn" if line.over_limit else "") + (
            " · new breach" if line.new_breach else ""
        )
        ci = (
            f"[{percent(line.wilson_low)}, {percent(line.wilson_high)}]"
            if line.wilson_low is not None
            else MISSING
        )
        baseline = (
            f"{line.baseline_breaches}/{line.baseline_judged}"
            if line.baseline_judged is not None
            else MISSING
        )
        lines.append(
            _row(
                _text(line.vulnerability) + flags,
                f"{line.breaches}/{line.judged}",
                percent(line.rate),
                ci,
                percent(line.fail_on),
                baseline,
                _text(line.verdict or MISSING),
            )
        )
    return lines


def _calibration_gate(report: Report) -> list[str]:
    """The metrics calibration.gate keeps from deciding, and why (none: nothing said)."""
    kept_out = [
        metric
        for metric in report.metrics
        if metric.calibration is not None and metric.calibration.gated and not metric.decides
    ]
    if not kept_out:
        return []
    said = "; ".join(
        f"{_text(metric.metric)}: {_text(metric.calibration.why)}"
        for metric in kept_out
        if metric.calibration is not None
    )
    return [
        "",
        "> [!NOTE]\n> Calibration gate: uncalibrated against people's labels, these decide no "
        f"run and no regression ({said}); the pass rate is "
        f"{_text(', '.join(report.deciding_metrics))}'s.",
    ]


def pr_comment(report: Report) -> str:
    """The markdown comment: status, headline, flagged cases and metric changes."""
    lines = [
        f"### Benchmark {_text(report.benchmark)} · `{short_hash(report.workflow_hash)}`",
        "",
        *_status(report.comparison, report.outcome),
        *_headline(report.headline, report.outcome, _dry_run(report)),
        *_calibration_gate(report),
    ]
    if report.comparison:
        lines += _comparison(report.comparison, report.headline, report.case_by_id)
        lines += ["", "#### Metrics (candidate, change from baseline)", ""]
        lines += _metric_deltas(report.comparison)
    else:
        lines += ["", "#### Metrics", "", *_metrics(report.metrics)]
    if report.red_team is not None:
        lines += _red_team(report.red_team)
    return "\n".join(lines) + "\n"
