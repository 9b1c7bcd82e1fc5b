"""The report of one workflow version: what the HTML page, the JSON and the PR comment show."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.report.verdicts import attention_rank, is_flagged
from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.statistics.version_comparison import (
    CaseComparison,
    CategoryDrift,
    FailureCategory,
    OverallPassRate,
    Verdict,
    VersionComparison,
)

# Near the limit a cut moves back to the last space, so that words stay whole.
_WORD_BOUNDARY_SLACK = 0.8


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Excerpt(_Frozen):
    """The beginning of a text that may be long, and the length of the whole."""

    text: str
    chars: int
    truncated: bool

    @classmethod
    def of(cls, text: str, limit: int) -> Excerpt:
        """At most ``limit`` characters of ``text``, ending on a word when one ends near it."""
        if len(text) <= limit:
            return cls(text=text, chars=len(text), truncated=False)
        cut = text.rfind(" ", int(limit * _WORD_BOUNDARY_SLACK), limit)
        kept = text[: cut if cut > 0 else limit].rstrip()
        return cls(text=kept, chars=len(text), truncated=True)


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
    unjudged_scores: int
    output_errors: int  # runs whose workflow gave no output

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


class ComparisonReport(_Frozen):
    """The report's version (the candidate) against a baseline version."""

    baseline_hash: str | None
    result: VersionComparison

    @property
    def ordered_cases(self) -> tuple[CaseComparison, ...]:
        """Every case, the flagged ones first, the most serious first."""
        return tuple(
            sorted(self.result.cases, key=lambda case: (attention_rank(case.verdict), case.row_id))
        )

    @property
    def flagged_cases(self) -> tuple[CaseComparison, ...]:
        """Cases whose verdict asks for a look, the most serious first."""
        return tuple(case for case in self.ordered_cases if is_flagged(case.verdict))

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


class RunDetail(_Frozen):
    """One run of a case: its output, why it failed and every metric's result."""

    run_id: str
    run_index: int
    passed: bool
    overall_score: float | None
    output: Excerpt | None
    output_error: Excerpt | None
    latency_s: float | None
    failure_categories: tuple[FailureCategory, ...]
    metrics: tuple[MetricResult, ...]


class CaseDetail(_Frozen):
    """One dataset row's runs in this version, with its verdict against the baseline."""

    row_id: str
    input: Excerpt | None
    expected_output: Excerpt | None
    verdict: Verdict | None
    passed: int  # runs that passed
    runs: tuple[RunDetail, ...]


class Report(_Frozen):
    """Everything the report of one workflow version shows."""

    benchmark: str
    workflow_hash: str
    headline: Headline
    metrics: tuple[MetricRow, ...]
    comparison: ComparisonReport | None
    cases: tuple[CaseDetail, ...]  # the ones that need attention first

    @property
    def directions(self) -> dict[str, Direction]:
        """Each metric's direction, to tell a better score from a worse one."""
        return {metric.metric: metric.direction for metric in self.metrics}
