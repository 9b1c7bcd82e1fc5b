"""The summary of one benchmark run: what ``n8n-deepeval run`` prints."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from statistics import fmean

from pydantic import BaseModel, computed_field

from n8n_deepeval_pipeline.calibration.status import MetricCalibration
from n8n_deepeval_pipeline.evaluation import (
    OUTAGE_ERROR_KINDS,
    REFUSED_ERROR_KINDS,
    TARGET_ERROR_KINDS,
    is_unjudged,
)
from n8n_deepeval_pipeline.statistics.aggregate import mean_of_present
from n8n_deepeval_pipeline.statistics.version_comparison import run_failure_categories
from n8n_deepeval_pipeline.summary.workflow_usage import (
    WorkflowUsage,
    per_run_money,
    workflow_usage,
)
from n8n_deepeval_pipeline.tables.comparison import run_outcome
from n8n_deepeval_pipeline.tables.ids import row_of_case
from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    MetricScore,
    RunAggregate,
    WorkflowCheck,
    scores_by_run,
)


class MetricSummary(BaseModel):
    """One metric over every run of the partition."""

    metric: str
    direction: str
    mean_score: float | None
    pass_rate: float
    errors: int
    dry_run: bool
    panel: str | None = None  # a judge panel's rule (majority, mean), if a panel scored it
    agreement: float | None = None  # mean share of a panel's judges agreeing with its verdict
    decides: bool = True  # its results decide runs under the pass rule
    calibration: MetricCalibration | None = None  # its standing with people (a judged metric)


class JudgeUsage(BaseModel):
    """What one judge did over the partition (a panel's judges each count on their own)."""

    judge: str
    scores: int  # scores it gave or was asked for
    judge_calls: int
    cached_calls: int
    tokens: int
    cost_usd: float | None


class ConsistencySummary(BaseModel):
    """Consistency over the cases of the partition."""

    cases: int
    mean_cv: float | None
    mean_overall_consistency: float | None
    mean_pass_at_k: dict[int, float]
    mean_pass_hat_k: dict[int, float]
    mean_label_agreement: float | None


class ErrorSummary(BaseModel):
    """Score rows that carry an error, by kind, the ones the judge still owes, failed calls."""

    scores: int
    by_kind: dict[str, int]
    first_message: dict[str, str]
    unjudged: int  # judge or machinery errors: no judgement was made
    judge_outage: int  # the judge did not answer at all (its circuit was open)
    runs_with_unjudged: int
    runs: int  # runs the scores cover
    failed_target_calls: int  # runs whose workflow call failed: nothing to score

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unjudged_rate(self) -> float:
        """The unjudged share of the score rows."""
        return self.unjudged / self.scores if self.scores else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failed_target_call_rate(self) -> float:
        """The share of the runs whose workflow call failed."""
        return self.failed_target_calls / self.runs if self.runs else 0.0


class FailingCase(BaseModel):
    """A case with failed runs, and why they failed."""

    row_id: str
    failed_runs: int
    runs: int
    categories: dict[str, int]  # failure category → runs


class SimulationSummary(BaseModel):
    """The simulated users' conversations of a version: why they stopped, what they cost."""

    conversations: int
    stopped: dict[str, int]  # stopping reason → conversations, most frequent first
    mean_user_turns: float
    judge: str | None
    judge_calls: int
    cached_calls: int
    tokens: int
    cost_usd: float | None


def simulation_summary(outputs: list[AgentOutput]) -> SimulationSummary | None:
    """The simulated users' figures (None: the runs were not simulated)."""
    played = [output.simulation for output in outputs if output.simulation is not None]
    if not played:
        return None
    stopped = Counter(str(output.stop_reason) for output in outputs if output.simulation)
    return SimulationSummary(
        conversations=len(played),
        stopped=dict(stopped.most_common()),
        mean_user_turns=fmean(int(part.get("userTurns", 0)) for part in played),
        judge=next((str(part["judge"]) for part in played if part.get("judge")), None),
        judge_calls=sum(int(part.get("judgeCalls", 0)) for part in played),
        cached_calls=sum(int(part.get("cachedCalls", 0)) for part in played),
        tokens=sum(
            int(part.get("promptTokens", 0)) + int(part.get("completionTokens", 0))
            for part in played
        ),
        cost_usd=_total([part.get("costUsd") for part in played]),
    )


class BenchmarkSummary(BaseModel):
    """The headline figures of one workflow version."""

    benchmark: str
    workflow_hash: str
    runs: int
    pass_rate: float
    mean_overall_score: float | None
    unscored_runs: int = 0
    """Errored runs with no overall score (a failed workflow call): left out of its mean."""
    errors: ErrorSummary
    pass_rule: str
    judge_label: str | None
    judge_calls: int
    cached_calls: int
    judge_retries: int
    tokens: int
    cost_usd: float | None
    dry_run_judge: bool
    judges: list[JudgeUsage] = []
    metrics: list[MetricSummary]
    consistency: ConsistencySummary
    failing_cases: list[FailingCase]
    workflow_checks: list[WorkflowCheck] = []
    """The version's workflow checks (structure, AI wiring, security); they gate nothing."""
    trial: str | None = None
    """A trial of a few rows (``run --filter``): which ones; its results are kept apart."""
    run_id: str | None = None
    """The Dagster run that stored these scores."""
    attempts: dict[str, JudgeSpend] = {}
    """Each Dagster run's judge spend on these scores: this run, and the attempts it resumed
    or that scored the same version beside it (the rows carry only the calls behind them);
    its simulated users' calls included."""
    simulation: SimulationSummary | None = None
    """The simulated users' conversations (a simulated benchmark), apart from the scores."""
    workflow: WorkflowUsage | None = None
    """What the workflow itself spent: its models' tokens and cost, its latency (None: the
    outputs were not read)."""
    variant: str | None = None
    """The variant of the workflow this version is (None: the workflow itself)."""


def _total(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def _mean_by_k(rows: list[dict[int, float]]) -> dict[int, float]:
    ks = sorted({k for row in rows for k in row})
    return {k: fmean(row[k] for row in rows if k in row) for k in ks}


def error_summary(scores: list[MetricScore]) -> ErrorSummary:
    """The scores' errors by kind, how many left a score without a judgement, failed calls."""
    failed = [score for score in scores if score.error_kind]
    return errors_among(failed, len(scores), len({score.run_id for score in scores}))


def errors_among(failed: list[MetricScore], scores: int, runs: int) -> ErrorSummary:
    """``error_summary`` of ``scores`` score rows over ``runs`` runs, given the ones that failed.

    A reader that counts the rows in the database loads only the failed ones.
    """
    unjudged = [score for score in failed if is_unjudged(score.error_kind)]
    first: dict[str, str] = {}
    for score in failed:
        first.setdefault(str(score.error_kind), (score.error or "").splitlines()[0][:300])
    failed_calls = len({s.run_id for s in failed if s.error_kind in TARGET_ERROR_KINDS})
    return ErrorSummary(
        scores=scores,
        by_kind=dict(Counter(str(score.error_kind) for score in failed).most_common()),
        first_message=first,
        unjudged=len(unjudged),
        judge_outage=sum(1 for score in failed if score.error_kind in OUTAGE_ERROR_KINDS),
        runs_with_unjudged=len({score.run_id for score in unjudged}),
        runs=runs,
        failed_target_calls=failed_calls,
    )


def failed_calls_share(errors: ErrorSummary) -> str:
    """The share of the workflow calls that failed, with its counts."""
    return (
        f"{errors.failed_target_call_rate:.1%} of the workflow calls failed "
        f"({errors.failed_target_calls} of {errors.runs} runs)"
    )


def unjudged_share(errors: ErrorSummary) -> str:
    """The share of the scores without a judgement, with its counts."""
    return (
        f"{errors.unjudged_rate:.1%} of the scores have no judgement "
        f"({errors.unjudged} of {errors.scores})"
    )


def judge_usage(scores: list[MetricScore]) -> list[JudgeUsage]:
    """Calls, tokens and cost per judge: a panel row counts once for each of its judges."""
    usage: dict[str, JudgeUsage] = {}
    for score in scores:
        if score.judge_scores is not None:
            parts = score.judge_scores
        elif score.judge is not None and score.panel is None:
            parts = [{**score.model_dump(), "judge": score.judge}]
        else:
            continue  # no judge, or a panel that never reached its judges
        for part in parts:
            seen = usage.get(part["judge"]) or JudgeUsage(
                judge=part["judge"],
                scores=0,
                judge_calls=0,
                cached_calls=0,
                tokens=0,
                cost_usd=None,
            )
            cost = part.get("cost_usd")
            usage[part["judge"]] = seen.model_copy(
                update={
                    "scores": seen.scores + 1,
                    "judge_calls": seen.judge_calls + part["judge_calls"],
                    "cached_calls": seen.cached_calls + part["cached_calls"],
                    "tokens": seen.tokens + part["tokens"],
                    "cost_usd": _total([seen.cost_usd, cost]),
                }
            )
    return list(usage.values())


def _failing_cases(scores: list[MetricScore], aggregates: list[RunAggregate]) -> list[FailingCase]:
    """Cases with failed runs, the most failed first, with each run's failure categories."""
    scores_of = scores_by_run(scores)
    runs: dict[str, list[RunAggregate]] = defaultdict(list)
    for aggregate in aggregates:
        runs[aggregate.case_id].append(aggregate)
    cases = []
    for case, rows in runs.items():
        failed = [row for row in rows if not row.overall_success]
        if failed:
            categories = Counter(
                category
                for row in failed
                for category in run_failure_categories(run_outcome(row, scores_of[row.run_id]))
            )
            cases.append(
                FailingCase(
                    row_id=row_of_case(case),
                    failed_runs=len(failed),
                    runs=len(rows),
                    categories=dict(sorted(categories.items())),
                )
            )
    return sorted(cases, key=lambda case: (-case.failed_runs / case.runs, case.row_id))


def summarise(
    benchmark: str,
    partition: str,
    scores: list[MetricScore],
    aggregates: list[RunAggregate],
    consistency: list[ConsistencyStats],
    metric_order: list[str],
    outputs: list[AgentOutput] | None = None,
    calibration: Sequence[MetricCalibration] = (),
) -> BenchmarkSummary:
    """Headline figures from the partition's stored tables (``outputs``: the workflow's).

    ``calibration``: the judge-backed metrics' standing with people, when the benchmark
    has a calibration section.
    """
    standing = {metric.metric: metric for metric in calibration}
    # The benchmark file's metric order (scores arrive in completion order).
    labels = list(dict.fromkeys(metric_order + [score.metric for score in scores]))
    deciding = {str(outcome["metric"]) for row in aggregates for outcome in row.metrics}
    metrics = []
    for label in labels:
        rows = [score for score in scores if score.metric == label]
        if not rows:
            continue
        metrics.append(
            MetricSummary(
                metric=label,
                direction=rows[0].direction,
                mean_score=mean_of_present([row.score for row in rows]),
                pass_rate=fmean(row.success for row in rows),
                errors=sum(1 for row in rows if row.error_kind),
                dry_run=any(row.dry_run for row in rows),
                panel=next((row.panel for row in rows if row.panel), None),
                agreement=mean_of_present([row.judge_agreement for row in rows]),
                decides=label in deciding,
                calibration=standing.get(label),
            )
        )
    pass_at = [row.pass_at_k for row in consistency]
    pass_hat = [row.pass_hat_k for row in consistency]
    return BenchmarkSummary(
        benchmark=benchmark,
        workflow_hash=partition,
        runs=len(aggregates),
        pass_rate=fmean(row.overall_success for row in aggregates) if aggregates else 0.0,
        mean_overall_score=mean_of_present([row.overall_score for row in aggregates]),
        unscored_runs=sum(1 for row in aggregates if row.overall_score is None),
        errors=error_summary(scores),
        failing_cases=_failing_cases(scores, aggregates),
        pass_rule=aggregates[0].pass_rule if aggregates else "",
        judge_label=next((score.judge for score in scores if score.judge), None),
        judge_calls=sum(score.judge_calls for score in scores),
        cached_calls=sum(score.cached_calls for score in scores),
        judge_retries=sum(score.judge_retries for score in scores),
        tokens=sum(score.tokens for score in scores),
        cost_usd=_total([score.cost_usd for score in scores]),
        dry_run_judge=any(score.dry_run for score in scores),
        judges=judge_usage(scores),
        workflow=None if outputs is None else workflow_usage(outputs),
        metrics=metrics,
        consistency=ConsistencySummary(
            cases=len(consistency),
            mean_cv=mean_of_present([row.cv for row in consistency]),
            mean_overall_consistency=mean_of_present(
                [row.overall_consistency for row in consistency]
            ),
            mean_pass_at_k=_mean_by_k(pass_at),
            mean_pass_hat_k=_mean_by_k(pass_hat),
            mean_label_agreement=mean_of_present([row.label_agreement for row in consistency]),
        ),
    )


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_summary(summary: BenchmarkSummary, incomplete: Collection[str] = ()) -> str:
    """A plain-text table for the terminal.

    ``incomplete``: the kinds of reason the version is incomplete for (its outcome's), so
    that the counts behind them are called so, and no other.
    """
    width = max([len("metric")] + [len(metric.metric) for metric in summary.metrics])
    variant = f" · variant {summary.variant}" if summary.variant else ""
    lines = [
        f"benchmark {summary.benchmark} · workflow {summary.workflow_hash[:12]}{variant}",
        f"runs {summary.runs} · pass rate {summary.pass_rate:.1%} ({summary.pass_rule}) · "
        f"mean overall score {_figure(summary.mean_overall_score)}" + _left_out(summary),
        f"{_judges_heading(summary)} · calls {summary.judge_calls} "
        f"(+{summary.cached_calls} cached, {summary.judge_retries} retries) · "
        f"tokens {summary.tokens} · cost "
        + ("-" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"),
    ]
    lines += _attempts_lines(summary)
    lines += workflow_usage_lines(summary.workflow)
    if summary.simulation is not None:
        lines.append(_simulation_line(summary.simulation))
    lines += _incomplete_lines(summary.errors, incomplete)
    if summary.trial:
        lines.append(f"TRIAL: {summary.trial}; the version's stored results are unchanged")
    if summary.dry_run_judge:
        lines.append(
            "DRY-RUN JUDGE: judge-backed scores are placeholders, not judgements "
            "(set N8N_DEEPEVAL_JUDGE_* to use a real judge)"
        )
        lines += _placeholder_lines(summary.metrics)
    lines += calibration_lines(summary.metrics)
    panels = any(metric.panel for metric in summary.metrics)
    agree = f"  {'agree':>6}" if panels else ""
    lines += [
        "",
        f"{'metric':<{width}}  {'mean':>6}  {'pass':>6}  {'errors':>6}{agree}  direction",
    ]
    for metric in summary.metrics:
        flag = (
            f"  (dry-run{'' if metric.decides else ', decides no run'})" if metric.dry_run else ""
        )
        flag += f"  (panel: {metric.panel})" if metric.panel else ""
        flag += _calibration_flag(metric)
        agreement = f"  {_figure(metric.agreement):>6}" if panels else ""
        lines.append(
            f"{metric.metric:<{width}}  {_figure(metric.mean_score):>6}  "
            f"{metric.pass_rate:>6.1%}  {metric.errors:>6}{agreement}  {metric.direction}{flag}"
        )
    lines += _judge_lines(summary.judges)
    lines += _failing_lines(summary.failing_cases)
    lines += _consistency_lines(summary.consistency)
    if summary.workflow_checks:
        lines += ["", render_workflow_checks(summary.workflow_checks)]
    return "\n".join(lines)


def _placeholder_lines(metrics: list[MetricSummary]) -> list[str]:
    """Whether the dry-run judge's placeholders decide runs, and what decides them if not."""
    deciding = [metric.metric for metric in metrics if metric.decides]
    if not any(metric.dry_run and not metric.decides for metric in metrics):
        if deciding and all(m.dry_run for m in metrics if m.decides):
            return [
                "  every metric that decides a run needs a judge: this pass rate is the "
                "placeholders', and means nothing until a judge is set"
            ]
        return []
    return [
        f"  placeholders decide no run: the pass rate is decided by {', '.join(deciding)} "
        "(no judge needed)"
    ]


def _calibration_flag(metric: MetricSummary) -> str:
    standing = metric.calibration
    if standing is None:
        return ""
    kappa = "" if standing.kappa is None else f", kappa {standing.kappa:.2f}"
    kept_out = ", decides no run" if standing.gated and not metric.decides else ""
    return f"  ({standing.state.replace('_', ' ')}{kappa}{kept_out})"


def calibration_lines(metrics: Sequence[MetricSummary]) -> list[str]:
    """Which judge-backed metrics people's labels back, and why the others are not.

    Whether a metric decides is read off the version's aggregates (``decides``): a gate
    that would leave no metric to decide leaves them all deciding, and says so.
    """
    judged = [metric for metric in metrics if metric.calibration is not None]
    uncalibrated = [m for m in judged if m.calibration and not m.calibration.calibrated]
    if not uncalibrated:
        return ["calibration: every judge-backed metric agrees with people"] if judged else []
    gated = [m for m in uncalibrated if m.calibration and m.calibration.gated]
    kept_out = [metric.metric for metric in gated if not metric.decides]
    deciding = [metric.metric for metric in metrics if metric.decides]
    if kept_out:
        heading = (
            f"CALIBRATION GATE: {', '.join(kept_out)} decide no run and no regression "
            f"(uncalibrated): the pass rate is decided by {', '.join(deciding)}"
        )
    elif gated:
        heading = (
            "CALIBRATION GATE: no calibrated metric is left to decide, so the uncalibrated "
            f"{', '.join(metric.metric for metric in gated)} still decide runs"
        )
    else:
        heading = "calibration: uncalibrated metrics still decide runs (calibration.gate is off)"
    return [heading] + [
        f"  {metric.metric}: {metric.calibration.why}"
        for metric in uncalibrated
        if metric.calibration is not None
    ]


def _cost(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.4f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def workflow_usage_lines(usage: WorkflowUsage | None) -> list[str]:
    """The workflow's own models' tokens and cost, and its latency, when they were measured."""
    if usage is None or not usage.measured_runs:
        return []
    tokens = usage.prompt_tokens + usage.completion_tokens
    estimated = ", n8n's estimate" if usage.estimated else ""
    per_run = f"{usage.tokens_per_run:,.0f}" if usage.tokens_per_run is not None else "-"
    cost = (
        f"cost {_cost(usage.cost_usd)} ({per_run_money(usage.cost_per_run_usd)} per run)"
        if usage.cost_usd is not None
        else f"cost unpriced ({', '.join(usage.unpriced_models)}: no price)"
    )
    return [
        f"workflow models · tokens {tokens:,} in {usage.measured_runs} runs ({per_run} per run"
        f"{estimated}) · {cost} · latency p50 {_seconds(usage.latency_p50_s)} · "
        f"p95 {_seconds(usage.latency_p95_s)}"
    ]


def _simulation_line(simulation: SimulationSummary) -> str:
    """The simulated users in one line: their conversations, why they stopped, their cost."""
    stopped = ", ".join(f"{reason} {count}" for reason, count in simulation.stopped.items())
    return (
        f"simulated users ({simulation.judge}) · conversations {simulation.conversations} "
        f"({stopped}) · mean user turns {simulation.mean_user_turns:.1f} · calls "
        f"{simulation.judge_calls} (+{simulation.cached_calls} cached) · tokens "
        f"{simulation.tokens} · cost {_cost(simulation.cost_usd)}"
    )


def _attempts_lines(summary: BenchmarkSummary) -> list[str]:
    """The judge's spend over every attempt, and this run's own, when other runs spent too."""
    if set(summary.attempts) <= {summary.run_id}:
        return []
    every = sum(summary.attempts.values(), JudgeSpend())
    own = summary.attempts.get(summary.run_id or "", JudgeSpend())
    return [
        f"judge over {len(summary.attempts)} attempts · calls {every.judge_calls} "
        f"(+{every.cached_calls} cached) · tokens {every.tokens} · cost {_cost(every.cost_usd)}"
        f" · this run: calls {own.judge_calls} (+{own.cached_calls} cached) · "
        f"cost {_cost(own.cost_usd)}"
    ]


def _judges_heading(summary: BenchmarkSummary) -> str:
    if len(summary.judges) > 1:
        return f"judges {len(summary.judges)} (each below)"
    return f"judge {summary.judge_label or '-'}"


def _judge_lines(judges: list[JudgeUsage]) -> list[str]:
    """Each judge's calls and cost, when the metrics had more than one."""
    if len(judges) < 2:
        return []
    width = max(len(judge.judge) for judge in judges)
    lines = ["", f"judges: {len(judges)}"]
    for judge in judges:
        cost = "-" if judge.cost_usd is None else f"${judge.cost_usd:.4f}"
        lines.append(
            f"  {judge.judge:<{width}}  scores {judge.scores} · calls {judge.judge_calls} "
            f"(+{judge.cached_calls} cached) · tokens {judge.tokens} · cost {cost}"
        )
    return lines


def _failing_lines(cases: list[FailingCase], shown: int = 10) -> list[str]:
    if not cases:
        return []
    width = max(len(case.row_id) for case in cases[:shown])
    lines = ["", f"failing cases: {len(cases)} (failed runs, why)"]
    for case in cases[:shown]:
        why = ", ".join(f"{category} {n}" for category, n in case.categories.items())
        lines.append(f"  {case.row_id:<{width}}  {case.failed_runs}/{case.runs}  {why}")
    if len(cases) > shown:
        lines.append(f"  … and {len(cases) - shown} more (n8n-deepeval report shows every case)")
    return lines


def _left_out(summary: BenchmarkSummary) -> str:
    """What the mean overall score leaves out: errored runs, unjudged scores."""
    errors = summary.errors
    parts = [f"{summary.unscored_runs} errored runs"] if summary.unscored_runs else []
    if errors.unjudged:
        parts.append(f"{errors.unjudged} unjudged scores in {errors.runs_with_unjudged} runs")
    return f" (leaves out {'; '.join(parts)})" if parts else ""


def _incomplete_lines(errors: ErrorSummary, incomplete: Collection[str]) -> list[str]:
    """Warnings that cannot be missed: failed workflow calls, scores without a judgement.

    "INCOMPLETE RUN" on the counts that make the version incomplete (``run`` exits 3);
    within the error limit the same counts are a warning, about a complete run unless
    something else makes it incomplete.
    """
    within = "; within the error limit" + ("" if incomplete else ", the run is complete")
    calls_over = "failed_workflow_calls" in incomplete
    unjudged_over = bool({"unjudged_scores", "judge_outage"} & set(incomplete))
    lines = []
    if errors.failed_target_calls:
        kinds = [kind for kind in errors.by_kind if kind in TARGET_ERROR_KINDS]
        lines += [
            f"{_heading(calls_over)}{errors.failed_target_calls} of {errors.runs} workflow "
            f"calls failed ({errors.failed_target_call_rate:.1%}{'' if calls_over else within})",
            f"  first error: {errors.first_message[kinds[0]]}",
        ]
    if not errors.unjudged:
        return lines
    kinds = [kind for kind in errors.by_kind if is_unjudged(kind)]
    counts = ", ".join(f"{kind} {errors.by_kind[kind]}" for kind in kinds)
    lines += [
        f"{_heading(unjudged_over)}{errors.unjudged} of {errors.scores} scores have no "
        f"judgement ({errors.unjudged_rate:.1%}: {counts}{'' if unjudged_over else within})",
        f"  first error: {errors.first_message[kinds[0]]}",
    ]
    refusals = [status for status, kind in REFUSED_ERROR_KINDS.items() if kind in errors.by_kind]
    fixes = [f"the judge {_REFUSED[status]}: {_FIX[status]}" for status in refusals]
    if errors.judge_outage and not refusals:  # a circuit opened by refusals is no network fault
        fixes.append("the judge was unreachable: fix it")
    return lines + [f"  {fix} and run again (cached answers stay)" for fix in fixes]


def _heading(incomplete: bool) -> str:
    return "WARNING: INCOMPLETE RUN: " if incomplete else "WARNING: "


# What a judge's refusal says of it, and what makes it answer, by HTTP status.
_REFUSED = {401: "refused the key (HTTP 401)", 403: "refused the calls (HTTP 403)"}
_FIX = {401: "give it a valid key", 403: "check what its account may use (the model, the region)"}


def judge_trouble(errors: ErrorSummary) -> str:
    """Every score left without a judgement, and what kept the judge from giving each.

    The judge's refusals first, then its failed calls, then the scores its open circuit
    failed fast; other unjudged kinds (a worker crash, a timeout) after, by kind.
    """
    left = {kind: count for kind, count in errors.by_kind.items() if is_unjudged(kind)}
    troubles = [
        f"{_REFUSED[status]} for {left.pop(kind)}"
        for status, kind in REFUSED_ERROR_KINDS.items()
        if kind in left
    ]
    failed = {kind: left.pop(kind) for kind in list(left) if kind in _JUDGE_FAILURE_KINDS}
    if failed:
        troubles.append(f"failed for {sum(failed.values())} ({', '.join(failed)})")
    outage = sum(left.pop(kind) for kind in list(left) if kind in OUTAGE_ERROR_KINDS)
    if outage:
        troubles.append(f"was unavailable for {outage}")
    said = f"{errors.unjudged} of {errors.scores} scores have no judgement"
    if troubles:
        said += ": the judge " + " and ".join(
            [", ".join(troubles[:-1]), troubles[-1]] if len(troubles) > 1 else troubles
        )
    if left:
        said += f"; {sum(left.values())} more: " + ", ".join(f"{k} {n}" for k, n in left.items())
    return said


# The judge answered nothing usable after its retries (refusals and outage are apart).
_JUDGE_FAILURE_KINDS = frozenset({"judge_error", "judge_invalid_output"})


def _consistency_lines(consistency: ConsistencySummary) -> list[str]:
    pass_at = " ".join(f"@{k} {v:.3f}" for k, v in consistency.mean_pass_at_k.items())
    pass_hat = " ".join(f"^{k} {v:.3f}" for k, v in consistency.mean_pass_hat_k.items())
    lines = [
        "",
        f"consistency over {consistency.cases} cases: mean cv {_figure(consistency.mean_cv)} · "
        f"overall consistency {_figure(consistency.mean_overall_consistency)}",
        f"pass@k {pass_at} · pass^k {pass_hat}",
    ]
    if consistency.mean_label_agreement is not None:
        lines.append(f"label agreement {consistency.mean_label_agreement:.3f}")
    return lines


_CHECK_STATUSES = {"pass": "pass", "fail": "fail", "not_applicable": "n/a"}
_CHECK_ICONS = {"pass": "✅", "fail": "❌", "not_applicable": "⚪"}


def workflow_check_counts(checks: list[WorkflowCheck]) -> dict[str, int]:
    """How many checks passed, failed and did not apply (every status, zero or not)."""
    counts: Counter[str] = Counter(check.status for check in checks)
    return {status: counts[status] for status in _CHECK_STATUSES}


def render_workflow_checks(checks: list[WorkflowCheck]) -> str:
    """A version's workflow checks in a few lines: the counts, then one line per failure."""
    if not checks:
        return "workflow checks: none stored for this version"
    counts = workflow_check_counts(checks)
    figures = " · ".join(f"{n} {_CHECK_STATUSES[status]}" for status, n in counts.items())
    lines = [f"workflow checks: {figures}"]
    for check in checks:
        if check.status == "fail":
            nodes = f" [{', '.join(check.nodes)}]" if check.nodes else ""
            lines.append(f"  ✗ {check.category}/{check.check_id}: {check.message}{nodes}")
    return "\n".join(lines)


def workflow_checks_markdown(checks: list[WorkflowCheck]) -> str:
    """The checks as a markdown table (the UI shows it in the asset's metadata)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| check | category | status | message | nodes |", "| --- | --- | --- | --- | --- |"]
    lines += [
        f"| {check.check_id} | {check.category} | "
        f"{_CHECK_ICONS[check.status]} {_CHECK_STATUSES[check.status]} | "
        f"{cell(check.message)} | {cell(', '.join(check.nodes))} |"
        for check in checks
    ]
    return "\n".join(lines)
