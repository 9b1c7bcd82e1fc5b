"""The worker pool with real DeepEval metrics (dry-run judge) in real worker processes."""

import json
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from n8n_deepeval_pipeline import EvaluationItem, EvaluationTask, JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.worker.pool import warm_ahead
from tests.conftest import DRY_RUN, evaluate_all, make_task, worker_processes

pytestmark = pytest.mark.slow

LOOKUP = {
    "action": {"tool": "order_lookup", "toolInput": {"orderId": "A1"}, "log": "look up"},
    "observation": "ok",
}
CALC = {"action": {"tool": "calculator", "toolInput": "2+2", "log": "add"}, "observation": "4"}
ITEM = EvaluationItem(
    input="Where is order A1 and what is 2+2?",
    actual_output="Order A1 shipped. 2+2 is 4.",
    expected_output="Order A1 shipped. 2+2 is 4.",
    expected_tools=["order_lookup", "calculator"],
    intermediate_steps=[LOOKUP, CALC],
)


@pytest.fixture
def pool(dry_run_pool):
    return dry_run_pool


def task(config, item=ITEM, task_id=0, **options):
    return make_task(config, item, task_id, **options)


def evaluate(pool, *tasks):
    return evaluate_all(pool, list(tasks))


def test_deterministic_metrics_give_deepeval_scores(pool):
    only_lookup = ITEM.model_copy(update={"intermediate_steps": [LOOKUP]})
    looping = ITEM.model_copy(update={"intermediate_steps": [LOOKUP, LOOKUP, LOOKUP]})
    results = evaluate(
        pool,
        task({"metric": "tool_correctness"}, task_id=0),
        task({"metric": "tool_correctness"}, only_lookup, task_id=1),
        task({"metric": "tool_permission", "allowed_tools": ["calculator"]}, task_id=2),
        task({"metric": "tool_permission", "denied_tools": ["refund"]}, task_id=3),
        task({"metric": "exact_match"}, task_id=4),
        task({"metric": "exact_match"}, ITEM.model_copy(update={"actual_output": "no"}), task_id=5),
        task({"metric": "pattern_match", "pattern": r"Order A\d shipped.*"}, task_id=6),
        task({"metric": "pattern_match", "pattern": "refund.*"}, task_id=7),
        task({"metric": "agent_loop_detection"}, task_id=8),
        task({"metric": "agent_loop_detection", "repetition_threshold": 2}, looping, task_id=9),
    )
    scores = [result.score for result in results]
    assert scores[:8] == [1.0, 0.5, 0.5, 1.0, 1.0, 0.0, 1.0, 0.0]
    assert scores[8] == 1.0 and results[8].reason == "No loop patterns detected."
    assert scores[9] < 1.0 and "order_lookup" in results[9].reason
    assert all(result.error is None and result.judge_calls == 0 for result in results)
    assert "1 of 2 tool call(s) were unauthorized: ['order_lookup']" in results[2].reason


def test_judge_metrics_run_on_the_dry_run_judge_deterministically(pool):
    g_eval = {
        "metric": "g_eval",
        "name": "helpfulness",
        "criteria": "Is the answer helpful?",
        "evaluation_params": ["INPUT", "ACTUAL_OUTPUT"],
    }
    first = evaluate(pool, task(g_eval, task_id=0), task({"metric": "bias"}, task_id=1))
    again = evaluate(pool, task(g_eval, task_id=0), task({"metric": "bias"}, task_id=1))
    for result, repeat in zip(first, again, strict=True):
        assert result.error is None
        assert 0.0 <= result.score <= 1.0
        assert result.judge_calls >= 2
        assert "[dry-run]" in result.reason
        assert (result.score, result.reason) == (repeat.score, repeat.reason)
    other = ITEM.model_copy(update={"actual_output": "Something else entirely."})
    (changed,) = evaluate(pool, task(g_eval, other))
    assert changed.error is None  # a different output is a different prompt


def test_missing_inputs_are_error_rows_that_name_the_field(pool):
    no_expected = ITEM.model_copy(update={"expected_output": None, "expected_tools": None})
    no_steps = ITEM.model_copy(update={"intermediate_steps": None})
    no_calls = ITEM.model_copy(update={"intermediate_steps": []})
    results = evaluate(
        pool,
        task({"metric": "exact_match"}, no_expected, task_id=0),
        task({"metric": "tool_correctness"}, no_expected, task_id=1),
        task({"metric": "agent_loop_detection"}, no_steps, task_id=2),
        task({"metric": "tool_permission", "allowed_tools": ["x"]}, no_calls, task_id=3),
        task({"metric": "agent_loop_detection"}, no_calls, task_id=4),
    )
    assert [r.error_kind for r in results[:3]] == ["missing_input"] * 3
    assert "'expectedOutput'" in results[0].error
    assert "'expectedTools'" in results[1].error
    assert "'intermediateSteps' (AI Agent with Return Intermediate Steps on" in results[2].error
    assert results[3].score == 1.0  # no calls at all: nothing unauthorised
    assert (results[4].error, results[4].score) == (None, 1.0)  # no calls: no loop


def test_clean_session_replaces_the_worker(pool):
    (result,) = evaluate(pool, task({"metric": "exact_match"}, clean_session=True))
    assert result.worker_pid not in pool.pids
    (after,) = evaluate(pool, task({"metric": "exact_match"}))
    assert after.worker_pid in pool.pids and after.score == 1.0


@dataclass(frozen=True)
class SilentJudge:
    """A judge that accepts connections and never answers; ``connected`` once one came."""

    spec: JudgeSpec
    port: int
    connected: threading.Event


@pytest.fixture
def silent_judge() -> Iterator[SilentJudge]:
    """A TCP server that accepts connections and never answers: a hanging judge."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    connected, stop = threading.Event(), threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
                connected.set()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    spec = JudgeSpec(
        provider="openai-compatible",
        model="m",
        base_url=f"http://127.0.0.1:{port}/v1",
        timeout_s=120,
    )
    yield SilentJudge(spec, port, connected)
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    server.close()


def connected_pid(port: int, pids: list[int]) -> int:
    """The one of ``pids`` holding a TCP connection to ``port`` on loopback (from /proc)."""
    remote = f"0100007F:{port:04X}"
    inodes = {
        fields[9]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if (fields := line.split())[2] == remote
    }
    (pid,) = {
        pid
        for pid in pids
        for fd in Path(f"/proc/{pid}/fd").iterdir()
        if os.readlink(fd) in {f"socket:[{inode}]" for inode in inodes}
    }
    return pid


def test_hanging_evaluation_times_out_and_others_finish(pool, silent_judge):
    hanging = task({"metric": "bias"}, task_id=0, judge=silent_judge.spec, timeout_s=3)
    results = evaluate(pool, hanging, task({"metric": "exact_match"}, task_id=1))
    assert results[0].error_kind == "timeout"
    assert results[0].worker_pid not in pool.pids
    assert results[1].score == 1.0


def test_killed_worker_is_replaced_and_only_its_evaluation_errors(pool, silent_judge):
    before = set(pool.pids)

    def kill_busy_worker():
        # the worker asking the silent judge is the one busy with the hanging evaluation
        assert silent_judge.connected.wait(60)
        os.kill(connected_pid(silent_judge.port, pool.pids), signal.SIGKILL)

    killer = threading.Thread(target=kill_busy_worker)
    killer.start()
    hanging = task({"metric": "bias"}, task_id=0, judge=silent_judge.spec, timeout_s=60)
    results = evaluate(
        pool, hanging, *(task({"metric": "exact_match"}, task_id=i) for i in range(1, 6))
    )
    killer.join()
    assert results[0].error_kind == "worker_crash"
    assert "died during the evaluation" in results[0].error
    assert [r.score for r in results[1:]] == [1.0] * 5
    assert len(set(pool.pids) - before) == 1


def test_close_leaves_no_process():
    before = worker_processes()  # the session's shared pool is still running
    pool = WorkerPool(size=2, timeout_s=30)
    pool.start()
    pids = pool.pids
    pool.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert worker_processes() == before  # the zygote is gone too


POLLUTER = "tests.worker.polluting_evaluator:PollutingEvaluator"


def labelled(label, task_id=0, **options):
    return EvaluationTask(
        task_id=task_id,
        run_id="h:r:0",
        metric_label=label,
        config={"metric": "exact_match"},
        item=ITEM,
        judge=DRY_RUN,
        timeout_s=options.pop("timeout_s", 60),
        **options,
    )


def test_pollution_of_deepeval_globals_does_not_reach_the_next_evaluation():
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER)
    try:
        (dirty,) = evaluate(pool, labelled("pollute"))
        (after,) = evaluate(pool, labelled("inspect"))
    finally:
        pool.close()
    clean = repr(
        {
            "trace_spans": 0,
            "traces": 0,
            "context_var": None,
            "module_attribute": False,
            "added_attribute": False,
        }
    )
    assert dirty.reason == clean
    assert after.reason == clean
    assert dirty.worker_pid == after.worker_pid  # repaired in place, same worker


def test_workers_are_forked_with_the_warmed_interpreter_left_out_of_garbage_collection():
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER)
    try:
        (heap,) = evaluate(pool, labelled("heap"))
    finally:
        pool.close()
    # DeepEval and every catalog metric: a full collection in a worker walks none of them.
    assert int(heap.reason) > 100_000


def _forked_before_and_after(first, later):
    """What a worker was forked with: for ``first``; for ``later`` on a worker forked before
    ``later`` was asked for (replaced after it: clean session); for ``later`` again, on the
    fresh worker. Each as (what it inherited, its worker's pid)."""
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER)
    try:
        results = [
            *evaluate(pool, first),
            *evaluate(pool, later.model_copy(update={"clean_session": True})),
            *evaluate(pool, later),
        ]
    finally:
        pool.close()
    return [(json.loads(result.reason), result.worker_pid) for result in results]


def test_workers_are_forked_with_the_certificates_and_their_metrics_templates_ready():
    bias = labelled("inherited").model_copy(update={"config": {"metric": "bias"}})
    toxicity = bias.model_copy(update={"config": {"metric": "toxicity"}})
    (first, _), (older, older_pid), (fresh, fresh_pid) = _forked_before_and_after(bias, toxicity)
    # Nothing an evaluation did: the zygote built them before the fork, for the run's metrics.
    assert first == {
        "certificates": 1,
        "templates": ["BiasMetric"],
        "anthropic_sdk": False,  # no Anthropic judge: the SDK's 2.7 s import is skipped
        "answer_schemas": 4,  # Bias's (opinions, a verdict, the verdicts, the reason)
    }
    assert older["templates"] == ["BiasMetric"]
    assert fresh["templates"] == ["BiasMetric", "ToxicityMetric"]
    assert fresh_pid != older_pid


def test_workers_of_an_anthropic_judge_are_forked_with_its_sdk_ready(
    tmp_path,
):
    claude = JudgeSpec(
        provider="anthropic", model="claude-haiku-4-5", api_key="sk-unused", state_dir=str(tmp_path)
    )
    dry_run = labelled("inherited").model_copy(update={"config": {"metric": "bias"}})
    anthropic = dry_run.model_copy(update={"judge": claude})
    (before, _), (older, older_pid), (after, after_pid) = _forked_before_and_after(
        dry_run, anthropic
    )
    assert before["anthropic_sdk"] is False
    assert older["anthropic_sdk"] is False
    assert after["anthropic_sdk"] is True
    assert after_pid != older_pid


def test_a_crashing_evaluation_is_replaced_and_only_it_errors():
    pool = WorkerPool(size=2, timeout_s=30, evaluator=POLLUTER)
    try:
        results = evaluate(
            pool, *(labelled("ok", task_id=i) for i in range(4)), labelled("crash", task_id=4)
        )
        again = evaluate(pool, labelled("ok"))
    finally:
        pool.close()
    assert [r.error_kind for r in results] == [None] * 4 + ["worker_crash"]
    assert "died during the evaluation" in results[4].error
    assert again[0].score == 1.0


def test_evaluations_in_flight_with_a_crash_run_again_and_only_the_crashing_one_errors():
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER, per_worker=8)
    try:
        tasks = [labelled("ok", task_id=i) for i in range(3)] + [labelled("crash", task_id=3)]
        tasks += [labelled("ok", task_id=i) for i in range(4, 8)]  # sent with the crash
        results = evaluate(pool, *tasks)
        replacements = pool.replacements
    finally:
        pool.close()
    assert [r.error_kind for r in results] == [None] * 3 + ["worker_crash"] + [None] * 4
    assert all(r.score == 1.0 for i, r in enumerate(results) if i != 3)
    # The crash with others in flight, then halves of those (8 at most: 2 more crashes at
    # most) down to the crash alone; how many were in flight depends on when it died.
    assert 2 <= replacements <= 4


def test_a_crash_with_sixteen_in_flight_is_found_in_halves_not_one_evaluation_at_a_time():
    """The 15 others run again in halves (8, 4, 2, 1 beside the crashing one's half): 4
    more crashes find it, where running them one at a time took 15 evaluations in a row."""
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER, per_worker=16)
    try:
        tasks = [labelled("slow", task_id=i) for i in range(16) if i != 9]
        tasks.insert(9, labelled("crash-later", task_id=9))
        results = evaluate(pool, *tasks)
        replacements = pool.replacements
    finally:
        pool.close()
    assert [r.error_kind for r in results] == [None] * 9 + ["worker_crash"] + [None] * 6
    assert all(r.score == 1.0 for i, r in enumerate(results) if i != 9)
    assert replacements == 5  # the crash with 16 in flight, then with 8, 4, 2 and alone


def test_an_evaluation_that_raises_out_of_the_evaluator_is_an_error_row_at_once():
    pool = WorkerPool(size=1, timeout_s=60, evaluator=POLLUTER, per_worker=4)
    try:
        broken, fine = evaluate(pool, labelled("raise", task_id=0), labelled("ok", task_id=1))
    finally:
        pool.close()
    # answered by the worker (not left to the evaluation timeout, nor a crash)
    assert (broken.error_kind, fine.score) == ("metric_error", 1.0)
    assert "an evaluator bug" in broken.error


@pytest.fixture
def temp_folder(tmp_path, monkeypatch):
    """A temp folder of this test's own, where pools put their working folders; a home of
    its own, where a failed pool's log is kept."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    (tmp_path / "temp").mkdir()
    return tmp_path


def test_a_pool_leaves_nothing_in_the_temp_folder_nor_a_log(temp_folder):
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER)
    try:
        assert evaluate(pool, labelled("ok"))[0].score == 1.0
    finally:
        pool.close()
    assert list((temp_folder / "temp").iterdir()) == []
    assert not (temp_folder / "home").exists()  # no log kept, nothing made in the home


def test_the_log_of_a_crashed_worker_is_kept_in_the_home_where_its_error_says(temp_folder, caplog):
    pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER)
    try:
        (crashed,) = evaluate(pool, labelled("crash"))
    finally:
        pool.close()
    assert crashed.error_kind == "worker_crash"
    assert list((temp_folder / "temp").iterdir()) == []  # the working folder is gone
    (kept,) = (temp_folder / "home" / "logs").iterdir()  # not the system's temp folder
    assert kept.name.startswith("worker-zygote-") and kept.suffix == ".log"
    assert crashed.error.endswith(f"; its output is in {kept}")
    assert f"a worker failed; the workers' log is kept in {kept}" in caplog.text
    assert b"DeepEval" in kept.read_bytes()  # what the workers printed


def test_abandoned_evaluations_are_killed_not_awaited(temp_folder):
    pool = WorkerPool(size=2, timeout_s=600, evaluator=POLLUTER)
    try:
        stream = pool.evaluate([labelled("ok", 0), labelled("hang", 1, timeout_s=600)])
        first = next(stream)
        started = time.perf_counter()
        stream.close()  # the step failed: the hanging evaluation must not hold it up
        assert time.perf_counter() - started < 20
        assert first.score == 1.0
    finally:
        pool.close()
    assert not (temp_folder / "home").exists()  # killed on purpose: no failure, no log kept


def test_workers_are_recycled_after_their_evaluation_budget():
    pool = WorkerPool(size=1, timeout_s=30, max_evaluations=2, evaluator=POLLUTER)
    try:
        pids = [r.worker_pid for r in evaluate(pool, *(labelled("ok", i) for i in range(5)))]
        stats = pool.stats()
    finally:
        pool.close()
    assert len(set(pids)) == 3  # 2 + 2 + 1 evaluations
    assert stats["replacements"] == 2
    assert stats["median_overhead_ms"] is not None  # its size is the benchmark's business
    assert 30 < stats["peak_rss_mb_per_worker"] < 600


def test_pool_size_is_clamped(caplog):
    assert WorkerPool(size=0, timeout_s=1).size == 1
    assert WorkerPool(size=1000, timeout_s=1).size == 64
    assert "pool size 1000 is outside 1..64; using 64" in caplog.text


def test_evaluations_in_flight_together_in_one_worker_keep_their_own_results(tmp_path):
    """No cross-talk: eight evaluations at once in one worker give, each, exactly what it
    gives alone (score, reason, judge calls, tokens, scoring path)."""
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
    from tests.worker.test_metric_runs import ITEM as RICH_ITEM

    server = LoopbackJudge(latency_s=0.2).start()
    judge = JudgeSpec(
        provider="openai", model="gpt-4.1", base_url=server.base_url, api_key="sk-t", cache=False
    )
    configs = [
        {"metric": "bias"},
        {"metric": "toxicity"},
        {"metric": "g_eval", "name": "total", "criteria": "Is the total right?",
         "evaluation_params": ["INPUT", "ACTUAL_OUTPUT"]},
        {"metric": "answer_relevancy"},
        {"metric": "hallucination"},
        {"metric": "task_completion"},
        {"metric": "pii_leakage"},
        {"metric": "faithfulness"},
    ]  # fmt: skip
    tasks = [make_task(config, RICH_ITEM, index, judge) for index, config in enumerate(configs)]
    fields = ("score", "reason", "error", "judge_calls", "prompt_tokens", "completion_tokens",
              "score_path")  # fmt: skip
    try:
        results = {}
        for per_worker in (1, 8):
            pool = WorkerPool(size=1, timeout_s=120, per_worker=per_worker)
            server.max_in_flight = 0
            try:
                results[per_worker] = evaluate(pool, *tasks)
            finally:
                pool.close()
            results[f"peak {per_worker}"] = server.max_in_flight
    finally:
        server.stop()
    assert results["peak 8"] >= 2 * results["peak 1"] + 2, results  # they did overlap
    alone = [{name: getattr(r, name) for name in fields} for r in results[1]]
    together = [{name: getattr(r, name) for name in fields} for r in results[8]]
    assert together == alone
    assert all(r["error"] is None and r["judge_calls"] > 0 for r in together)
    assert together[2]["score_path"] == "logprob_weighted"


def _parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_pool_forks_its_workers_from_the_zygote_warmed_ahead_and_none_is_left():
    before = worker_processes()
    with warm_ahead(POLLUTER):
        (warmed,) = worker_processes() - before
        pool = WorkerPool(size=2, timeout_s=30, evaluator=POLLUTER)
        try:
            (result,) = evaluate(pool, labelled("inspect"))
            assert result.score == 1.0
            assert {_parent_of(pid) for pid in pool.pids} == {warmed}
        finally:
            pool.close()
        assert worker_processes() == before  # the pool stopped it with its workers
    assert worker_processes() == before


def test_a_zygote_warmed_with_a_secret_in_its_environment_is_not_taken(monkeypatch):
    # a judge key under a name no rule knows: only the task tells it is a secret
    monkeypatch.setenv("SUPPORT_JUDGE", "tents-and-lanterns")
    before = worker_processes()
    with warm_ahead(POLLUTER):
        (warmed,) = worker_processes() - before
        pool = WorkerPool(size=1, timeout_s=30, evaluator=POLLUTER)
        keyed = JudgeSpec(provider="dry-run", model="dry-run", api_key="tents-and-lanterns")
        try:
            evaluate(pool, labelled("inspect").model_copy(update={"judge": keyed}))
            (worker,) = pool.pids
            assert _parent_of(worker) != warmed
            assert b"tents-and-lanterns" not in Path(f"/proc/{worker}/environ").read_bytes()
        finally:
            pool.close()
        assert worker_processes() - before == {warmed}  # untaken, still there
    assert worker_processes() == before  # and stopped when the block ends


def _in_flight_at_a_slow_judge(tmp_path, max_in_flight):
    """Peak evaluations in flight on one worker given 40 bias evaluations, a 0.3 s judge
    whose calls go through its shared pacing (at most ``max_in_flight`` at once)."""
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
    from n8n_deepeval_pipeline.worker.admission import START_PER_WORKER

    server = LoopbackJudge(latency_s=0.3).start()
    judge = JudgeSpec(
        provider="openai-compatible", model="loopback", base_url=server.base_url,
        cache=False, state_dir=str(tmp_path / "judge"), max_in_flight=max_in_flight,
    )  # fmt: skip
    tasks = [make_task({"metric": "bias"}, ITEM, index, judge) for index in range(40)]
    pool = WorkerPool(size=1, timeout_s=120)
    try:
        results = evaluate(pool, *tasks)
    finally:
        pool.close()
        server.stop()
    assert [r.error for r in results] == [None] * 40
    return pool.peak_in_flight, START_PER_WORKER


def test_a_worker_takes_more_evaluations_while_its_cpu_and_the_judge_have_room(tmp_path):
    """At a slow judge with room, a worker that started with 16 takes more (all 40 here)
    as its evaluations wait: no worker count to guess to keep a slow judge busy."""
    peak, start = _in_flight_at_a_slow_judge(tmp_path, max_in_flight=256)
    assert peak > start + 8, peak


def test_a_worker_takes_no_more_while_the_judges_pacing_holds_calls_back(tmp_path):
    """Four calls at a time: the rest wait for a slot, so more evaluations in flight would
    only wait too (against their timeout); the worker keeps the 16 it started with."""
    peak, start = _in_flight_at_a_slow_judge(tmp_path, max_in_flight=4)
    assert peak == start
