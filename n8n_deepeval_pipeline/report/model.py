"""The report of one workflow version: what the HTML page, the JSON and the PR comment show."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline.calibration.measurement import Calibration
from n8n_deepeval_pipeline.calibration.status import MetricCalibration
from n8n_deepeval_pipeline.report.conversation import Conversation
from n8n_deepeval_pipeline.report.excerpt import Excerpt
from n8n_deepeval_pipeline.report.red_team import RedTeamReport
from n8n_deepeval_pipeline.report.verdicts import attention_order, is_flagged
from n8n_deepeval_pipeline.statistics.gates import GateVerdict, fails_gate
from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.statistics.version_comparison import (
    CaseComparison,
    CategoryDrift,
    FailureCategory,
    MetricDelta,
    OverallPassRate,
    Verdict,
    VersionComparison,
)
from n8n_deepeval_pipeline.summary.outcome import VersionOutcome
from n8n_deepeval_pipeline.summary.variant_matrix import VariantMatrix
from n8n_deepeval_pipeline.summary.workflow_usage import WorkflowUsage
from n8n_deepeval_pipeline.tables.rows import WorkflowCheck


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Headline(_Frozen):
    """The figures a reader looks at first."""

    pass_rate: OverallPassRate  # runs passed under the pass rule, with the Wilson 95% interval
    pass_rule: str
    mean_overall_score: float | None
    cases: int
    pass_at_k: dict[int, float]  # mean over cases, by k
    pass_hat_k: dict[int, float]
    mean_consistency: float | None
    mean_cv: float | None
    label_agreement: float | None
    judge_label: str | None
    dry_run_judge: bool
    judge_calls: int
    cached_calls: int
    judge_retries: int
    tokens: int
    cost_usd: float | None
    scores: int  # metric results, each run × metric
    score_errors: int
    errors_by_kind: dict[str, int]
    # Of those, the ones that failed no run: in a metric that decides none (reported only)
    # or in a run that passed anyway; "Why runs failed" leaves them out.
    errors_failing_no_run: dict[str, int]
    unjudged_scores: int
    output_errors: int  # runs whose workflow gave no output
    workflow: WorkflowUsage | None = None  # the workflow's own models' tokens, cost; latency

    @property
    def largest_k(self) -> int | None:
        """The k of the strictest pass@k / pass^k figures (normally the runs per case)."""
        return max(self.pass_at_k, default=None)


class MetricRow(_Frozen):
    """One metric over every run of the version."""

    metric: str
    direction: Direction
    threshold: float
    mean_score: float | None
    pass_rate: float
    errors: int
    dry_run: bool
    score_bins: tuple[int, ...]  # how many scores fall in each tenth of [0, 1]
    unscored: int  # results without a score
    decides: bool = True  # its results decide runs (a dry-run placeholder may not)
    calibration: MetricCalibration | None = None  # its standing with people (calibration)


class ComparisonReport(_Frozen):
    """The report's version (the candidate) against a baseline version."""

    baseline_hash: str | None
    result: VersionComparison
    fail_on: GateVerdict  # the benchmark's compare.failOn: what fails `compare` and the check

    @property
    def ordered_cases(self) -> tuple[CaseComparison, ...]:
        """Every case, the flagged ones first, the most serious first (as the case details)."""
        return tuple(
            sorted(
                self.result.cases,
                key=lambda case: attention_order(case.verdict, case.candidate, case.row_id),
            )
        )

    @property
    def gate_failures(self) -> tuple[CaseComparison, ...]:
        """The cases that fail the gate (``fail_on`` or a surer regression), as they exit 1."""
        return tuple(case for case in self.ordered_cases if fails_gate(case.verdict, self.fail_on))

    @property
    def drops_below_gate(self) -> tuple[CaseComparison, ...]:
        """Likely regressions the gate lets through (it fails on regression only)."""
        return tuple(
            case
            for case in self.ordered_cases
            if fails_gate(case.verdict, "likely_regression")
            and not fails_gate(case.verdict, self.fail_on)
        )

    @property
    def shared_cases(self) -> int:
        """Cases both versions have runs of: the ones the comparison's pass rates cover."""
        return sum(1 for case in self.result.cases if case.verdict != "insufficient_data")

    @property
    def flagged_cases(self) -> tuple[CaseComparison, ...]:
        """Cases whose verdict asks for a look, the most serious first."""
        return tuple(case for case in self.ordered_cases if is_flagged(case.verdict))

    @property
    def delta_by_metric(self) -> dict[str, MetricDelta]:
        """Each metric's change from the baseline, by label."""
        return {delta.metric: delta for delta in self.result.metric_deltas}

    @property
    def notable_drift(self) -> tuple[CategoryDrift, ...]:
        """Failure categories whose rate moved beyond what the number of runs explains."""
        return tuple(drift for drift in self.result.failure_drift if drift.notable)


class MetricResult(_Frozen):
    """One metric's result on one run."""

    metric: str
    score: float | None
    threshold: float
    direction: Direction
    success: bool
    reason: Excerpt | None
    error: Excerpt | None
    error_kind: str | None
    dry_run: bool
    counted: bool  # decides the run under the pass rule; else reported only

    @property
    def failed(self) -> bool:
        """Whether this result counts against its run: it failed or errored."""
        return not self.success or self.error_kind is not None


class RunDetail(_Frozen):
    """One run of a case: its output, why it failed and every metric's result.

    A run that holds turns is a conversation: ``output`` is its last answer, and
    ``conversation`` every turn in full, why it stopped and its session.
    """

    run_id: str
    run_index: int
    passed: bool
    overall_score: float | None
    output: Excerpt | None
    output_error: Excerpt | None
    latency_s: float | None
    failure_categories: tuple[FailureCategory, ...]
    metrics: tuple[MetricResult, ...]
    conversation: Conversation | None = None
    input_images: tuple[str, ...] = ()  # the hashes of the images the run was given


class RunGroup(_Frozen):
    """Runs of a case that read the same (output, outcome, every result): shown once, ×N."""

    runs: tuple[RunDetail, ...]

    @property
    def first(self) -> RunDetail:
        """The run shown for the group."""
        return self.runs[0]

    @property
    def indices(self) -> str:
        """The runs' indices, consecutive ones as a range: ``0–2, 5``."""
        spans: list[list[int]] = []
        for index in sorted(run.run_index for run in self.runs):
            if spans and index == spans[-1][-1] + 1:
                spans[-1].append(index)
            else:
                spans.append([index])
        return ", ".join(
            str(span[0]) if len(span) == 1 else f"{span[0]}–{span[-1]}" for span in spans
        )

    @property
    def sessions(self) -> tuple[str, ...]:
        """The sessions its conversations were sent in, in run order (none: no conversation)."""
        return tuple(
            run.conversation.session_id
            for run in self.runs
            if run.conversation is not None and run.conversation.session_id is not None
        )

    @property
    def latency(self) -> str | None:
        """The runs' latency, or its range when they took different times."""
        found = sorted(run.latency_s for run in self.runs if run.latency_s is not None)
        if not found:
            return None
        if found[0] == found[-1]:
            return f"{found[0]:.2f} s"
        return f"{found[0]:.2f}–{found[-1]:.2f} s"


def _reads_as(run: RunDetail) -> tuple[object, ...]:
    """Everything the page shows of a run but which run it is (its session) and its time."""
    return (
        run.passed,
        run.overall_score,
        run.output,
        run.output_error,
        run.failure_categories,
        run.metrics,
        run.conversation.reads_as if run.conversation else None,
    )


def fold_runs(runs: tuple[RunDetail, ...]) -> tuple[RunGroup, ...]:
    """The runs grouped by how they read, in the order of each group's first run."""
    groups: dict[tuple[object, ...], list[RunDetail]] = {}
    for run in runs:
        groups.setdefault(_reads_as(run), []).append(run)
    return tuple(RunGroup(runs=tuple(group)) for group in groups.values())


class MetricPair(_Frozen):
    """One metric in a baseline run and in a candidate run, side by side (None: not scored)."""

    metric: str
    baseline: MetricResult | None
    candidate: MetricResult | None

    @property
    def threshold(self) -> float:
        """The candidate's threshold (the baseline's when the candidate has none)."""
        scored = self.candidate or self.baseline
        assert scored is not None  # a pair holds at least one side
        return scored.threshold

    @property
    def reasons_differ(self) -> bool:
        """Whether the baseline's reason or error says something the candidate's does not."""
        if self.baseline is None or self.candidate is None:
            return False
        said = (self.baseline.reason, self.baseline.error)
        return said != (self.candidate.reason, self.candidate.error) and any(said)


class PairedRuns(_Frozen):
    """A flagged case's answer in each version, metric by metric, and the other runs."""

    baseline: RunGroup
    candidate: RunGroup
    metrics: tuple[MetricPair, ...]
    other_baseline: tuple[RunGroup, ...]
    other_candidate: tuple[RunGroup, ...]


def _primary(groups: tuple[RunGroup, ...], passed: bool) -> RunGroup:
    """The group that shows a version's side: its first that passed (or failed), else its first."""
    return next((group for group in groups if group.first.passed == passed), groups[0])


def pair_runs(baseline: tuple[RunGroup, ...], candidate: tuple[RunGroup, ...]) -> PairedRuns:
    """The baseline's first passing runs beside the candidate's first failing ones."""
    base, cand = _primary(baseline, True), _primary(candidate, False)
    base_of = {result.metric: result for result in base.first.metrics}
    cand_of = {result.metric: result for result in cand.first.metrics}
    names = list(dict.fromkeys([*cand_of, *base_of]))
    return PairedRuns(
        baseline=base,
        candidate=cand,
        metrics=tuple(
            MetricPair(metric=n, baseline=base_of.get(n), candidate=cand_of.get(n)) for n in names
        ),
        other_baseline=tuple(group for group in baseline if group is not base),
        other_candidate=tuple(group for group in candidate if group is not cand),
    )


class DropCause(_Frozen):
    """A metric or failure category that fails more of a case's runs than in the baseline.

    Counted over failed runs, as "Why runs failed" counts them: a metric that fails in a
    run that passed (or that does not decide runs) causes no drop.
    """

    kind: Literal["metric", "category"]
    name: str
    baseline_failed: int
    baseline_runs: int
    candidate_failed: int
    candidate_runs: int


class CaseDetail(_Frozen):
    """One dataset row's runs in this version and, against a baseline, the baseline's runs.

    ``causes``: what made the case drop, the largest rise first (empty unless it dropped).
    A simulated conversation's row has no input: its scenario, the outcome the simulated
    user is after and who that user is say what the conversations were about.
    """

    row_id: str
    input: Excerpt | None
    expected_output: Excerpt | None
    verdict: Verdict | None
    passed: int  # runs that passed
    runs: tuple[RunDetail, ...]
    baseline_passed: int
    baseline_runs: tuple[RunDetail, ...]
    causes: tuple[DropCause, ...]
    scenario: Excerpt | None = None
    expected_outcome: Excerpt | None = None
    user_description: Excerpt | None = None

    @property
    def run_groups(self) -> tuple[RunGroup, ...]:
        """The candidate's runs, those that read the same folded into one."""
        return fold_runs(self.runs)

    @property
    def baseline_run_groups(self) -> tuple[RunGroup, ...]:
        """The baseline's runs, those that read the same folded into one."""
        return fold_runs(self.baseline_runs)

    @property
    def paired(self) -> PairedRuns | None:
        """The baseline's answer beside the candidate's, metric by metric (None: one side)."""
        if not self.runs or not self.baseline_runs:
            return None
        return pair_runs(self.baseline_run_groups, self.run_groups)


class ReportImage(_Frozen):
    """An image a run shows: its file beside the page, or a remote image's URL (a link).

    Its bytes go into the file, never into ``eval-results.json``.
    """

    src: str
    remote: bool
    data_base64: str | None = Field(default=None, exclude=True)


class Report(_Frozen):
    """Everything the report of one workflow version shows."""

    benchmark: str
    workflow_hash: str
    headline: Headline
    outcome: VersionOutcome  # the gate, breaches, incompleteness and the exit codes
    metrics: tuple[MetricRow, ...]
    comparison: ComparisonReport | None
    cases: tuple[CaseDetail, ...]  # the ones that need attention first
    red_team: RedTeamReport | None = None  # a benchmark with a redTeam section
    variant: str | None = None  # the variant of the workflow this version is (None: itself)
    variants: VariantMatrix | None = None  # the workflow and its variants, when it has any
    calibration: Calibration | None = None  # the judges against people's labels, if any
    images: dict[str, ReportImage] = Field(default_factory=dict)  # by SHA-256: what runs show
    ran_at: datetime | None = None  # when the version's run read the workflow
    written_at: datetime | None = None  # when the report was made
    workflow_checks: tuple[WorkflowCheck, ...] = ()  # the version's workflow checks
    workspace_url: str | None = None  # the version's page in the results workspace
    review_url: str | None = None  # the benchmark's review page there (people label runs)

    @property
    def labels_wanted(self) -> bool:
        """Whether a judge-backed metric is not calibrated yet: people's labels would help."""
        standings = self.calibration.standings if self.calibration is not None else ()
        return any(not standing.calibrated for standing in standings)

    @property
    def failed_checks(self) -> tuple[WorkflowCheck, ...]:
        """The workflow checks that failed."""
        return tuple(check for check in self.workflow_checks if check.status == "fail")

    @property
    def case_by_id(self) -> dict[str, CaseDetail]:
        """The case details by row id, for the cases table to name each drop's cause."""
        return {case.row_id: case for case in self.cases}

    @property
    def placeholders_decide(self) -> bool:
        """Whether the dry-run judge's placeholders decide the runs (nothing else could)."""
        return any(metric.dry_run and metric.decides for metric in self.metrics)

    @property
    def deciding_metrics(self) -> tuple[str, ...]:
        """The metrics whose results decide the runs under the pass rule."""
        return tuple(metric.metric for metric in self.metrics if metric.decides)

    @property
    def directions(self) -> dict[str, Direction]:
        """Each metric's direction, to tell a better score from a worse one."""
        return {metric.metric: metric.direction for metric in self.metrics}
