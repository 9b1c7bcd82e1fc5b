"""The review queue's back end: the functions the review page calls, one reviewer at a time.

``n8n-deepeval review`` samples the runs (``sampler``) and writes a queue file: the items
in the order to show them, and the reviewer's skips and undo history. The page asks for
the next run, gives a label (pass/fail per metric, with an optional 1–5 rating and
comment), skips a run or undoes the last step. A label is upserted into ``human_labels``
as it is given; the queue file is replaced whole (written beside, then renamed), so a
crash leaves the old file or the new one, never half of one. What the reviewer has
labelled comes from the store, not the file: a run labelled in another way (an import)
is not shown again either. The judge's verdicts are handed out only with the label that
answers them (``Labelled.judge``): the page cannot show them before.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.calibration.label_store import LabelKey, QueueLabels, label_key
from n8n_deepeval_pipeline.calibration.label_values import rating_verdict
from n8n_deepeval_pipeline.calibration.review_items import JudgeVerdict, ReviewItem
from n8n_deepeval_pipeline.tables.rows import HumanLabel


class QueueError(ValueError):
    """A request the queue cannot take (an unknown run or metric, a label without a verdict)."""


class MetricLabel(BaseModel):
    """A reviewer's label of one metric: pass or fail, optionally a 1–5 rating and comment."""

    model_config = ConfigDict(frozen=True)

    passed: bool | None = None  # None: taken from the rating (4–5 pass, 1–2 fail)
    rating: int | None = Field(default=None, ge=1, le=5)
    comment: str | None = None


class UndoStep(BaseModel):
    """What one step changed, to put it back: the labels it replaced, or the run it skipped."""

    model_config = ConfigDict(frozen=True)

    action: Literal["label", "skip"]
    run_id: str
    replaced: tuple[HumanLabel, ...] = ()  # the reviewer's earlier labels of the run
    written: tuple[tuple[str, str, str], ...] = ()  # the keys the step wrote


class QueueFile(BaseModel):
    """What the queue file holds."""

    benchmark: str
    reviewer: str
    version: str
    created_at: datetime
    items: list[ReviewItem]
    file: Path | None = None  # the benchmark file it was prepared from (the page loads it)
    skipped: list[str] = []
    undo: list[UndoStep] = []


class Progress(BaseModel):
    """How far the reviewer is."""

    model_config = ConfigDict(frozen=True)

    labelled: int
    skipped: int
    remaining: int
    total: int


class Labelled(BaseModel):
    """The answer to a label: what the judge said of the run, now that it may be shown."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    judge: tuple[JudgeVerdict, ...]
    progress: Progress


def queue_path(home: Path, benchmark: str, reviewer: str) -> Path:
    """Where a reviewer's queue of a benchmark is kept, under the project's home.

    The name is the reviewer's, made safe for a file name, with a digest of it, so that
    two names that read alike never share a file.
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", reviewer).strip("._")[:40] or "reviewer"
    digest = hashlib.sha256(reviewer.encode("utf-8")).hexdigest()[:8]
    return home / "review" / benchmark / f"{safe}-{digest}.json"


def read_queue_file(path: Path) -> QueueFile:
    """What a queue file holds."""
    return QueueFile.model_validate_json(path.read_text(encoding="utf-8"))


def write_queue_file(path: Path, queue: QueueFile) -> None:
    """Replace the queue file whole: written beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(queue.model_dump_json(indent=1), encoding="utf-8")
    os.replace(partial, path)


def prepare_queue(
    home: Path,
    benchmark: str,
    reviewer: str,
    version: str,
    items: list[ReviewItem],
    file: Path | None = None,
) -> Path:
    """Write a reviewer's new queue (replacing theirs: its skips and undo history); its path.

    ``version``: the version key sampled, or what else was (production traffic).
    """
    path = queue_path(home, benchmark, reviewer)
    settings.private_dir(path.parent)  # what people were shown of the runs, and by whom
    queue = QueueFile(
        benchmark=benchmark,
        reviewer=reviewer,
        version=version,
        created_at=datetime.now(UTC),
        items=items,
        file=None if file is None else file.resolve(),
    )
    write_queue_file(path, queue)
    return path


class ReviewQueue:
    """One reviewer's queue of one benchmark version: next run, label, skip, undo."""

    def __init__(self, path: Path, store: QueueLabels, state: QueueFile | None = None) -> None:
        """``state``: the queue file's contents, when the caller has read them already."""
        self.path = path
        self.store = store
        self.state = state or read_queue_file(path)

    @property
    def reviewer(self) -> str:
        """Who reviews this queue."""
        return self.state.reviewer

    def _item(self, run_id: str) -> ReviewItem:
        found = next((item for item in self.state.items if item.run_id == run_id), None)
        if found is None:
            raise QueueError(f"run {run_id} is not in {self.reviewer}'s queue")
        return found

    def item(self, run_id: str) -> ReviewItem:
        """One run of the queue, without the judge's verdicts; QueueError when not in it."""
        return self._item(run_id).withheld()

    def given(self, run_id: str) -> dict[str, HumanLabel]:
        """The reviewer's labels of a run of the queue, by metric."""
        item = self._item(run_id)
        mine = self._mine()
        keys = {metric.metric: (run_id, metric.metric, self.reviewer) for metric in item.metrics}
        return {metric: mine[key] for metric, key in keys.items() if key in mine}

    def revealed(self, run_id: str) -> Labelled | None:
        """The judge's verdicts of a run the reviewer has labelled (None: not yet, withheld)."""
        item = self._item(run_id)
        if not self._labelled(item, self._mine()):
            return None
        return Labelled(run_id=run_id, judge=item.judge, progress=self.progress())

    def _mine(self) -> dict[LabelKey, HumanLabel]:
        return {
            label_key(label): label
            for label in self.store.labels()
            if label.reviewer == self.reviewer
        }

    def _labelled(self, item: ReviewItem, mine: dict[LabelKey, HumanLabel]) -> bool:
        return all((item.run_id, m.metric, self.reviewer) in mine for m in item.metrics)

    def progress(self) -> Progress:
        """Runs labelled, skipped and left."""
        mine = self._mine()
        labelled = sum(1 for item in self.state.items if self._labelled(item, mine))
        skipped = sum(
            1
            for item in self.state.items
            if item.run_id in self.state.skipped and not self._labelled(item, mine)
        )
        total = len(self.state.items)
        return Progress(
            labelled=labelled, skipped=skipped, remaining=total - labelled - skipped, total=total
        )

    def next(self) -> ReviewItem | None:
        """The next run to show, without the judge's verdicts (None: the queue is done)."""
        mine = self._mine()
        for item in self.state.items:
            if item.run_id not in self.state.skipped and not self._labelled(item, mine):
                return item.withheld()
        return None

    def label(
        self, run_id: str, labels: dict[str, MetricLabel], now: datetime | None = None
    ) -> Labelled:
        """Label a run's metrics (each one under review), then reveal the judge's verdicts."""
        item = self._item(run_id)
        wanted = {metric.metric for metric in item.metrics}
        unknown = sorted(set(labels) - wanted)
        missing = sorted(wanted - set(labels))
        if unknown or missing:
            said = f"unknown metrics {unknown}" if unknown else f"no label for {missing}"
            raise QueueError(f"run {run_id}: {said} (under review: {sorted(wanted)})")
        when = now or datetime.now(UTC)
        rows = [self._row(item, metric, given, when) for metric, given in labels.items()]
        mine = self._mine()
        replaced = tuple(mine[key] for key in map(label_key, rows) if key in mine)
        self.store.upsert(rows)
        step = UndoStep(
            action="label", run_id=run_id, replaced=replaced, written=tuple(map(label_key, rows))
        )
        self._save(undo=[*self.state.undo, step], skipped=self._without(run_id))
        return Labelled(run_id=run_id, judge=item.judge, progress=self.progress())

    def _row(self, item: ReviewItem, metric: str, given: MetricLabel, when: datetime) -> HumanLabel:
        passed = given.passed
        if passed is None and given.rating is not None:
            passed = rating_verdict(given.rating)
        if passed is None and given.rating is None:
            raise QueueError(f"run {item.run_id}, metric {metric}: give pass/fail or a rating")
        return HumanLabel(
            workflow_hash=item.workflow_hash,
            run_id=item.run_id,
            metric=metric,
            reviewer=self.reviewer,
            passed=passed,
            rating=given.rating,
            comment=given.comment or None,
            labelled_at=when,
            source="review",
        )

    def _without(self, run_id: str) -> list[str]:
        return [skipped for skipped in self.state.skipped if skipped != run_id]

    def skip(self, run_id: str) -> ReviewItem | None:
        """Leave a run unlabelled (not shown again); the next run to show."""
        self._item(run_id)
        step = UndoStep(action="skip", run_id=run_id)
        self._save(undo=[*self.state.undo, step], skipped=[*self._without(run_id), run_id])
        return self.next()

    def undo(self) -> ReviewItem | None:
        """Take back the last label or skip; the run it concerned, to show again.

        A label taken back puts back the reviewer's earlier labels of that run, if it had
        replaced some, or removes them. None: nothing to undo.
        """
        if not self.state.undo:
            return None
        *rest, step = self.state.undo
        skipped = self._without(step.run_id)
        if step.action == "label":
            # The labels first, in one transaction, then the step off the queue file: a
            # crash between leaves the step in the file, and undoing it again (removing and
            # restoring the same labels) finishes it.
            kept = {label_key(label) for label in step.replaced}
            removed = [key for key in step.written if key not in kept]
            self.store.take_back(removed, list(step.replaced))
        self._save(undo=rest, skipped=skipped)
        return self._item(step.run_id).withheld()

    def _save(self, undo: list[UndoStep], skipped: list[str]) -> None:
        self.state = self.state.model_copy(update={"undo": undo, "skipped": skipped})
        write_queue_file(self.path, self.state)
