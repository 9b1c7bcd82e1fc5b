"""The distributed profile on loopback: PostgreSQL, Redis and Celery workers (live/cluster.py).

The example benchmark runs through two workers, ``machine-a`` and ``machine-b``, against a
loopback judge at 150 ms with the judge cache off (so every judge call is made, and counted
by the judge); one worker's step process is killed and the run re-executed from failure;
then a worker lost whole (its process group killed) mid-scoring has its step re-delivered
to a survivor, which resumes from what the lost one journaled in PostgreSQL. Runs only
with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it).
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator

import dagster as dg
import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import EXAMPLE
from tests.live.cluster import (
    CHUNK_STEP,
    JOURNALED_AT_LOSS,
    REQUEUE_S,
    Cluster,
    cluster_of,
    lose_mid_chunk,
    require_distributed,
    running_for,
    scores_metadata,
    step_hosts,
)

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]

JOB = "support_agent__benchmark"
RUNS, SCORES = 27, 189  # 9 rows × 3 runs; × 7 metrics
POOL_SIZE = 2  # evaluations in flight on one worker


class Fleet:
    """The cluster, the example benchmark it runs and the judge it asks."""

    def __init__(self, cluster: Cluster, benchmark, judge: LoopbackJudge) -> None:
        self.cluster, self.benchmark, self.judge = cluster, benchmark, judge

    def runner(self) -> BenchmarkRunner:
        return BenchmarkRunner(
            load_benchmark(self.benchmark), self.benchmark, self.cluster.instance
        )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    require_distributed()
    folder = tmp_path_factory.mktemp("distributed")
    benchmarks = folder / "benchmarks"
    shutil.copytree(EXAMPLE, benchmarks / "support_agent")
    judge = LoopbackJudge(latency_s=0.15).start()
    environment = {
        "DEEPEVAL_POOL_SIZE": str(POOL_SIZE),
        "N8N_DEEPEVAL_CHUNK_SIZE": "100",  # 189 evaluations: two chunks
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": judge.base_url,
        "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-loopback",
        "N8N_DEEPEVAL_JUDGE_CACHE": "0",  # every evaluation asks: each machine would cache apart
    }
    try:
        with cluster_of(folder, benchmarks, environment, ("machine-a", "machine-b")) as cluster:
            yield Fleet(cluster, benchmarks / "support_agent" / "benchmark.yaml", judge)
    finally:
        judge.stop()


def _assert_rows(cluster: Cluster, key: str) -> None:
    """Every table of the version holds its rows once: no duplicates, none missing."""
    part = f"where left(workflow_hash, 12) = '{key}'"
    assert cluster.query(
        f"select count(*), count(distinct run_id) from support_agent.expanded_runs {part}"
    ) == [(RUNS, RUNS)]
    assert cluster.query(
        f"select count(*), count(distinct run_id) from support_agent.agent_outputs {part}"
    ) == [(RUNS, RUNS)]
    assert cluster.query(
        "select count(*), count(distinct (run_id, metric)), count(distinct run_id) "
        f"from support_agent.metric_scores {part}",
    ) == [(SCORES, SCORES, RUNS)]
    assert cluster.query(
        f"select count(*), count(distinct run_id) from support_agent.run_aggregates {part}"
    ) == [(RUNS, RUNS)]
    # one partition only: nothing else was written
    assert cluster.query("select count(*) from support_agent.metric_scores") == [(SCORES,)]


def test_a_benchmark_runs_on_two_workers_into_postgres(fleet: Fleet) -> None:
    cluster = fleet.cluster
    runner = fleet.runner()
    key = runner.register_current_version()
    asked = fleet.judge.requests
    started = time.monotonic()
    result = cluster.execute(JOB, key)
    elapsed = time.monotonic() - started
    assert result.success, [str(event) for event in result.all_events if event.is_failure]
    hosts = step_hosts(cluster.instance, result.run_id)
    machines = {host.split("@")[0] for host, _ in hosts.values()}
    assert machines <= {"machine-a", "machine-b"} and len(hosts) >= 8, hosts
    chunks = sorted(step for step in hosts if step.startswith(CHUNK_STEP))
    assert chunks == [f"{CHUNK_STEP}c01_of_02]", f"{CHUNK_STEP}c02_of_02]"], hosts
    print(f"run on Celery: {elapsed:.1f} s; steps per worker: {hosts}")
    _assert_rows(cluster, key)
    # A clean run: the judge was asked exactly the calls behind the rows, each counted once
    # by the fleet's ledger (PostgreSQL), wherever the chunk ran.
    metadata = scores_metadata(result)
    assert fleet.judge.requests - asked == metadata["judge_calls"] == metadata[
        "attempts/judge_calls"] > 0  # fmt: skip
    # The instance is PostgreSQL's: a run, its partition and its materialisations are there.
    assert cluster.query("select count(*) from runs") == [(1,)]
    # A user reads the results back the way `n8n-deepeval` does, through the IO manager.
    assert runner.summary(key).runs == RUNS
    stored = runner.stored_versions([key])
    assert (len(stored.runs), len(stored.scores)) == (RUNS, SCORES)
    # The journal of a stored version is cleared.
    assert cluster.query("select count(*) from n8n_deepeval_journal.scores") == [(0,)]


def test_a_killed_worker_s_steps_finish_after_reexecution_from_failure(fleet: Fleet) -> None:
    cluster = fleet.cluster
    runner = fleet.runner()
    key = runner.register_current_version()
    b = cluster.workers["machine-b"]
    app = cluster.celery()
    nodes = cluster.consuming()
    paused = [name for name in nodes if name.startswith("machine-a@")]
    assert len(paused) == 1 and any(name.startswith("machine-b@") for name in nodes), nodes
    app.control.cancel_consumer("dagster", destination=paused, reply=True, timeout=5)
    # Only machine-b takes steps until it dies in the middle of scoring.
    killed: dict[str, object] = {}

    earlier = {run.run_id for run in cluster.instance.get_runs()}

    def kill_b_while_scoring() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            runs = [run for run in cluster.instance.get_runs(limit=1) if run.run_id not in earlier]
            if runs:
                hosts = step_hosts(cluster.instance, runs[0].run_id)
                running = running_for(cluster.instance, runs[0].run_id, min_s=1.0)
                scoring = [step for step in running if step.startswith(CHUNK_STEP)]
                if scoring:  # a scoring step busy for a second (importing DeepEval, scoring)
                    host, pid = hosts[scoring[0]]
                    assert host.startswith("machine-b@") and pid in b.processes(), (host, pid)
                    os.kill(pid, signal.SIGKILL)  # the process running the step dies
                    killed.update(run_id=runs[0].run_id, pid=pid)
                    return
            time.sleep(0.1)

    watcher = threading.Thread(target=kill_b_while_scoring, daemon=True)
    watcher.start()
    failed = cluster.execute(JOB, key)
    watcher.join(10)
    assert killed, "machine-b never ran the scoring step"
    assert not failed.success and failed.run_id == killed["run_id"]
    failures = [str(event) for event in failed.all_events if event.is_failure]
    assert any("WorkerLostError" in failure for failure in failures), failures
    # machine-b is gone entirely; machine-a takes work again.
    b.kill()
    assert b.process.poll() is not None and not b.processes() - {b.process.pid}
    app.control.add_consumer("dagster", destination=paused, reply=True, timeout=5)
    retried = cluster.execute(
        JOB,
        key,
        reexecution_options=dg.ReexecutionOptions.from_failure(failed.run_id, cluster.instance),
    )
    assert retried.success, [str(event) for event in retried.all_events if event.is_failure]
    hosts = step_hosts(cluster.instance, retried.run_id)
    assert any(step.startswith(CHUNK_STEP) for step in hosts), hosts  # only the lost chunk(s)
    assert "support_agent__agent_outputs" not in hosts, hosts  # not re-run: it had succeeded
    assert {host.split("@")[0] for host, _ in hosts.values()} == {"machine-a"}, hosts
    _assert_rows(cluster, key)
    assert fleet.runner().summary(key).runs == RUNS


def test_a_worker_lost_whole_mid_run_has_its_step_resumed_by_another_from_the_journal(
    fleet: Fleet,
) -> None:
    cluster = fleet.cluster
    runner = fleet.runner()
    for lost in [
        name for name, worker in cluster.workers.items() if worker.process.poll() is not None
    ]:
        del cluster.workers[lost]
    doomed = cluster.start_worker("machine-c")
    app = cluster.celery()
    cluster.wait_for_workers("machine-c")
    survivors = [name for name in cluster.consuming() if not name.startswith("machine-c@")]
    assert survivors, "no other worker is up"
    app.control.cancel_consumer("dagster", destination=survivors, reply=True, timeout=5)
    key = runner.register_current_version()
    fleet.judge.latency_s = 0.4  # a slower judge: machine-c is lost well before its chunk ends
    watcher, lost = lose_mid_chunk(cluster, doomed, survivors, lambda: fleet.judge.requests)
    started, asked = time.monotonic(), fleet.judge.requests
    # Without re-queueing the run would wait for machine-c for ever: bound the wait here.
    outcome: dict[str, dg.ExecuteJobResult] = {}
    running = threading.Thread(
        target=lambda: outcome.update(result=cluster.execute(JOB, key)), daemon=True
    )
    running.start()
    running.join(REQUEUE_S + 600)
    watcher.join(10)
    assert "error" not in lost, lost["error"]
    assert lost, "machine-c never journaled a judged evaluation"
    assert "result" in outcome, (
        f"the run still waits {time.monotonic() - started:.0f} s after it began"
    )
    result = outcome["result"]
    assert result.success, [str(event) for event in result.all_events if event.is_failure]
    assert doomed.process.wait(10) is not None and not doomed.processes() - {doomed.process.pid}
    hosts = step_hosts(cluster.instance, result.run_id)
    assert not hosts[lost["step"]][0].startswith("machine-c@"), hosts  # taken by a survivor
    waited = time.monotonic() - lost["at"]
    print(f"a worker lost whole: its step re-queued and the run ended {waited:.0f} s later")
    assert waited >= REQUEUE_S - 10  # re-queued by the visibility timeout, nothing else
    _assert_rows(cluster, key)
    assert fleet.runner().summary(key).runs == RUNS
    # The survivor resumed from what machine-c journaled in PostgreSQL.
    metadata = scores_metadata(result)
    assert metadata["resumed"] >= JOURNALED_AT_LOSS
    assert metadata["evaluated"] + metadata["resumed"] == SCORES
    spent = fleet.judge.requests - asked
    before_loss = lost["requests"] - asked  # every call machine-c made, all lost without a journal
    in_flight = before_loss - lost["journaled"]  # calls of the evaluations it had not finished
    extra = spent - metadata["judge_calls"]  # beyond the calls behind the stored rows
    print(
        f"judge calls of the run: {spent}; behind its rows {metadata['judge_calls']}; "
        f"machine-c made {before_loss} before it was lost, {lost['journaled']} behind the "
        f"evaluations it journaled; extra {extra} (without the fleet's journal: {before_loss}); "
        f"resumed {metadata['resumed']}, evaluated {metadata['evaluated']}"
    )
    # The only calls paid twice are those of the evaluations in flight on the lost machine.
    assert extra == in_flight < before_loss
    # The ledger charged every call the lost machine was answered; only the requests it never
    # had an answer to (in flight at the loss) are the judge's alone.
    unanswered = before_loss - lost["answered"]
    assert metadata["attempts/judge_calls"] == spent - unanswered
