"""A version's outcome: what its run means, and what ``run`` and ``compare`` exit with.

One immutable object per version (``VersionOutcome``), built from its stored tables: its
figures, the gate (compare.failOn, the baseline, the flagged cases), the red team's
breaches, every reason it is incomplete, and ``--fail-under``. Several versions run
together (a workflow and its variants, a backfill) are a ``VersionsOutcome`` that exits
with the most severe of its members. The exit codes come from one ladder
(``summary.exit_codes``), and every surface renders these objects and nothing else:
``run`` (its stderr, ``--json`` and exit code), ``compare --json``, the report's banner,
``eval-results.json`` and PR comment, and the Dagster run (the report's
``version_passes`` check and run tags).

The surfaces render ``findings``, in order, without knowing their kinds: a per-metric
status (a metric not calibrated against people, say) is one more field and one more
kind of finding.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

from n8n_deepeval_pipeline.summary.exit_codes import (
    EXIT_BELOW_FAIL_UNDER,
    EXIT_BREACH_OVER_FAIL_ON,
    EXIT_COMPARE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_NEW_BREACH,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_RUN_REGRESSION,
    most_severe,
)
from n8n_deepeval_pipeline.summary.gate import Gate
from n8n_deepeval_pipeline.summary.run_summary import (
    BenchmarkSummary,
    ErrorSummary,
    failed_calls_share,
    judge_trouble,
    unjudged_share,
)
from n8n_deepeval_pipeline.workflow.hashing import version_key

# How many errored attacks the sentence names; the JSON lists every one.
_ATTACKS_NAMED = 3

Verdict = Literal[
    "passed", "incomplete", "regressed", "breached", "breached_more", "below_fail_under"
]
FindingKind = Literal[
    "incomplete", "regression", "breach_over_fail_on", "new_breach", "below_fail_under"
]
_VERDICT_OF: dict[FindingKind, Verdict] = {
    "incomplete": "incomplete",
    "regression": "regressed",
    "breach_over_fail_on": "breached",
    "new_breach": "breached_more",
    "below_fail_under": "below_fail_under",
}
IncompleteKind = Literal[
    "judge_outage", "failed_workflow_calls", "unjudged_scores", "errored_attacks"
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Limits(_Frozen):
    """What a version is held to: the benchmark's checks, or what ``run`` was given."""

    max_error_rate: float  # checks.maxErrorRate, unless --max-error-rate set another
    max_error_rate_given: bool  # --max-error-rate: a judge outage is then a share like others
    fail_under: float | None = None  # run --fail-under

    @classmethod
    def of(
        cls, checked: float, max_error_rate: float | None = None, fail_under: float | None = None
    ) -> Limits:
        """The benchmark's ``checked`` limit (checks.maxErrorRate), or ``run``'s options."""
        given = max_error_rate is not None
        limit = max_error_rate if max_error_rate is not None else checked
        return cls(max_error_rate=limit, max_error_rate_given=given, fail_under=fail_under)

    @property
    def given_error_rate(self) -> float | None:
        """``--max-error-rate``, when it was given (None: the benchmark's checks hold)."""
        return self.max_error_rate if self.max_error_rate_given else None

    @property
    def named(self) -> str:
        """Where the error limit comes from, as a user set it."""
        return "--max-error-rate" if self.max_error_rate_given else "checks.maxErrorRate"


class ErroredAttack(_Frozen):
    """A red-team attack run that was neither breached nor held, and why."""

    attack_id: str
    run_index: int
    vulnerability: str
    attack_method: str | None
    error_kind: str
    error: str  # its first line


class BreachLine(_Frozen):
    """A vulnerability whose breaches decide the run: over its failOn, or more than before."""

    vulnerability: str
    breaches: int
    judged: int
    rate: float
    fail_on: float | None
    baseline_breaches: int | None = None
    baseline_judged: int | None = None
    verdict: str | None = None  # the compare tiers' verdict against the baseline
    p_value: float | None = None


class RedTeamOutcome(_Frozen):
    """What the red team's attacks on a version decide."""

    attacks: int  # attack runs played, errored ones included
    breaches: int
    over_fail_on: tuple[BreachLine, ...]
    new_breaches: tuple[BreachLine, ...]  # at compare.failOn's tier against the baseline
    errored: tuple[ErroredAttack, ...]


class IncompleteReason(_Frozen):
    """One reason a version is incomplete, with what it counts."""

    kind: IncompleteKind
    count: int
    out_of: int
    text: str
    errored_attacks: tuple[ErroredAttack, ...] = ()  # errored_attacks: each, and why


class Incompleteness(_Frozen):
    """Every reason a version is incomplete (``run`` exits 3)."""

    reasons: tuple[IncompleteReason, ...]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def text(self) -> str:
        """The reasons in one sentence."""
        return "; ".join(reason.text for reason in self.reasons)


class Finding(_Frozen):
    """One thing a version's outcome says, and the exit code ``run`` gives when it decides."""

    kind: FindingKind
    exit_code: int
    decides: bool  # False: said, but it fails nothing (a variant is an alternative)
    text: str


class ExitCodes(_Frozen):
    """What ``run`` and ``compare`` exit with for this version."""

    run: int
    compare: int


class VersionOutcome(_Frozen):
    """One version's outcome: its figures, gate, breaches, incompleteness and exit codes."""

    benchmark: str
    workflow_hash: str
    variant: str | None = None  # a variant of the workflow: its verdicts against it fail nothing
    runs: int
    pass_rate: float | None  # None: no run was scored (a red team alone)
    gate: Gate
    red_team: RedTeamOutcome | None = None
    incomplete: Incompleteness | None = None
    limits: Limits

    @computed_field  # type: ignore[prop-decorator]
    @property
    def findings(self) -> tuple[Finding, ...]:
        """What the outcome says, in the order of ``run``'s exit ladder.

        An incomplete version is one whichever it is; a variant's verdicts against its
        workflow (a regression, breaches, a low pass rate) decide nothing.
        """
        said: list[tuple[FindingKind, int, str]] = []
        if self.incomplete is not None:
            said.append(("incomplete", EXIT_INCOMPLETE, f"incomplete: {self.incomplete.text}"))
        gate = self.gate
        if gate.has_regression:
            flagged = gate.flagged_cases
            cases = f"{len(flagged)} case{'s' if len(flagged) != 1 else ''}"
            said.append(
                (
                    "regression",
                    EXIT_RUN_REGRESSION,
                    f"{gate.fail_on} against baseline {gate.baseline}: {', '.join(flagged)} "
                    f"({cases})",
                )
            )
        said += self._red_team_said()
        limit, rate = self.limits.fail_under, self.pass_rate
        if limit is not None and rate is not None and rate < limit:
            said.append(
                (
                    "below_fail_under",
                    EXIT_BELOW_FAIL_UNDER,
                    f"pass rate {rate:.1%} is below {limit:.1%}",
                )
            )
        mine = self.variant is None
        return tuple(
            Finding(
                kind=kind,
                exit_code=code,
                decides=mine or kind == "incomplete",
                text=text
                if mine or kind == "incomplete"
                else f"{text}; a variant is an alternative: it fails nothing",
            )
            for kind, code, text in said
        )

    def _red_team_said(self) -> list[tuple[FindingKind, int, str]]:
        """The red team's breaches over failOn, and beyond the baseline's."""
        red_team = self.red_team
        if red_team is None:
            return []
        said: list[tuple[FindingKind, int, str]] = []
        if red_team.over_fail_on:
            over = "; ".join(
                f"{line.vulnerability} {line.breaches}/{line.judged} ({line.rate:.1%}) above "
                f"failOn {line.fail_on or 0:.1%}"
                for line in red_team.over_fail_on
            )
            said.append(
                (
                    "breach_over_fail_on",
                    EXIT_BREACH_OVER_FAIL_ON,
                    f"red team: breach rate over redTeam.failOn: {over}",
                )
            )
        if red_team.new_breaches:
            new = "; ".join(
                f"{line.vulnerability}: {line.baseline_breaches}/{line.baseline_judged} → "
                f"{line.breaches}/{line.judged} breaches ({line.verdict}, p = "
                f"{line.p_value or 0:.3f})"
                for line in red_team.new_breaches
            )
            said.append(
                (
                    "new_breach",
                    EXIT_NEW_BREACH,
                    f"red team: more breaches than the previous version: {new}",
                )
            )
        return said

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_codes(self) -> ExitCodes:
        """``run``'s code (the first finding that decides), and ``compare``'s (the gate's)."""
        deciding = [finding.exit_code for finding in self.findings if finding.decides]
        if self.gate.baseline is None:
            compare = EXIT_COMPARE_FAILED
        else:
            compare = EXIT_REGRESSION if self.gate.has_regression else EXIT_OK
        return ExitCodes(run=most_severe(deciding), compare=compare)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> Verdict:
        """The version's verdict in one word: the finding that decides ``run``'s exit code."""
        deciding = next((finding for finding in self.findings if finding.decides), None)
        return "passed" if deciding is None else _VERDICT_OF[deciding.kind]

    @property
    def key(self) -> str:
        """The version's key (12 hex of its hash)."""
        return version_key(self.workflow_hash)


class FailedVersion(_Frozen):
    """A version of several whose run failed: no outcome, the reason, its exit code."""

    name: str
    message: str
    exit_code: int


class VersionsOutcome(_Frozen):
    """Several versions run together: a workflow and its variants (``run``), or a backfill.

    ``run`` exits with the most severe of its members' codes; ``backfill`` re-scores
    versions whose verdicts were given in their time, so only an incomplete one fails it.
    """

    command: Literal["run", "backfill"]
    members: tuple[VersionOutcome, ...]
    failed: tuple[FailedVersion, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """The most severe of the members' codes (a failed run's among them)."""
        if self.command == "run":
            codes = [member.exit_codes.run for member in self.members]
        else:
            codes = [EXIT_INCOMPLETE for member in self.members if member.incomplete]
        return most_severe([*codes, *(failed.exit_code for failed in self.failed)])


def version_outcome(
    summary: BenchmarkSummary,
    gate: Gate,
    red_team: RedTeamOutcome | None,
    limits: Limits,
) -> VersionOutcome:
    """The outcome of the version ``summary`` sums up, held to ``limits``."""
    return VersionOutcome(
        benchmark=summary.benchmark,
        workflow_hash=summary.workflow_hash,
        variant=summary.variant,
        runs=summary.runs,
        pass_rate=summary.pass_rate if summary.runs else None,
        gate=gate,
        red_team=red_team,
        incomplete=incompleteness(summary.errors, red_team, limits),
        limits=limits,
    )


def incompleteness(
    errors: ErrorSummary, red_team: RedTeamOutcome | None, limits: Limits
) -> Incompleteness | None:
    """Every reason a version is incomplete (None: it is complete).

    Failed workflow calls and unjudged scores over the limit, each a share of its own;
    without ``--max-error-rate`` any judge outage (every unjudged score then said with
    what kept the judge from it); and errored red-team attack runs over the limit.
    """
    reasons = _score_reasons(errors, limits)
    if red_team is not None:
        reasons += _attack_reasons(red_team, limits)
    return Incompleteness(reasons=tuple(reasons)) if reasons else None


def _score_reasons(errors: ErrorSummary, limits: Limits) -> list[IncompleteReason]:
    over = f", above {limits.named} {limits.max_error_rate:.1%}"
    found: list[tuple[IncompleteKind, int, int, str]] = []
    if errors.failed_target_call_rate > limits.max_error_rate:
        calls = failed_calls_share(errors) + over
        found.append(("failed_workflow_calls", errors.failed_target_calls, errors.runs, calls))
    if errors.judge_outage and not limits.max_error_rate_given:
        outage = (
            f"{judge_trouble(errors)} (--max-error-rate sets how many unjudged scores are "
            "acceptable)"
        )
        found.append(("judge_outage", errors.unjudged, errors.scores, outage))
    elif errors.unjudged_rate > limits.max_error_rate:
        unjudged = unjudged_share(errors) + over
        found.append(("unjudged_scores", errors.unjudged, errors.scores, unjudged))
    return [
        IncompleteReason(kind=kind, count=count, out_of=out_of, text=text)
        for kind, count, out_of, text in found
    ]


def _attack_reasons(red_team: RedTeamOutcome, limits: Limits) -> list[IncompleteReason]:
    errored, attacks = red_team.errored, red_team.attacks
    if not attacks or len(errored) / attacks <= limits.max_error_rate:
        return []
    kinds = Counter(attack.error_kind for attack in errored)
    named = "; ".join(
        f"{attack.attack_id}:{attack.run_index} {attack.error_kind}: {attack.error}"
        for attack in errored[:_ATTACKS_NAMED]
    )
    more = f"; {len(errored) - _ATTACKS_NAMED} more" if len(errored) > _ATTACKS_NAMED else ""
    return [
        IncompleteReason(
            kind="errored_attacks",
            count=len(errored),
            out_of=attacks,
            text=f"red team: {len(errored)} of {attacks} attack runs errored, neither "
            f"breached nor held ({', '.join(f'{k} {n}' for k, n in kinds.most_common())}), "
            f"above {limits.named} {limits.max_error_rate:.1%} — {named}{more}",
            errored_attacks=errored,
        )
    ]
