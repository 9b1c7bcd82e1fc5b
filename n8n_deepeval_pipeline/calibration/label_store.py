"""What a store of people's labels offers, whichever database keeps them.

The results store keeps ``human_labels`` beside the benchmark's tables (DuckDB, or
PostgreSQL in the distributed profiles); the Dagster wing's resources implement this.
Each write is committed before it returns: a label given is never lost to a crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from n8n_deepeval_pipeline.calibration.judged import JudgedLabel
from n8n_deepeval_pipeline.tables.rows import HumanLabel

LabelKey = tuple[str, str, str]  # run, metric, reviewer


def label_key(label: HumanLabel) -> LabelKey:
    """A label's identity: the run, the metric and who labelled it."""
    return label.run_id, label.metric, label.reviewer


class QueueLabels(Protocol):
    """The labels a review queue reads and writes: people's labels of one benchmark."""

    def upsert(self, labels: Sequence[HumanLabel]) -> None:
        """Write labels, replacing those of the same run, metric and reviewer; committed."""

    def take_back(self, removed: Iterable[LabelKey], restored: Sequence[HumanLabel]) -> None:
        """Remove the labels of ``removed`` and write ``restored`` (an undo); one transaction.

        A crash leaves the labels as they were or as the undo left them, never between.
        """

    def labels(self) -> list[HumanLabel]:
        """Every label of the benchmark."""


class LabelStore(QueueLabels, Protocol):
    """People's labels of one benchmark, and the judge's results beside them."""

    def judged(self) -> list[JudgedLabel]:
        """Every label whose run and metric have a stored score, with that score."""

    def scored(self, run_ids: Iterable[str]) -> dict[tuple[str, str], str]:
        """The (run, metric) pairs among these runs with a stored score → the run's hash."""
