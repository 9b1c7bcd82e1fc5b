"""The report's first lines: what a version's outcome says, and what each command exits with.

The page's banners and the PR comment's alerts are these, in this order: each finding of
the outcome (the one that decides ``run``'s exit code first), then the gate's word on
the comparison when no case fails it. Nothing here says "the gate passes" over a run
that exits 3, 5, 6 or 7.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from n8n_deepeval_pipeline.report.model import ComparisonReport, Headline
from n8n_deepeval_pipeline.statistics.version_comparison import CaseComparison
from n8n_deepeval_pipeline.summary.outcome import Finding, VersionOutcome

Level = Literal["bad", "warn", "good"]


@dataclass(frozen=True)
class Banner:
    """How bad the news is and the sentences that say it; ``against``: of the comparison."""

    level: Level
    text: str
    against: bool = False


def _names(cases: Sequence[CaseComparison], name: Callable[[str], str]) -> str:
    return ", ".join(name(case.row_id) for case in cases)


def _verb(cases: Sequence[CaseComparison], singular: str, plural: str) -> str:
    return singular if len(cases) == 1 else plural


_AS = {
    "incomplete": "as the run is incomplete",
    "regression": "as a case regressed",
    "breach_over_fail_on": "as the red team breached over redTeam.failOn",
    "new_breach": "as the red team breached more than before",
    "below_fail_under": "as the pass rate is below --fail-under",
}


def _exits(outcome: VersionOutcome, finding: Finding) -> str:
    """What ``run`` exits with, said after a finding: its own code, or the one that decides."""
    if not finding.decides:
        return "a variant is an alternative to the workflow: it fails nothing"
    code = outcome.exit_codes.run
    if code == finding.exit_code:
        return f"so run exits {code}"
    deciding = next(found for found in outcome.findings if found.decides)
    return f"run exits {code}, {_AS[deciding.kind]}"


def _regression(
    outcome: VersionOutcome,
    finding: Finding,
    comparison: ComparisonReport,
    name: Callable[[str], str],
) -> str:
    failing = comparison.gate_failures
    sure = [case for case in failing if case.verdict == "regression"]
    likely = [case for case in failing if case.verdict == "likely_regression"]
    sentences = []
    if sure:
        sentences.append(
            f"Regression: {_names(sure, name)} {_verb(sure, 'passes', 'pass')} "
            "significantly less often than in the baseline."
        )
    if likely:
        sentences.append(
            f"Likely regression: {_names(likely, name)} {_verb(likely, 'passes', 'pass')} "
            "less often than in the baseline, by more than repeated runs usually explain."
        )
    exits = _exits(outcome, finding)
    joined = " and " if exits.startswith("so ") else "; "
    compare = f"compare exits {outcome.exit_codes.compare}"
    sentences.append(
        f"The gate fails on {len(failing)} {_verb(failing, 'case', 'cases')}: this benchmark "
        f"fails on {comparison.fail_on} (compare.failOn), so {compare}{joined}"
        f"{exits.removeprefix('so ')}."
    )
    return " ".join(sentences)


def _finding(
    outcome: VersionOutcome,
    finding: Finding,
    comparison: ComparisonReport | None,
    name: Callable[[str], str],
) -> Banner:
    level: Level = "bad" if finding.decides else "warn"
    red_team, exits = outcome.red_team, _exits(outcome, finding)
    if finding.kind == "regression" and comparison is not None:
        return Banner(level, _regression(outcome, finding, comparison, name), against=True)
    if finding.kind == "breach_over_fail_on" and red_team is not None:
        over = "; ".join(
            f"{name(line.vulnerability)} breached {line.breaches} of {line.judged} judged "
            f"attack runs ({line.rate:.1%}), above its failOn {line.fail_on or 0:.1%}"
            for line in red_team.over_fail_on
        )
        return Banner(level, f"Red team: {over}, {exits}.")
    if finding.kind == "new_breach" and red_team is not None:
        more = "; ".join(
            f"{name(line.vulnerability)} breached {line.breaches} of {line.judged} judged attack "
            f"runs where the baseline breached {line.baseline_breaches} of "
            f"{line.baseline_judged} ({line.verdict}, p = {line.p_value or 0:.3f})"
            for line in red_team.new_breaches
        )
        return Banner(level, f"Red team breaches more than in the baseline: {more}, {exits}.")
    if finding.kind == "incomplete" and outcome.incomplete is not None:
        return Banner(level, f"Incomplete run: {outcome.incomplete.text}, {exits}.")
    return Banner(level, f"{finding.text[:1].upper()}{finding.text[1:]}, {exits}.")


def _comparison(
    outcome: VersionOutcome, comparison: ComparisonReport, name: Callable[[str], str]
) -> Banner:
    """The gate's word when no case fails it; "the gate passes" only when the run does."""
    fail_on = f"{comparison.fail_on} (compare.failOn)"
    passes = outcome.exit_codes.run == 0
    said = "The gate passes: no case fails" if passes else "No case fails the gate"
    below = comparison.drops_below_gate
    if below:
        return Banner(
            "warn",
            f"{said} on {fail_on}. {len(below)} likely "
            f"{_verb(below, 'regression', 'regressions')} below it to look at: "
            f"{_names(below, name)}.",
            against=True,
        )
    return Banner(
        "good" if passes else "warn",
        f"{said} on {fail_on} against the baseline.",
        against=True,
    )


def outcome_banners(
    outcome: VersionOutcome,
    comparison: ComparisonReport | None,
    name: Callable[[str], str] = str,
) -> list[Banner]:
    """What the outcome says, the finding that decides first; ``name`` writes a row id."""
    banners = [_finding(outcome, finding, comparison, name) for finding in outcome.findings]
    regressed = any(finding.kind == "regression" for finding in outcome.findings)
    if comparison is not None and not regressed:
        banners.append(_comparison(outcome, comparison, name))
    if comparison is None:
        exits = "" if outcome.findings else "; run exits 0"
        said = f"No baseline to compare with: this is the version's own summary{exits}."
        banners.append(Banner("good", said))
    return banners


def unjudged_within_limit(headline: Headline) -> str:
    """Scores without a judgement that leave the run complete (within checks.maxErrorRate)."""
    return (
        f"{headline.unjudged_scores} of {headline.scores} scores have no judgement (timeout or "
        "judge errors), within the error limit: the figures leave them out."
    )
