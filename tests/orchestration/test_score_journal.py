"""The score journal keeps real results of an interrupted step and drops what a retry may change."""

import json

from n8n_deepeval_pipeline import EvaluationItem, EvaluationResult
from n8n_deepeval_pipeline.judging.call_ledger import CallLedger
from n8n_deepeval_pipeline.orchestration.resources.score_journal import (
    SIMULATION_LEDGER,
    ScoreJournalResource,
)
from tests.conftest import make_task


def test_completed_keeps_judgements_and_final_errors_but_not_outages_crashes_or_judge_errors(
    tmp_path,
):
    journal = ScoreJournalResource(directory=str(tmp_path)).journal("bench", "h" * 64)
    item = EvaluationItem(actual_output="a")
    outcomes = [
        EvaluationResult(task_id=0, score=0.7, reason="fine"),
        EvaluationResult.failed(1, "missing_input", "missing input: 'expectedOutput'"),
        EvaluationResult.failed(2, "worker_crash", "died"),
        EvaluationResult.failed(3, "timeout", "killed after 60 s"),
        EvaluationResult.failed(4, "judge_error", "HTTP 500"),
        EvaluationResult.failed(5, "judge_unavailable", "circuit open after 5 failures"),
        EvaluationResult.failed(6, "judge_invalid_output", "not JSON"),
        EvaluationResult.failed(7, "metric_error", "ZeroDivisionError"),
        EvaluationResult.failed(8, "invalid_config", "criteria: Field required"),
    ]
    tasks = [make_task({"metric": "exact_match"}, item, i, run_id=f"h:r:{i}") for i in range(9)]
    for task, result in zip(tasks, outcomes, strict=True):
        journal.record(task, result)
    with journal.path.open("a", encoding="utf-8") as torn:
        torn.write('{"fingerprint": "x", "result": {"task_')  # a step killed mid-write
    kept = journal.completed()
    assert kept == {tasks[i].fingerprint(): outcomes[i] for i in (0, 1, 8)}
    assert json.loads(journal.path.read_text().splitlines()[0])["result"]["score"] == 0.7
    ScoreJournalResource(directory=str(tmp_path)).clear_partition("bench", "h" * 64)
    assert not journal.path.exists()
    assert journal.completed() == {}


def test_a_stored_table_forgets_the_calls_it_charged_but_a_running_attempt_s(tmp_path):
    # A run that stored the version's scores deleted every call of the partition's ledger,
    # those of a run of the version still going beside it too: that run then said 14
    # calls where the judge had answered it 130.
    resource = ScoreJournalResource(directory=str(tmp_path))
    chunk = resource.journal("bench", "h" * 64, "c01_of_01")
    users = resource.journal("bench", "h" * 64, SIMULATION_LEDGER)
    for journal in (chunk, users):
        for attempt in ("killed", "stored", "beside"):
            CallLedger(journal.ledger_tag(attempt)).answered("j", "gpt-4o-mini", 10, 1)
    resource.clear_partition("bench", "h" * 64, running={"beside"})
    for journal in (chunk, users):
        assert [call.attempt for call in journal.answered_calls()] == ["beside"]
    resource.clear_partition("bench", "h" * 64)  # it stored its table: nothing is left
    assert not (tmp_path / "bench" / ("h" * 64)).exists()
