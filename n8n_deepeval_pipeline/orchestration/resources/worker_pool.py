"""The worker pool as a Dagster resource: started with the step that uses it, stopped after.

The process machinery (zygote, workers, slots, recycling) is ``worker.pool``; this
resource only holds its settings and its lifetime.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import dagster as dg
from pydantic import Field, PrivateAttr

from n8n_deepeval_pipeline.evaluation import EvaluationResult, EvaluationTask
from n8n_deepeval_pipeline.worker.pool import DEFAULT_EVALUATOR, DEFAULT_PER_WORKER, WorkerPool


class WorkerPoolResource(dg.ConfigurableResource):
    """The worker pool as a Dagster resource: started on first use, stopped with the step."""

    size: int = 4
    evaluations_per_worker: int = Field(
        default=DEFAULT_PER_WORKER,
        description="Most evaluations in flight on one worker at once (fewer while its CPU "
        "or the judge's pacing binds).",
    )
    timeout_s: float = 300.0
    max_evaluations: int = 500
    max_rss_mb: float = 600.0
    evaluator: str = Field(
        default=DEFAULT_EVALUATOR, description="module:Class the workers evaluate with."
    )

    _pool: WorkerPool | None = PrivateAttr(default=None)

    def _new_pool(self) -> WorkerPool:
        return WorkerPool(
            self.size,
            self.timeout_s,
            max_evaluations=self.max_evaluations,
            max_rss_mb=self.max_rss_mb,
            evaluator=self.evaluator,
            per_worker=self.evaluations_per_worker,
        )

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._pool = self._new_pool()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._pool is not None:
            self._pool.close()

    @property
    def pool(self) -> WorkerPool:
        """The pool of this step (a fresh one outside Dagster execution)."""
        if self._pool is None:
            self._pool = self._new_pool()
        return self._pool

    def evaluate(self, tasks: Iterable[EvaluationTask]) -> Iterator[EvaluationResult]:
        """Stream results of the tasks as the workers finish them."""
        return self.pool.evaluate(tasks)
