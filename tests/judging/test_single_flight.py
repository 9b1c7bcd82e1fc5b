"""Identical judge questions asked at once make one call, and everyone gets its answer."""

import subprocess
import sys

import pytest

from n8n_deepeval_pipeline import EvaluationItem, JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.judging.shared_state import CachedAnswer, SharedState
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import make_task


def test_one_process_asks_a_question_at_a_time_and_the_first_answer_stays(tmp_path):
    first, second = SharedState(tmp_path / "s.sqlite"), SharedState(tmp_path / "s.sqlite")
    assert first.claim("q", lease_s=60)
    assert not second.claim("q", lease_s=60)  # a live process is asking
    first.release("q")
    assert second.claim("q", lease_s=60)
    second.release("q")

    kept = first.store("q", CachedAnswer(answer="a", prompt_tokens=1, completion_tokens=1))
    later = second.store("q", CachedAnswer(answer="b", prompt_tokens=1, completion_tokens=1))
    assert kept.answer == later.answer == "a"


def test_a_question_claimed_by_a_dead_process_or_past_its_lease_is_free(tmp_path):
    state = SharedState(tmp_path / "s.sqlite")
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
    dead = int(finished.stdout)
    state._db.execute("insert into asking values ('crashed', ?, 1e12)", (dead,))
    state._db.execute("insert into asking values ('expired', 1, 0)")  # pid 1 lives
    state._db.execute("insert into asking values ('busy', 1, 1e12)")
    assert state.claim("crashed", lease_s=60)
    assert state.claim("expired", lease_s=60)
    assert not state.claim("busy", lease_s=60)


@pytest.mark.slow
def test_concurrent_identical_questions_across_workers_make_one_call(tmp_path):
    server = LoopbackJudge(latency_s=0.5).start()
    judge = JudgeSpec(
        provider="openai-compatible",
        model="loopback-judge",
        base_url=server.base_url,
        state_dir=str(tmp_path / "judge"),
    )
    item = EvaluationItem(input="What is 2+2?", actual_output="4", expected_output="4")
    tasks = [
        make_task({"metric": "correctness"}, item, i, judge=judge, run_id=f"h:r{i}:0")
        for i in range(8)
    ]
    pool = WorkerPool(size=4, timeout_s=60)
    pool.start()
    try:
        results = list(pool.evaluate(tasks))
    finally:
        pool.close()
        server.stop()
    assert [r.error for r in results] == [None] * 8
    assert server.requests == 1
    assert len({r.score for r in results}) == 1
    assert sorted((r.judge_calls, r.cached_calls) for r in results) == [(0, 1)] * 7 + [(1, 0)]
    assert len({r.worker_pid for r in results}) > 1  # the waiting was across processes
