"""The review page's forms: who reviews, a new queue, a label, a skip, an undo.

Each writes through the calibration back end (``ReviewQueue``), with the label store the
serving command gave the app, one form at a time on a reviewer's queue and in turns with
the pages' reads of a DuckDB store. Nothing here writes results. A form answers with the
page to go to (303), or refuses in one line naming the field at fault.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.review_items import RunsToReview, sampled_items
from n8n_deepeval_pipeline.calibration.review_queue import (
    QueueError,
    ReviewQueue,
    prepare_queue,
    read_queue_file,
)
from n8n_deepeval_pipeline.calibration.sampler import DEFAULT_SEED, MAX_SEED
from n8n_deepeval_pipeline.calibration.status import UnknownMetricError, metrics_to_review
from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError, resolve_version
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, MetricScore
from n8n_deepeval_pipeline.workspace.overview import benchmark_names, latest_version
from n8n_deepeval_pipeline.workspace.page_request import ActionRefused, ActionRequest
from n8n_deepeval_pipeline.workspace.review import (
    DEFAULT_SAMPLE,
    LabelsRead,
    queue_file,
    reviewer_of,
)
from n8n_deepeval_pipeline.workspace.review_forms import (
    REVIEWER_COOKIE,
    FormProblem,
    cookie_value,
    label_fields,
    reviewer_name,
)
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, reading, writing_labels
from n8n_deepeval_pipeline.workspace.versions import StoredVersion, find_version, scored_versions

MAX_SAMPLE = 10_000
REMEMBERED_S = 365 * 24 * 3600  # how long the browser keeps the reviewer's name


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
    return _Posted(name, reviewer, queue_file(name, reviewer), back)


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
        state = read_queue_file(posted.path)
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
            yield ReviewQueue(posted.path, store, state)


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
    metrics = _metrics(action, benchmark, posted.back)
    count = _sample(action, posted.back)
    seed = _seed(action, posted.back)
    with reading(action.source) as reader:
        versions = scored_versions(reader, posted.benchmark)
        chosen = _version(action, versions, posted.back)
        rows = _runs_to_review(reader, posted.benchmark, chosen.workflow_hash)
        done = {
            (label.run_id, label.metric)
            for label in LabelsRead(reader, posted.benchmark).labels()
            if label.reviewer == posted.reviewer
        }
    items = sampled_items(benchmark, rows, metrics, count, done, seed)
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


def _metrics(action: ActionRequest, benchmark: Benchmark, back: str) -> list[str]:
    asked = [value for value in action.form.getlist("metric") if isinstance(value, str)]
    try:
        return metrics_to_review(benchmark, asked)
    except UnknownMetricError as error:
        raise ActionRefused(400, f"field metric: {error}", back) from None


def _sample(action: ActionRequest, back: str) -> int:
    given = action.field("sample")
    if given is None:
        return DEFAULT_SAMPLE
    if not given.isdigit() or not 1 <= int(given) <= MAX_SAMPLE:
        raise ActionRefused(
            400, f"field sample: {given!r}: give a number of pairs from 1 to {MAX_SAMPLE}", back
        )
    return int(given)


def _seed(action: ActionRequest, back: str) -> int:
    """The sample's seed, as `review --seed` takes it: the same seed, the same runs."""
    given = action.field("seed")
    if given is None:
        return DEFAULT_SEED
    # digits only: isdigit() takes a "²" that int() refuses, and a draw's seed is never negative
    if re.fullmatch(r"[0-9]{1,10}", given) is None or int(given) > MAX_SEED:
        raise ActionRefused(
            400, f"field seed: {given!r}: give a whole number from 0 to {MAX_SEED}", back
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
