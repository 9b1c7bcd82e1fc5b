"""What the judge cost each Dagster run (attempt) that scored a version.

A version's score rows carry the calls that produced them; an interrupted run's calls on
evaluations it never finished, or that a later attempt scored again, are in no row. The
scoring journal keeps every finished evaluation tagged with the run that made it (its
evaluations, cache hits and retries), and the call ledger every call the judge answered,
tagged so too, the moment it arrived (its calls, tokens and cost): a run killed half-way
is charged every call it was answered, its simulated users' included.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.call_ledger import AnsweredCall
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.tables.rows import MetricScore


class JudgeSpend(BaseModel):
    """Judge calls, tokens and cost of the evaluations one run finished.

    Its simulated users' calls count too: calls, tokens and cost without an evaluation.
    """

    evaluations: int = 0
    judge_calls: int = 0
    cached_calls: int = 0
    judge_retries: int = 0
    tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: JudgeSpend) -> JudgeSpend:
        costs = [cost for cost in (self.cost_usd, other.cost_usd) if cost is not None]
        return JudgeSpend(
            evaluations=self.evaluations + other.evaluations,
            judge_calls=self.judge_calls + other.judge_calls,
            cached_calls=self.cached_calls + other.cached_calls,
            judge_retries=self.judge_retries + other.judge_retries,
            tokens=self.tokens + other.tokens,
            cost_usd=sum(costs) if costs else None,
        )

    @classmethod
    def of(cls, row: MetricScore) -> JudgeSpend:
        """The spend of one finished evaluation."""
        return cls(
            evaluations=1,
            judge_calls=row.judge_calls,
            cached_calls=row.cached_calls,
            judge_retries=row.judge_retries,
            tokens=row.tokens,
            cost_usd=row.cost_usd,
        )


def spend_by_run(rows: Iterable[tuple[str, MetricScore]]) -> dict[str, JudgeSpend]:
    """(run id, row of an evaluation it finished) → each run's spend."""
    spend: dict[str, JudgeSpend] = {}
    for run_id, row in rows:
        spend[run_id] = spend.get(run_id, JudgeSpend()) + JudgeSpend.of(row)
    return spend


def merged(parts: Iterable[dict[str, JudgeSpend]]) -> dict[str, JudgeSpend]:
    """Each run's spend over several chunks."""
    total: dict[str, JudgeSpend] = {}
    for part in parts:
        for run_id, spend in part.items():
            total[run_id] = total.get(run_id, JudgeSpend()) + spend
    return total


def with_answered_calls(
    spend: dict[str, JudgeSpend], calls: Iterable[AnsweredCall], prices: PriceTable
) -> dict[str, JudgeSpend]:
    """Each run's spend with its calls, tokens and cost as the judge answered them.

    A run the ledger has no call of (it made none, or wrote no ledger) keeps its own.
    """
    answered: dict[str, JudgeSpend] = {}
    for call in calls:
        one = JudgeSpend(
            judge_calls=1,
            tokens=call.prompt_tokens + call.completion_tokens,
            cost_usd=prices.cost(call.model, call.prompt_tokens, call.completion_tokens),
        )
        answered[call.attempt] = answered.get(call.attempt, JudgeSpend()) + one
    every = dict.fromkeys([*spend, *answered])
    return {
        run: spend.get(run, JudgeSpend()).model_copy(
            update=answered[run].model_dump(include={"judge_calls", "tokens", "cost_usd"})
        )
        if run in answered
        else spend[run]
        for run in every
    }
