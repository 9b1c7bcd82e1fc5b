"""The score journal keeps real results of an interrupted step and drops what a retry may change."""

import json

from n8n_deepeval_pipeline import EvaluationItem, EvaluationResult
from n8n_deepeval_pipeline.orchestration.resources.score_journal import ScoreJournalResource
from tests.conftest import make_task


def test_completed_keeps_scores_and_final_errors_but_not_crashes_timeouts_or_judge_errors(
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
    ]
    tasks = [make_task({"metric": "exact_match"}, item, i, run_id=f"h:r:{i}") for i in range(5)]
    for task, result in zip(tasks, outcomes, strict=True):
        journal.record(task, result)
    with journal.path.open("a", encoding="utf-8") as torn:
        torn.write('{"fingerprint": "x", "result": {"task_')  # a step killed mid-write
    kept = journal.completed()
    assert kept == {tasks[0].fingerprint(): outcomes[0], tasks[1].fingerprint(): outcomes[1]}
    assert json.loads(journal.path.read_text().splitlines()[0])["result"]["score"] == 0.7
    journal.clear()
    assert not journal.path.exists()
    assert journal.completed() == {}
