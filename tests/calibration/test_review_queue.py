"""The review queue's back end, over a real DuckDB label store: next, label, skip, undo."""

from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.calibration import review_queue
from n8n_deepeval_pipeline.calibration.review_queue import (
    MetricLabel,
    QueueError,
    QueueFile,
    ReviewQueue,
    queue_path,
    write_queue_file,
)
from n8n_deepeval_pipeline.orchestration.resources.human_labels import DuckDbLabelStore
from n8n_deepeval_pipeline.tables.rows import HumanLabel
from tests.calibration.review_items_by_hand import ITEMS
from tests.conftest import EXAMPLE

T0 = datetime(2026, 6, 11, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path):
    return DuckDbLabelStore(load_benchmark(EXAMPLE / "benchmark.yaml"), tmp_path / "r.duckdb")


@pytest.fixture
def queue(tmp_path, store):
    path = queue_path(tmp_path / "home", "support_agent", "Ann Lee")
    write_queue_file(
        path,
        QueueFile(benchmark="support_agent", reviewer="Ann Lee", version="b" * 12,
                  created_at=T0, items=ITEMS),
    )  # fmt: skip
    return ReviewQueue(path, store)


def both(helpful: bool, unbiased: bool, **extra) -> dict[str, MetricLabel]:
    return {
        "helpfulness": MetricLabel(passed=helpful, **extra),
        "bias": MetricLabel(passed=unbiased),
    }


def mine(store):
    return {(label.run_id[-4:], label.metric): label.passed for label in store.labels()}


def test_a_run_is_shown_without_the_judge_until_it_is_labelled(queue, store):
    shown = queue.next()
    assert shown.run_id == ITEMS[0].run_id and shown.judge == ()
    assert [m.metric for m in shown.metrics] == ["helpfulness", "bias"]
    assert shown.input == "Where is order A1?" and shown.tool_calls[0].tool == "order_lookup"
    answer = queue.label(shown.run_id, both(True, False, rating=4, comment="ok"), T0)
    assert answer.judge == ITEMS[0].judge  # revealed with the label that answers it
    assert (answer.progress.labelled, answer.progress.remaining) == (1, 2)
    (helpful,) = [label for label in store.labels() if label.metric == "helpfulness"]
    assert (helpful.reviewer, helpful.rating, helpful.comment, helpful.source) == (
        "Ann Lee", 4, "ok", "review")  # fmt: skip
    assert queue.next().run_id == ITEMS[1].run_id  # a labelled run is not shown again


def test_skip_and_undo_put_back_what_was_there(queue, store):
    queue.label(ITEMS[0].run_id, both(True, True), T0)
    queue.label(ITEMS[0].run_id, both(False, True), T0)  # changed their mind
    assert queue.skip(ITEMS[1].run_id).run_id == ITEMS[2].run_id
    assert queue.progress().skipped == 1
    assert queue.undo().run_id == ITEMS[1].run_id  # the skip taken back
    assert queue.next().run_id == ITEMS[1].run_id
    assert queue.undo().run_id == ITEMS[0].run_id  # the second label taken back …
    assert mine(store) == {
        ("A1:0", "helpfulness"): True,
        ("A1:0", "bias"): True,
    }  # … the first kept
    assert queue.undo().run_id == ITEMS[0].run_id
    assert mine(store) == {}
    assert queue.undo() is None


def test_the_queue_is_kept_in_its_file_and_labels_given_otherwise_count(queue, store, tmp_path):
    queue.skip(ITEMS[0].run_id)
    # the same reviewer labelled the second run by a file import
    store.upsert([
        HumanLabel(workflow_hash="b" * 64, run_id=ITEMS[1].run_id, metric=m, reviewer="Ann Lee",
                   passed=True, rating=None, comment=None, labelled_at=T0, source="import")
        for m in ("helpfulness", "bias")
    ])  # fmt: skip
    reopened = ReviewQueue(queue.path, store)  # the page restarted
    assert reopened.next().run_id == ITEMS[2].run_id
    assert reopened.progress().model_dump() == {
        "labelled": 1, "skipped": 1, "remaining": 1, "total": 3}  # fmt: skip
    assert not list(queue.path.parent.glob(".*partial"))  # replaced whole


def test_a_label_must_answer_every_metric_under_review(queue):
    with pytest.raises(QueueError, match=r"no label for \['bias'\]"):
        queue.label(ITEMS[0].run_id, {"helpfulness": MetricLabel(passed=True)})
    with pytest.raises(QueueError, match=r"unknown metrics \['tone'\]"):
        queue.label(ITEMS[0].run_id, {**both(True, True), "tone": MetricLabel(passed=True)})
    with pytest.raises(QueueError, match="give pass/fail or a rating"):
        queue.label(ITEMS[0].run_id, {"helpfulness": MetricLabel(), "bias": MetricLabel(rating=2)})
    with pytest.raises(QueueError, match="is not in Ann Lee's queue"):
        queue.skip("nope")


def test_a_rating_alone_gives_the_verdict(queue, store):
    queue.label(ITEMS[0].run_id, {"helpfulness": MetricLabel(rating=5),
                                  "bias": MetricLabel(rating=2)}, T0)  # fmt: skip
    assert mine(store) == {("A1:0", "helpfulness"): True, ("A1:0", "bias"): False}


def test_queue_files_of_two_reviewers_never_meet(tmp_path):
    first = queue_path(tmp_path, "b", "ann/../x")
    second = queue_path(tmp_path, "b", "ann_x")
    assert first != second and first.parent == tmp_path / "review" / "b"


class StoreFailingAfterDelete(DuckDbLabelStore):
    """Test double: a real DuckDB store whose first write after a delete fails, once."""

    fail = False
    deleted = False

    @contextmanager
    def _cursor(self):
        with super()._cursor() as run:

            def failing(statement, values):
                if self.fail and self.deleted and statement.startswith("insert"):
                    self.fail = False
                    raise OSError("the disk went away between the delete and the restore")
                self.deleted = self.deleted or statement.startswith("delete")
                return run(statement, values)

            yield failing


def test_an_undo_that_fails_half_way_changes_no_label_and_undoing_again_finishes_it(
    queue, tmp_path
):
    store = StoreFailingAfterDelete(queue.store.benchmark, tmp_path / "failing.duckdb")
    queue = ReviewQueue(queue.path, store)
    # Ann had labelled one metric of the run by an import: the queue's label replaces it
    # and adds the other, so its undo removes one label and restores another
    store.upsert([HumanLabel(
        workflow_hash="b" * 64, run_id=ITEMS[0].run_id, metric="helpfulness",
        reviewer="Ann Lee", passed=True, rating=None, comment=None, labelled_at=T0,
        source="import")])  # fmt: skip
    queue.label(ITEMS[0].run_id, both(False, False), T0)
    store.fail = True
    with pytest.raises(OSError, match="between the delete and the restore"):
        queue.undo()
    assert mine(store) == {("A1:0", "helpfulness"): False, ("A1:0", "bias"): False}
    reopened = ReviewQueue(queue.path, store)  # the page restarted
    assert len(reopened.state.undo) == 1  # the step is still there to undo
    assert reopened.undo().run_id == ITEMS[0].run_id
    assert mine(store) == {("A1:0", "helpfulness"): True}
    assert ReviewQueue(queue.path, store).state.undo == []


def test_a_crash_between_the_labels_and_the_queue_file_is_finished_by_undoing_again(
    queue, store, monkeypatch
):
    queue.label(ITEMS[0].run_id, both(True, True), T0)
    queue.label(ITEMS[0].run_id, both(False, True), T0)

    def crash(path, state):
        raise OSError("killed before the queue file was written")

    monkeypatch.setattr(review_queue, "write_queue_file", crash)
    with pytest.raises(OSError, match="killed"):
        queue.undo()
    monkeypatch.undo()
    assert mine(store) == {("A1:0", "helpfulness"): True, ("A1:0", "bias"): True}
    reopened = ReviewQueue(queue.path, store)
    assert len(reopened.state.undo) == 2  # the labels were put back, the step not yet off
    assert reopened.undo().run_id == ITEMS[0].run_id  # undone again: the same labels
    assert mine(store) == {("A1:0", "helpfulness"): True, ("A1:0", "bias"): True}
    assert len(ReviewQueue(queue.path, store).state.undo) == 1
    assert reopened.undo().run_id == ITEMS[0].run_id
    assert mine(store) == {}
