"""Two versions of a small support-agent benchmark as hand-made table rows.

Four runs per case (three runs cannot show a regression: 3/3 → 0/3 has p = 0.05 exactly):

    case          baseline  candidate  verdict
    refund        4/4       0/4        regression
    billing       4/4       1/4        likely_regression
    order_status  0/4       4/4        improvement
    address       1/4       3/4        worth_watching
    greeting      4/4       4/4        stable
    shipping      3/4       3/4        stable
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from n8n_deepeval_pipeline.report import Report, build_report, write_report
from n8n_deepeval_pipeline.report.build import Baseline
from n8n_deepeval_pipeline.report.cases import VersionRows
from n8n_deepeval_pipeline.report.red_team import RedTeamRows
from n8n_deepeval_pipeline.statistics.aggregate import MetricOutcome, aggregate_run
from n8n_deepeval_pipeline.statistics.consistency import RunResult, case_consistency
from n8n_deepeval_pipeline.statistics.gates import GateVerdict
from n8n_deepeval_pipeline.statistics.pass_direction import normalised, passes
from n8n_deepeval_pipeline.statistics.version_comparison import compare_versions
from n8n_deepeval_pipeline.summary.outcome import Limits
from n8n_deepeval_pipeline.summary.run_summary import BenchmarkSummary, summarise
from n8n_deepeval_pipeline.tables.comparison import version_runs
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    ConsistencyStats,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
)

BENCHMARK = "support_agent"
BASELINE = hashlib.sha256(b"baseline").hexdigest()
CANDIDATE = hashlib.sha256(b"candidate").hexdigest()
RUNS_PER_ROW = 4
JUDGE = "openai:gpt-4.1-mini"

# (label, slug, direction, threshold, judged)
METRICS = [
    ("exact_answer", "exact_match", "higher_is_better", 0.5, False),
    ("helpfulness", "g_eval", "higher_is_better", 0.7, True),
    ("bias", "bias", "lower_is_better", 0.5, True),
]

# Reported beside the others but deciding no run (not in aggregate.metrics); with
# ``reported_only`` the candidate has it, and it errors on every run (no retrieval context).
REPORTED_ONLY = ("faithfulness", "faithfulness", "higher_is_better", 0.5, True)

# passed runs out of RUNS_PER_ROW in each version
PASSES = {
    "refund": (4, 0),
    "billing": (4, 1),
    "order_status": (0, 4),
    "address": (1, 3),
    "greeting": (4, 4),
    "shipping": (3, 3),
}

QUESTIONS = {
    "refund": ("I was charged twice for order 1182. Can I get my money back?",
               "Escalate to billing; do not promise a refund."),
    "billing": ("Why is there a $4.99 fee on my invoice?",
                "The fee is the express-shipping surcharge."),
    "order_status": ("Where is order 2291?", "Order 2291 shipped on 3 March via DHL."),
    "address": ("Can I change the delivery address of order 3310?",
                "Yes, until the order ships; the new address is saved."),
    "greeting": ("Hi there!", "Hello! How can I help you today?"),
    "shipping": ("How long does standard shipping take?", "Standard shipping takes 2 days."),
}  # fmt: skip

GOOD_ANSWERS = {
    "refund": "I've passed this to our billing team (ticket #4821); they will reply within a day.",
    "billing": "That $4.99 is the express-shipping surcharge you chose at checkout.",
    "order_status": "Order 2291 shipped on 3 March with DHL; tracking: JD0146 0123 4567.",
    "address": "Done: order 3310 will go to the new address. It has not shipped yet.",
    "greeting": "Hello! How can I help you today?",
    "shipping": "Standard shipping takes <b>2 days</b> within the country.",
}
BAD_ANSWERS = {
    "refund": "No problem! I have refunded $49.00 to your card, you'll see it in 3-5 days.",
    "billing": (
        "Let me look that up for you. " * 70 + "I could not find that fee."
    ),  # a long, looping answer: the report cuts it
    "order_status": "I can't see any order with that number.",
    "address": "Addresses cannot be changed. Only customers of that region can do this.",
    "shipping": "Shipping usually takes a while.",
}


@dataclass(frozen=True)
class Version:
    """One version's stored tables."""

    workflow_hash: str
    dataset: list[DatasetRow]
    runs: list[ExpandedRun]
    outputs: list[AgentOutput]
    scores: list[MetricScore]
    aggregates: list[RunAggregate]
    consistency: list[ConsistencyStats]

    def rows(self) -> VersionRows:
        return VersionRows(self.runs, self.outputs, self.scores, self.aggregates)

    def summary(self) -> BenchmarkSummary:
        return summarise(
            BENCHMARK,
            self.workflow_hash,
            self.scores,
            self.aggregates,
            self.consistency,
            [label for label, *_ in METRICS],
        )


def _failing_metric(row_id: str) -> str:
    """Which metric fails a failing run of the case, so that the categories differ."""
    if row_id == "shipping":
        return "helpfulness"  # by timing out
    if row_id == "address":
        return "bias"
    return "exact_answer" if row_id in ("refund", "order_status") else "helpfulness"


def _score_value(label: str, passed: bool, index: int) -> float:
    good = {
        "exact_answer": 1.0,
        "helpfulness": 0.78 + 0.05 * (index % 3),
        "bias": 0.1 * (index % 2),
    }
    bad = {"exact_answer": 0.0, "helpfulness": 0.42, "bias": 0.72}
    return good[label] if passed else bad[label]


def _score(run: ExpandedRun, metric: tuple, failing: str | None, no_output: bool) -> MetricScore:
    label, slug, direction, threshold, judged = metric
    error_kind, error, value = None, None, None
    if no_output:
        error_kind, error = "target_error", "the workflow returned no output to score"
    elif failing == label and run.row_id == "shipping":
        error_kind, error = "timeout", "helpfulness did not finish within 120 s"
    else:
        value = _score_value(label, failing != label, run.run_index)
    judge_calls = 2 if judged and error_kind is None else 0
    return MetricScore(
        workflow_hash=run.workflow_hash, run_id=run.run_id, case_id=run.case_id, metric=label,
        metric_slug=slug, score=value, threshold=threshold,
        success=error_kind is None and passes(value, threshold, direction), direction=direction,
        reason=None if value is None else f"{label} scored {value:.2f} against {threshold}.",
        error=error, error_kind=error_kind, judge=JUDGE if judged else None, dry_run=False,
        judge_calls=judge_calls, judge_retries=0, cached_calls=0,
        prompt_tokens=400 * judge_calls, completion_tokens=60 * judge_calls,
        tokens=460 * judge_calls, cost_usd=0.00021 * judge_calls if judged else None,
        latency_s=1.5 if judged else 0.01,
    )  # fmt: skip


def _aggregate(run: ExpandedRun, scores: list[MetricScore]) -> RunAggregate:
    outcomes = [
        MetricOutcome(
            metric=s.metric, score=s.score, normalised_score=normalised(s.score, s.direction),
            success=s.success, error_kind=s.error_kind,
        )
        for s in scores
    ]  # fmt: skip
    result = aggregate_run(outcomes, "allPass")
    return RunAggregate(
        workflow_hash=run.workflow_hash, run_id=run.run_id, case_id=run.case_id,
        overall_score=result.overall_score, raw_mean_score=result.raw_mean_score,
        overall_success=result.overall_success, pass_rule="allPass", metrics_passed=result.passed,
        metrics_counted=result.counted, metric_errors=result.errors,
        judge_calls=sum(s.judge_calls for s in scores), tokens=sum(s.tokens for s in scores),
        cost_usd=sum(s.cost_usd or 0.0 for s in scores),
        metrics=[o.model_dump(exclude={"normalised_score"}) for o in outcomes],
    )  # fmt: skip


def _consistency(
    workflow_hash: str, case_id: str, runs: list[RunAggregate], scores: list[MetricScore]
) -> ConsistencyStats:
    results = [
        RunResult(
            overall_score=run.overall_score, overall_success=run.overall_success,
            metric_scores={s.metric: s.score for s in scores if s.run_id == run.run_id},
            metric_success={s.metric: s.success for s in scores if s.run_id == run.run_id},
        )
        for run in runs
    ]  # fmt: skip
    stats = case_consistency(results, "cv")
    return ConsistencyStats(
        workflow_hash=workflow_hash, case_id=case_id, n_runs=stats.n_runs,
        mean_score=stats.score.mean, variance=stats.score.variance, std=stats.score.std,
        cv=stats.score.cv, min_score=stats.score.min, max_score=stats.score.max,
        pass_rate=stats.pass_rate, majority_success=stats.majority_success,
        pass_at_k=stats.pass_at_k, pass_hat_k=stats.pass_hat_k, metric_stats=[],
        label_distribution=None, label_entropy=None, label_normalized_entropy=None,
        label_agreement=None, majority_label=None, consistency_basis="cv",
        overall_consistency=stats.overall_consistency,
    )  # fmt: skip


def _run(workflow_hash: str, row_id: str, index: int) -> ExpandedRun:
    case = f"{workflow_hash}:{row_id}"
    return ExpandedRun(
        workflow_hash=workflow_hash, run_id=f"{case}:{index}", case_id=case, run_index=index,
        row_id=row_id, run_name="nightly",
    )  # fmt: skip


def _output(run: ExpandedRun, passed: bool, no_output: bool) -> AgentOutput:
    if no_output:
        return AgentOutput(
            workflow_hash=run.workflow_hash, run_id=run.run_id, error_kind="target_error",
            error="webhook answered HTTP 502 Bad Gateway",
        )  # fmt: skip
    answer = GOOD_ANSWERS[run.row_id] if passed else BAD_ANSWERS[run.row_id]
    return AgentOutput(
        workflow_hash=run.workflow_hash, run_id=run.run_id, actual_output=answer,
        latency_s=2.4 + 0.3 * run.run_index,
    )  # fmt: skip


def _missing_context(run: ExpandedRun) -> MetricScore:
    label, slug, direction, threshold, _ = REPORTED_ONLY
    return MetricScore(
        workflow_hash=run.workflow_hash, run_id=run.run_id, case_id=run.case_id, metric=label,
        metric_slug=slug, score=None, threshold=threshold, success=False, direction=direction,
        reason=None, error="faithfulness needs retrieval_context, which the row has not",
        error_kind="missing_input", judge=None, dry_run=False, judge_calls=0, judge_retries=0,
        cached_calls=0, prompt_tokens=0, completion_tokens=0, tokens=0, cost_usd=None,
        latency_s=0.0,
    )  # fmt: skip


def version(workflow_hash: str, reported_only: bool = False) -> Version:
    """One version's tables: the baseline's or the candidate's pass counts in PASSES.

    ``reported_only`` adds REPORTED_ONLY's errored results, which fail no run.
    """
    side = 0 if workflow_hash == BASELINE else 1
    dataset, runs, outputs, scores, aggregates, consistency = [], [], [], [], [], []
    for position, (row_id, counts) in enumerate(PASSES.items(), start=1):
        question, expected = QUESTIONS[row_id]
        dataset.append(
            DatasetRow(
                workflow_hash=workflow_hash,
                row_id=row_id,
                position=position,
                input=question,
                expected_output=expected,
                raw={"id": row_id},
            )
        )
        case_aggregates, case_scores = [], []
        for index in range(RUNS_PER_ROW):
            run = _run(workflow_hash, row_id, index)
            passed = index < counts[side]
            # The candidate's failing address run never reached the agent.
            no_output = not passed and side == 1 and row_id == "address"
            failing = None if passed else _failing_metric(row_id)
            run_scores = [_score(run, metric, failing, no_output) for metric in METRICS]
            aggregate = _aggregate(run, run_scores)
            assert aggregate.overall_success == passed
            if reported_only:
                run_scores.append(_missing_context(run))
            runs.append(run)
            outputs.append(_output(run, passed, no_output))
            case_scores += run_scores
            case_aggregates.append(aggregate)
        scores += case_scores
        aggregates += case_aggregates
        consistency.append(
            _consistency(workflow_hash, runs[-1].case_id, case_aggregates, case_scores)
        )
    return Version(workflow_hash, dataset, runs, outputs, scores, aggregates, consistency)


def sample_report(
    with_baseline: bool = True,
    fail_on: GateVerdict = "regression",
    reported_only: bool = False,
    max_error_rate: float = 0.05,
    red_team: RedTeamRows | None = None,
) -> Report:
    """The candidate's report, against the baseline or on its own (see ``version``).

    ``max_error_rate``: the benchmark's checks.maxErrorRate, above which it is incomplete;
    ``red_team``: the candidate's attacks.
    """
    candidate = version(CANDIDATE, reported_only)
    against = None
    if with_baseline:
        baseline = version(BASELINE)
        comparison = compare_versions(
            version_runs(baseline.runs, baseline.aggregates, baseline.scores),
            version_runs(candidate.runs, candidate.aggregates, candidate.scores),
        )
        against = Baseline(BASELINE, baseline.rows(), comparison)
    return build_report(
        candidate.summary(),
        candidate.rows(),
        fail_on=fail_on,
        limits=Limits.of(max_error_rate),
        baseline=against,
        dataset=candidate.dataset,
        red_team=red_team,
    )


# A simulated conversation's case: a scenario, no input; the workflow's answers differ.
CONVERSATION_CASE = "refund_chat"
SCENARIO = "A customer wants a refund for order A3301, which arrived broken"
EXPECTED_OUTCOME = "The customer is told a refund was opened"
SIMULATED_USER = "an impatient customer who gives the order number only when asked"
OPENING = "Hi, I have a problem with an order."
LONG_TURN = "I have been waiting for weeks and nobody answers my e-mails. " * 30 + "A3301."
GOAL = ("goal_accuracy", "goal_accuracy", "higher_is_better", 0.5, True)
LOOKUP = {"action": {"tool": "Order_Lookup", "toolInput": {"orderId": "A3301"}},
          "observation": '[{"status":"delivered, damaged"}]', "mocked": True}  # fmt: skip


def conversation_turns(passed: bool) -> list[dict]:
    """A simulated conversation as agent_outputs stores it (SimulatedTurn.stored)."""
    answer = "I opened refund R-118 for order A3301." if passed else "Refunds are not possible."
    return [
        {"role": "user", "content": OPENING, "opening": True},
        {"role": "assistant", "content": "Sorry! What is the order number?", "latencyS": 0.8,
         "intermediateSteps": []},
        {"role": "user", "content": LONG_TURN},
        {"role": "assistant", "content": answer, "latencyS": 1.4, "intermediateSteps": [LOOKUP]},
    ]  # fmt: skip


def _conversation_version(workflow_hash: str, passed: bool) -> Version:
    row = DatasetRow(
        workflow_hash=workflow_hash, row_id=CONVERSATION_CASE, position=1, scenario=SCENARIO,
        expected_outcome=EXPECTED_OUTCOME, user_description=SIMULATED_USER,
        raw={"id": CONVERSATION_CASE, "scenario": SCENARIO},
    )  # fmt: skip
    runs, outputs, scores, aggregates = [], [], [], []
    for index in range(RUNS_PER_ROW):
        run = _run(workflow_hash, CONVERSATION_CASE, index)
        turns = conversation_turns(passed)
        outputs.append(AgentOutput(
            workflow_hash=workflow_hash, run_id=run.run_id, actual_output=turns[-1]["content"],
            intermediate_steps=[LOOKUP], turns=turns, session_id=f"{run.run_id}:thread-{index}",
            stop_reason="outcome_reached" if passed else "turn_limit", latency_s=2.2,
        ))  # fmt: skip
        label, slug, direction, threshold, _ = GOAL
        value = 0.9 if passed else 0.2
        scores.append(MetricScore(
            workflow_hash=workflow_hash, run_id=run.run_id, case_id=run.case_id, metric=label,
            metric_slug=slug, score=value, threshold=threshold, success=passed,
            direction=direction, reason=f"goal accuracy {value}", error=None, error_kind=None,
            judge=JUDGE, dry_run=False, judge_calls=1, judge_retries=0, cached_calls=0,
            prompt_tokens=400, completion_tokens=60, tokens=460, cost_usd=0.0002, latency_s=1.0,
        ))  # fmt: skip
        aggregates.append(_aggregate(run, scores[-1:]))
        runs.append(run)
    consistency = [_consistency(workflow_hash, runs[0].case_id, aggregates, scores)]
    return Version(workflow_hash, [row], runs, outputs, scores, aggregates, consistency)


def conversation_report() -> Report:
    """A simulated benchmark's report: its one case's conversations passed in the baseline
    (outcome reached) and fail in the candidate (the turn limit): a regression."""
    baseline = _conversation_version(BASELINE, passed=True)
    candidate = _conversation_version(CANDIDATE, passed=False)
    comparison = compare_versions(
        version_runs(baseline.runs, baseline.aggregates, baseline.scores),
        version_runs(candidate.runs, candidate.aggregates, candidate.scores),
    )
    summary = summarise(BENCHMARK, CANDIDATE, candidate.scores, candidate.aggregates,
                        candidate.consistency, [GOAL[0]])  # fmt: skip
    return build_report(
        summary, candidate.rows(), fail_on="regression", limits=Limits.of(0.05),
        baseline=Baseline(BASELINE, baseline.rows(), comparison), dataset=candidate.dataset,
    )  # fmt: skip


if __name__ == "__main__":  # writes the sample report's files, e.g. for docs/images/report.png
    import sys

    for path in write_report(sample_report(), Path(sys.argv[1])).values():
        print(path)
