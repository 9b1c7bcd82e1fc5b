"""The review queue's pages: one run at a time, the judge's verdicts withheld until labelled.

A reviewer says who they are once (the browser keeps it in a cookie); their queue is the
one ``n8n-deepeval review`` or the page prepared (``calibration.review_queue``). The
queue's page shows the next run to label; a run's page shows one run: its label form
while the reviewer has not labelled it, their labels beside the judge's verdicts once
they have. The judge's score and reason reach a page only through
``ReviewQueue.revealed``, which hands them out for a labelled run alone, so they cannot
anchor a label. Pages read the labels on their read-only connection; the forms that
write them are ``review_actions``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.calibration.label_store import LabelKey
from n8n_deepeval_pipeline.calibration.review_items import JudgeVerdict, MetricToLabel, ReviewItem
from n8n_deepeval_pipeline.calibration.review_items import ToolCallShown as ItemCall
from n8n_deepeval_pipeline.calibration.review_queue import (
    Progress,
    QueueError,
    ReviewQueue,
    queue_path,
)
from n8n_deepeval_pipeline.calibration.sampler import DEFAULT_SEED
from n8n_deepeval_pipeline.calibration.status import judged_metrics
from n8n_deepeval_pipeline.report.conversation import ToolCallShown, tool_shown
from n8n_deepeval_pipeline.tables.rows import HumanLabel
from n8n_deepeval_pipeline.workspace.case import WHOLE
from n8n_deepeval_pipeline.workspace.overview import benchmark_names, latest_version
from n8n_deepeval_pipeline.workspace.page_request import PageNotFound, PageRequest
from n8n_deepeval_pipeline.workspace.review_forms import REVIEWER_COOKIE, reviewer_from_cookie
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows
from n8n_deepeval_pipeline.workspace.versions import StoredVersion

DEFAULT_SAMPLE = 50  # (run, metric) pairs a queue prepared here holds, as `review` samples
NOTES = {  # what a page says after a form, by the ``note`` its address carries
    "nothing-to-undo": "Nothing to undo: no label or skip of this queue is left to take back.",
    "prepared": "Your queue is ready: the runs you have labelled are not in it.",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TurnForReview(_Frozen):
    """One turn of the run's conversation, its tool calls as the case page shows them."""

    role: str
    content: str
    tool_calls: tuple[ToolCallShown, ...]
    attack: str | None  # the attack a red team's turn carried


class RunForReview(_Frozen):
    """A run of the queue as the page shows it: everything but the judge's verdicts."""

    item: ReviewItem  # withheld: no judge's verdict in it
    tool_calls: tuple[ToolCallShown, ...]
    turns: tuple[TurnForReview, ...]

    @classmethod
    def of(cls, item: ReviewItem) -> RunForReview:
        """The run, its judge's verdicts left out whatever it was given."""
        withheld = item.withheld()
        turns = tuple(
            TurnForReview(
                role=turn.role,
                content=turn.content,
                tool_calls=_calls(turn.tools),
                attack=turn.attack,
            )
            for turn in withheld.conversation or ()
        )
        return cls(item=withheld, tool_calls=_calls(withheld.tool_calls), turns=turns)


def _calls(calls: Sequence[ItemCall]) -> tuple[ToolCallShown, ...]:
    return tuple(
        tool_shown(
            {
                "name": call.tool,
                "input_parameters": call.arguments,
                "output": call.output,
                "mocked": bool(call.mocked),
            },
            WHOLE,
        )
        for call in calls
    )


class LabelBesideJudge(_Frozen):
    """One metric of a labelled run: the reviewer's label beside the judge's verdict."""

    metric: MetricToLabel
    label: HumanLabel | None
    judge: JudgeVerdict | None

    @property
    def agrees(self) -> bool | None:
        """Whether the two verdicts agree (None: a rating of 3 gave no verdict)."""
        if self.label is None or self.label.passed is None or self.judge is None:
            return None
        return self.label.passed == self.judge.passed


class QueueShown(_Frozen):
    """What a page says of a reviewer's queue (never its items: they hold the judge's verdicts)."""

    version: str
    created_at: datetime
    progress: Progress
    file: Path | None

    @property
    def position(self) -> int:
        """The number of the next run to label, counting from 1."""
        done = self.progress.labelled + self.progress.skipped
        return min(done + 1, self.progress.total)


class PrepareChoices(_Frozen):
    """What a queue prepared on the page can hold: a version, metrics, how many pairs."""

    versions: tuple[StoredVersion, ...]  # the newest first
    chosen: str | None  # the workflow's latest version
    metrics: tuple[str, ...]  # the benchmark's, in its file's order
    judged: tuple[str, ...]  # those that call a judge (chosen unless others are asked for)
    sample: int = DEFAULT_SAMPLE
    seed: int = DEFAULT_SEED  # `review --seed`'s default: the same seed, the same runs


class BenchmarkReview(_Frozen):
    """One benchmark on the review's home page: the reviewer's queue and the labels given."""

    benchmark: str
    queue: QueueShown | None
    mine: int  # labels the reviewer gave
    everyone: int  # labels anyone gave
    reviewers: int


class LabelsRead:
    """The label store's reads on a page's read-only connection: a page never writes labels."""

    def __init__(self, reader: Reader, benchmark: str) -> None:
        self._reader = reader
        self._benchmark = benchmark

    def labels(self) -> list[HumanLabel]:
        """Every label of the benchmark, oldest first."""
        found = model_rows(self._reader, HumanLabel, self._benchmark, "true", [])
        return sorted(found, key=lambda label: label.labelled_at)

    def upsert(self, labels: Sequence[HumanLabel]) -> None:
        """Never called by a page: only a form writes labels."""
        raise PermissionError("a page reads labels: a form writes them")

    def take_back(self, removed: Iterable[LabelKey], restored: Sequence[HumanLabel]) -> None:
        """Never called by a page: only a form takes labels back."""
        raise PermissionError("a page reads labels: a form takes them back")


def reviewer_of(request: Request) -> str | None:
    """Who the browser says is reviewing (None: not said yet)."""
    return reviewer_from_cookie(request.cookies.get(REVIEWER_COOKIE))


def queue_file(benchmark: str, reviewer: str) -> Path:
    return queue_path(settings.home(), benchmark, reviewer)


def _shown(queue: ReviewQueue) -> QueueShown:
    state = queue.state
    return QueueShown(
        version=state.version,
        created_at=state.created_at,
        progress=queue.progress(),
        file=state.file,
    )


def _choices(page: PageRequest) -> PrepareChoices | None:
    """What a queue prepared here can hold (None: the benchmark's file is not loaded)."""
    benchmark = page.files.benchmark(page.benchmark.name)
    if benchmark is None:
        return None
    latest = latest_version(page.versions)
    return PrepareChoices(
        versions=tuple(reversed(page.versions)),
        chosen=latest.key if latest else None,
        metrics=tuple(benchmark.metric_labels),
        judged=tuple(judged_metrics(benchmark)),
    )


def _page(page: PageRequest) -> tuple[dict[str, Any], ReviewQueue | None]:
    """What every review page of a benchmark shows, and the reviewer's queue if they have one."""
    name = page.benchmark.name
    reviewer = reviewer_of(page.request)
    context: dict[str, Any] = {
        "reviewer": reviewer,
        "asked_for": page.query("reviewer"),
        "queue": None,
        "run": None,
        "revealed": (),
        "prepare": None,
        "writes": page.label_stores is not None,
        "note": NOTES.get(page.query("note") or ""),
    }
    if reviewer is None:
        return context, None
    path = queue_file(name, reviewer)
    if not path.exists():
        context["prepare"] = _choices(page)
        return context, None
    queue = ReviewQueue(path, LabelsRead(page.reader, name))
    context["queue"] = _shown(queue)
    return context, queue


def queue(page: PageRequest) -> Mapping[str, Any]:
    """The reviewer's next run to label, its judge withheld; when none is left, what was done."""
    context, opened = _page(page)
    if opened is None:
        return context
    following = opened.next()
    if following is None:
        context["prepare"] = _choices(page)
    else:
        context["run"] = RunForReview.of(following)
    return context


def run(page: PageRequest) -> Mapping[str, Any]:
    """One run of the queue: its label form, or the reviewer's labels beside the judge's."""
    context, opened = _page(page)
    run_id = str(page.request.path_params["run_id"])
    if opened is None:
        if context["reviewer"] is None:
            return context
        raise PageNotFound(
            f"{page.benchmark.name}: no review queue for {context['reviewer']} yet: "
            f"its review page prepares one"
        )
    try:
        item = opened.item(run_id)
    except QueueError as error:
        raise PageNotFound(str(error)) from None
    context["run"] = RunForReview.of(item)
    revealed = opened.revealed(run_id)
    if revealed is not None:
        given = opened.given(run_id)
        judge = {verdict.metric: verdict for verdict in revealed.judge}
        context["revealed"] = tuple(
            LabelBesideJudge(
                metric=metric, label=given.get(metric.metric), judge=judge.get(metric.metric)
            )
            for metric in item.metrics
        )
    return context


def home(page: PageRequest) -> Mapping[str, Any]:
    """Every benchmark the store holds: the reviewer's queue of it and the labels given."""
    reviewer = reviewer_of(page.request)
    benchmarks = []
    for name in benchmark_names(page.reader):
        read = LabelsRead(page.reader, name)
        labels = read.labels()
        path = queue_file(name, reviewer) if reviewer else None
        queue = _shown(ReviewQueue(path, read)) if path is not None and path.exists() else None
        benchmarks.append(
            BenchmarkReview(
                benchmark=name,
                queue=queue,
                mine=sum(1 for label in labels if label.reviewer == reviewer),
                everyone=len(labels),
                reviewers=len({label.reviewer for label in labels}),
            )
        )
    return {"reviewer": reviewer, "asked_for": page.query("reviewer"), "benchmarks": benchmarks}
