"""The ``metric_scores`` step split into chunks, each scored in a Dagster step of its own.

A chunk is a contiguous range of an ``EvaluationPlan``'s tasks (the plan's order is the
order of the expanded runs, then of the benchmark's metrics, so the same upstream tables
always give the same tasks). Chunks are balanced: their sizes differ by at most one.
A chunk's id names its place and the number of chunks (``c01_of_03``), so the same plan
and chunk size always give the same ids; the ids are Dagster mapping keys (letters,
digits and underscores only) and name the chunk's journal file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend
from n8n_deepeval_pipeline.tables.rows import MetricScore

DEFAULT_CHUNK_SIZE = 1000
"""Evaluations per chunk unless configured (``N8N_DEEPEVAL_CHUNK_SIZE``, run config)."""


@dataclass(frozen=True)
class ScoreChunk:
    """Tasks ``start`` up to (not including) ``stop`` of a plan of ``plan_tasks`` tasks."""

    index: int
    count: int
    start: int
    stop: int
    plan_tasks: int

    @property
    def chunk_id(self) -> str:
        """Stable id: its 1-based place and the number of chunks, zero-padded alike."""
        width = max(2, len(str(self.count)))
        return f"c{self.index + 1:0{width}d}_of_{self.count:0{width}d}"

    @property
    def size(self) -> int:
        """Tasks in this chunk."""
        return self.stop - self.start


def plan_chunks(task_count: int, chunk_size: int) -> list[ScoreChunk]:
    """Balanced chunks of at most ``chunk_size`` tasks; one (maybe empty) chunk at least."""
    if chunk_size < 1:
        raise ValueError(f"chunk size must be at least 1, not {chunk_size}")
    if task_count < 0:
        raise ValueError(f"task count must not be negative, not {task_count}")
    count = max(1, math.ceil(task_count / chunk_size))
    bounds = [index * task_count // count for index in range(count + 1)]
    return [
        ScoreChunk(index, count, bounds[index], bounds[index + 1], task_count)
        for index in range(count)
    ]


@dataclass(frozen=True)
class KnownScores:
    """What the planning step knows before any chunk runs: the rows known up front."""

    rows: list[MetricScore]
    expected: int
    """Score rows the whole asset must end up with (every run × metric)."""


@dataclass(frozen=True)
class ChunkScores:
    """A scored chunk: its rows, and how they were obtained."""

    chunk_id: str
    rows: list[MetricScore]
    evaluated: int
    resumed: int
    pool: dict[str, float | int]
    """The chunk's worker-pool figures (warm-up, overhead, memory)."""
    spend: dict[str, JudgeSpend] = field(default_factory=dict)
    """The judge's spend on the chunk, by Dagster run: this one and the attempts it resumed."""
