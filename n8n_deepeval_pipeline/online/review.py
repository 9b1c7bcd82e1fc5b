"""Production executions in the review queue: their online scores sampled, their text read back.

``online_scores`` keeps each execution's (or chat session's) scores, not its text: the items
a sample picks are read again from n8n (their executions) into the run a reviewer sees, as
the online step read them to score them. An execution n8n has deleted since shows no text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.review_items import (
    ReviewItem,
    candidate,
    judge_verdict,
    review_items,
)
from n8n_deepeval_pipeline.calibration.sampler import Candidate, sample
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.online.cursor import ScoreItem
from n8n_deepeval_pipeline.online.scoring import OnlineRuns, OnlineScore, fetch_executions
from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash


def _directions(benchmark: Benchmark) -> dict[str, Direction]:
    return {metric.result_label(): entry_for(metric).direction for metric in benchmark.metrics}


def online_candidates(
    benchmark: Benchmark, scores: Sequence[OnlineScore], metrics: Collection[str]
) -> list[Candidate]:
    """The online scores of ``metrics`` a reviewer could label: judged, not placeholders."""
    directions = _directions(benchmark)
    found = [
        candidate(score.score_id, score, directions.get(score.metric, "higher_is_better"))
        for score in scores
        if score.metric in metrics
    ]
    return [pair for pair in found if pair is not None]


def _item(score: OnlineScore) -> ScoreItem:
    return ScoreItem(
        kind=score.kind,
        key=score.item_key,
        execution_ids=[int(number) for number in score.execution_ids],
        started_at=score.started_at,
        n8n_version_id=score.n8n_version_id,
        workflow_hash=score.workflow_hash,
    )


def online_review_items(
    benchmark: Benchmark,
    scores: Sequence[OnlineScore],
    metrics: Sequence[str],
    count: int,
    client: N8nClient,
    workflow: dict[str, Any],
    labelled: Collection[tuple[str, str]] = (),
    seed: int = 0,
) -> list[ReviewItem]:
    """A stratified, weighted sample of production items, their text read from n8n."""
    picked = sample(online_candidates(benchmark, scores, metrics), count, labelled, metrics, seed)
    chosen = {candidate.run_id for candidate in picked}
    items = {score.score_id: _item(score) for score in scores if score.score_id in chosen}
    runs = OnlineRuns(
        list(items.values()),
        fetch_executions(client, list(items.values())),
        workflow,
        workflow_hash(workflow),
    )
    directions = _directions(benchmark)
    verdicts = {
        (score.score_id, score.metric): judge_verdict(
            score, directions.get(score.metric, "higher_is_better")
        )
        for score in scores
    }
    return review_items(
        benchmark, picked, runs.runs, runs.outputs, runs.rows, verdicts, kind="online"
    )
