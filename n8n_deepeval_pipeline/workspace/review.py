"""The review queue in the browser: one run at a time, the judge's verdicts withheld until labelled.

A reviewer says who they are once (the browser keeps it in a cookie); their queue is the
one ``n8n-deepeval review`` or this page prepared (``calibration.review_queue``). The
queue's page shows the next run to label; a run's page shows one run: its label form
while the reviewer has not labelled it, their labels beside the judge's verdicts once
they have. The judge's score and reason reach a page only through
``ReviewQueue.revealed``, which hands them out for a labelled run alone, so they cannot
anchor a label.

Pages read the labels on their read-only connection. The forms write through the
calibration back end, with the label store the serving command gave the app, one form at
a time on a reviewer's queue and in turns with the pages' reads. Nothing here writes
results.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.calibration.label_store import LabelKey
from n8n_deepeval_pipeline.calibration.review_items import (
    JudgeVerdict,
    MetricToLabel,
    ReviewItem,
    RunsToReview,
    sampled_items,
)
from n8n_deepeval_pipeline.calibration.review_items import ToolCallShown as ItemCall
from n8n_deepeval_pipeline.calibration.review_queue import (
    Progress,
    QueueError,
    QueueFile,
    ReviewQueue,
    prepare_queue,
    queue_path,
)
from n8n_deepeval_pipeline.calibration.status import judged_metrics
from n8n_deepeval_pipeline.report.conversation import ToolCallShown, tool_shown
from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError, resolve_version
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    HumanLabel,
    MetricScore,
)
from n8n_deepeval_pipeline.workspace.case import WHOLE
from n8n_deepeval_pipeline.workspace.overview import benchmark_names, latest_version
from n8n_deepeval_pipeline.workspace.page_request import (
    ActionRefused,
    ActionRequest,
    PageNotFound,
    PageRequest,
)
from n8n_deepeval_pipeline.workspace.review_forms import (
    REVIEWER_COOKIE,
    FormProblem,
    cookie_value,
    label_fields,
    reviewer_from_cookie,
    reviewer_name,
)
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, reading, writing_labels
from n8n_deepeval_pipeline.workspace.versions import StoredVersion, find_version, scored_versions

DEFAULT_SAMPLE = 50  # (run, metric) pairs a queue prepared here holds, as `review` samples
MAX_SAMPLE = 10_000
REMEMBERED_S = 365 * 24 * 3600  # how long the browser keeps the reviewer's name
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


class BenchmarkReview(_Frozen):
    """One benchmark on the review's home page: the reviewer's queue and the labels given."""

    benchmark: str
    queue: QueueShown | None
    mine: int  # labels the reviewer gave
    everyone: int  # labels anyone gave
    reviewers: int


class _LabelsRead:
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

    def delete(self, keys: Iterable[LabelKey]) -> None:
        """Never called by a page: only a form takes labels back."""
        raise PermissionError("a page reads labels: a form takes them back")


def reviewer_of(request: Request) -> str | None:
    """Who the browser says is reviewing (None: not said yet)."""
    return reviewer_from_cookie(request.cookies.get(REVIEWER_COOKIE))


def _queue_file(benchmark: str, reviewer: str) -> Path:
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
    path = _queue_file(name, reviewer)
    if not path.exists():
        context["prepare"] = _choices(page)
        return context, None
    queue = ReviewQueue(path, _LabelsRead(page.reader, name))
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
        read = _LabelsRead(page.reader, name)
        labels = read.labels()
        path = _queue_file(name, reviewer) if reviewer else None
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


# The forms.


def _href(request: Request, name: str, note: str | None = None, **params: str) -> str:
    quoted = {key: quote(value, safe=":@") for key, value in params.items()}
    path = str(request.app.url_path_for(name, **quoted))
    return path + (f"?note={note}" if note else "")


def _go(path: str) -> Response:
    """Where the browser goes after a form: a GET of ``path`` (refreshing it posts nothing)."""
    return RedirectResponse(path, status_code=303)


def _local(path: str | None) -> str | None:
    """A path on this server to go back to (never another site's address)."""
    if path and path.startswith("/") and not path.startswith("//") and "\\" not in path:
        return path
    return None


def set_reviewer(action: ActionRequest) -> Response:
    """Remember who is reviewing in this browser; back to the page the form was on."""
    back = _local(action.field("next")) or _href(action.request, "review_home")
    try:
        name = reviewer_name(action.field("reviewer"))
    except FormProblem as problem:
        raise ActionRefused(400, str(problem), back) from None
    response = _go(back)
    response.set_cookie(
        REVIEWER_COOKIE,
        cookie_value(name),
        max_age=REMEMBERED_S,
        path="/",
        httponly=True,  # only the server reads it
        samesite="lax",  # another site's form posts without it, so it labels nothing
    )
    return response


@dataclass(frozen=True)
class _Posted:
    """A review form of a benchmark's queue: who posted it, and their queue's file."""

    benchmark: str
    reviewer: str
    path: Path
    back: str  # the queue's page


def _posted(action: ActionRequest) -> _Posted:
    name = str(action.request.path_params["benchmark"])
    back = _href(action.request, "review", benchmark=name)
    reviewer = reviewer_of(action.request)
    if reviewer is None:
        raise ActionRefused(
            400, "say who is reviewing first: the review page asks for your name", back
        )
    with reading(action.source) as reader:
        if name not in benchmark_names(reader):
            raise ActionRefused(
                404, f"no results of a benchmark named {name!r} in {action.source.described}"
            )
    return _Posted(name, reviewer, _queue_file(name, reviewer), back)


def _run_id(action: ActionRequest, posted: _Posted) -> str:
    found = action.field("run_id")
    if found is None:
        raise ActionRefused(400, "field run_id: name the run of the queue", posted.back)
    return found


_queues_lock = threading.Lock()
_queue_locks: dict[Path, threading.Lock] = {}


def _queue_lock(path: Path) -> threading.Lock:
    """The lock of one reviewer's queue.

    Its file is read, changed and replaced whole: two forms of one reviewer at once would
    lose one's change. Other reviewers' forms go on beside it.
    """
    with _queues_lock:
        return _queue_locks.setdefault(path, threading.Lock())


@contextmanager
def _opened(action: ActionRequest, posted: _Posted) -> Iterator[ReviewQueue]:
    """The reviewer's queue with the label store: one form at a time on it, no page reading.

    (Pages read a DuckDB store on connections this process's label store cannot open beside.)
    """
    with _queue_lock(posted.path):
        if not posted.path.exists():
            raise ActionRefused(
                404, f"{posted.benchmark}: no review queue for {posted.reviewer}", posted.back
            )
        state = QueueFile.model_validate_json(posted.path.read_text(encoding="utf-8"))
        if action.label_stores is None:
            raise ActionRefused(
                503,
                "this workspace was served without a label store, so it writes no labels: "
                "n8n-deepeval ui or n8n-deepeval review serve one that does",
                posted.back,
            )
        benchmark = action.files.benchmark(posted.benchmark, also=state.file)
        if benchmark is None:
            raise ActionRefused(
                409,
                f"{posted.benchmark}: its benchmark file is not among the files this workspace "
                "loads: n8n-deepeval review FILE serves its queue",
                posted.back,
            )
        store = action.label_stores(benchmark)
        with writing_labels(action.source):
            yield ReviewQueue(posted.path, store)


def label(action: ActionRequest) -> Response:
    """Label a run of the queue; then its page, the judge's verdicts beside the labels."""
    posted = _posted(action)
    run_id = _run_id(action, posted)
    again = _href(action.request, "review_run", benchmark=posted.benchmark, run_id=run_id)
    try:
        labels = label_fields(action.form)
    except FormProblem as problem:
        raise ActionRefused(400, f"run {run_id}: {problem}", again) from None
    with _opened(action, posted) as opened:
        try:
            opened.label(run_id, labels)
        except QueueError as error:
            raise ActionRefused(400, str(error), posted.back) from None
    return _go(again)


def skip(action: ActionRequest) -> Response:
    """Leave a run of the queue unlabelled; then the next one."""
    posted = _posted(action)
    run_id = _run_id(action, posted)
    with _opened(action, posted) as opened:
        try:
            opened.skip(run_id)
        except QueueError as error:
            raise ActionRefused(400, str(error), posted.back) from None
    return _go(posted.back)


def undo(action: ActionRequest) -> Response:
    """Take back the reviewer's last label or skip; then the run it concerned."""
    posted = _posted(action)
    with _opened(action, posted) as opened:
        back = opened.undo()
    if back is None:
        return _go(_href(action.request, "review", "nothing-to-undo", benchmark=posted.benchmark))
    return _go(_href(action.request, "review_run", benchmark=posted.benchmark, run_id=back.run_id))


def prepare(action: ActionRequest) -> Response:
    """A new queue for the reviewer: a version's judged runs sampled as `review` samples them."""
    posted = _posted(action)
    settings_of = action.files.settings_of(posted.benchmark)
    benchmark = action.files.benchmark(posted.benchmark)
    if benchmark is None or settings_of.file is None:
        raise ActionRefused(
            409,
            f"{posted.benchmark}: its benchmark file is not among the files this workspace "
            f"loads: n8n-deepeval review FILE --reviewer NAME prepares the queue",
            posted.back,
        )
    metrics = _metrics(action, benchmark.metric_labels, judged_metrics(benchmark), posted.back)
    count = _sample(action, posted.back)
    with reading(action.source) as reader:
        versions = scored_versions(reader, posted.benchmark)
        chosen = _version(action, versions, posted.back)
        rows = _runs_to_review(reader, posted.benchmark, chosen.workflow_hash)
        done = {
            (label.run_id, label.metric)
            for label in _LabelsRead(reader, posted.benchmark).labels()
            if label.reviewer == posted.reviewer
        }
    items = sampled_items(benchmark, rows, metrics, count, done)
    if not items:
        raise ActionRefused(
            409,
            f"nothing to review in {chosen.key} for {posted.reviewer}: every judged score of "
            f"{', '.join(metrics)} is labelled, or none was judged (dry-run placeholders are "
            "not judgements)",
            posted.back,
        )
    with _queue_lock(posted.path):
        prepare_queue(
            settings.home(), posted.benchmark, posted.reviewer, chosen.key, items, settings_of.file
        )
    return _go(_href(action.request, "review", "prepared", benchmark=posted.benchmark))


def _metrics(
    action: ActionRequest, known: Sequence[str], judged: Sequence[str], back: str
) -> list[str]:
    asked = [value for value in action.form.getlist("metric") if isinstance(value, str)]
    unknown = [name for name in asked if name not in known]
    if unknown:
        raise ActionRefused(
            400,
            f"field metric: {unknown[0]!r} is not one of the benchmark's metrics "
            f"({', '.join(known)})",
            back,
        )
    return asked or list(judged)


def _sample(action: ActionRequest, back: str) -> int:
    given = action.field("sample")
    if given is None:
        return DEFAULT_SAMPLE
    if not given.isdigit() or not 1 <= int(given) <= MAX_SAMPLE:
        raise ActionRefused(
            400, f"field sample: {given!r}: give a number of pairs from 1 to {MAX_SAMPLE}", back
        )
    return int(given)


def _version(action: ActionRequest, versions: Sequence[StoredVersion], back: str) -> StoredVersion:
    asked = action.field("version")
    latest = latest_version(list(versions))
    if asked is None:
        if latest is None:
            raise ActionRefused(409, "no version of the benchmark is scored yet", back)
        return latest
    try:
        full = resolve_version([version.key for version in versions], asked)
    except UnknownVersionError as error:
        raise ActionRefused(400, f"field version: {error}", back) from None
    found = find_version(list(versions), full)
    assert found is not None  # resolved among these versions
    return found


def _runs_to_review(reader: Reader, benchmark: str, workflow_hash: str) -> RunsToReview:
    """A version's runs, outputs, dataset rows and scores, as a review samples them."""

    def rows(model: Any) -> list[Any]:
        return model_rows(reader, model, benchmark, "workflow_hash = ?", [workflow_hash])

    return RunsToReview(
        runs=rows(ExpandedRun),
        outputs=rows(AgentOutput),
        dataset=rows(DatasetRow),
        scores=rows(MetricScore),
    )
