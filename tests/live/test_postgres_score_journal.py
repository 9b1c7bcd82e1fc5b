"""The fleet's score journal and call ledger against a real PostgreSQL (started here).

Two journals of the same chunk stand for two machines: what one records, the other reads
back, and the calls a worker of one was answered are charged to that attempt on the
other. Runs only with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it).
"""

from __future__ import annotations

import pytest

from n8n_deepeval_pipeline import EvaluationItem, EvaluationResult
from n8n_deepeval_pipeline.judging.call_ledger import CallLedger
from n8n_deepeval_pipeline.orchestration.resources.postgres_score_journal import (
    PostgresScoreJournal,
)
from n8n_deepeval_pipeline.orchestration.resources.score_journal import ScoreJournalResource
from tests.conftest import make_task
from tests.live.services import Postgres

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]


def machines(postgres: Postgres, tmp_path) -> tuple[ScoreJournalResource, ScoreJournalResource]:
    """The resource as two machines build it: each its own folder, one database."""
    return (
        ScoreJournalResource(directory=str(tmp_path / "a"), url=postgres.url),
        ScoreJournalResource(directory=str(tmp_path / "b"), url=postgres.url),
    )


def test_a_chunk_journaled_on_one_machine_resumes_on_another(postgres, tmp_path):
    a, b = machines(postgres, tmp_path)
    item = EvaluationItem(actual_output="a")
    tasks = [make_task({"metric": "exact_match"}, item, i, run_id=f"h:r:{i}") for i in range(5)]
    outcomes = [
        EvaluationResult(task_id=0, score=0.7, reason="fine"),
        EvaluationResult.failed(1, "missing_input", "missing input: 'expectedOutput'"),
        EvaluationResult.failed(2, "worker_crash", "died"),  # evaluated again
        EvaluationResult.failed(3, "judge_error", "HTTP 500"),  # evaluated again
        EvaluationResult(task_id=4, score=1.0),
    ]
    with a.journal("bench", "0123456789ab", "c01_of_02") as lost:
        assert isinstance(lost, PostgresScoreJournal)
        for task, result in zip(tasks[:4], outcomes[:4], strict=True):
            lost.record(task, result, "run-1")
    with b.journal("bench", "0123456789ab", "c02_of_02") as sibling:
        sibling.record(tasks[4], outcomes[4], "run-1")
    # the step re-delivered to machine b: the lost machine's results, its sibling's too
    with b.journal("bench", "0123456789ab", "c01_of_02") as resumed:
        kept = resumed.completed()
        assert kept == {tasks[i].fingerprint(): outcomes[i] for i in (0, 1, 4)}
        assert [(run, result.task_id) for run, _, result in resumed.attempts()] == [
            ("run-1", 0), ("run-1", 1), ("run-1", 2), ("run-1", 3)]  # fmt: skip
    a.clear_partition("bench", "0123456789ab")
    with a.journal("bench", "0123456789ab", "c02_of_02") as cleared:
        assert cleared.completed() == {}
    assert postgres.sql("select count(*) from n8n_deepeval_journal.scores") == [(0,)]


def test_the_calls_a_lost_machine_was_answered_are_charged_to_its_attempt(postgres, tmp_path):
    a, b = machines(postgres, tmp_path)
    with a.journal("bench", "fedcba987654", "c01_of_01") as lost:
        tag = lost.ledger_tag("run-7")
        assert tag.folder is None and tag.database is not None
        assert postgres.url.split("@")[0].split(":")[-1] not in repr(tag)  # the password hidden
        worker = CallLedger(tag)  # as a worker process writes them, one row per answer
        for _ in range(3):
            worker.answered("openai:gpt-4o-mini", "gpt-4o-mini", 1000, 100)
    with b.journal("bench", "fedcba987654", "c01_of_01") as resumed:
        CallLedger(resumed.ledger_tag("run-7")).answered("openai:gpt-4o-mini", "gpt-4o-mini", 10, 1)
        CallLedger(resumed.ledger_tag("run-8")).answered("openai:gpt-4o-mini", "gpt-4o-mini", 5, 1)
        calls = list(resumed.answered_calls())
        assert [(call.attempt, call.prompt_tokens) for call in calls] == [
            ("run-7", 1000), ("run-7", 1000), ("run-7", 1000), ("run-7", 10),
            ("run-8", 5)]  # fmt: skip
    # stored by run-7, while run-8 still scores the version: run-8's calls stay its own
    b.clear_partition("bench", "fedcba987654", running={"run-8"})
    with a.journal("bench", "fedcba987654", "c01_of_01") as after:
        assert [call.attempt for call in after.answered_calls()] == ["run-8"]
