"""The distributed profile on loopback: PostgreSQL, Redis and two Celery workers.

Set-up (once for the module): PostgreSQL and Redis from Debian's packages, started here
on free loopback ports and stopped by PID; two `dagster-celery` workers, each its own
process group with its own working folder and Dagster home (two stand-ins for two
machines: ``machine-a@host`` and ``machine-b@host``), pointed at the same PostgreSQL
instance storage and the same Redis broker. This process is the run's orchestrator
(``execute_job`` of a reconstructable job, as dagster-celery requires); every step runs
on a worker. The workers' config is ``deploy/celery/worker.yaml`` with a shorter visibility
timeout (``REQUEUE_S``), so that the step of a worker lost whole is re-queued within the
test. Runs only with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it).
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner, prepare_dagster_home
from n8n_deepeval_pipeline.orchestration.profiles import instance_yaml
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import libpq_url
from tests.conftest import EXAMPLE, ROOT
from tests.live.services import (
    CeleryWorker,
    missing_services,
    postgres_server,
    redis_server,
    start_worker,
)

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]

DISTRIBUTED = os.environ.get("N8N_DEEPEVAL_DISTRIBUTED") == "1"
JOB = "support_agent__benchmark"
CHUNK_STEP = "support_agent__metric_scores.score["  # one step per chunk of evaluations
RUNS, SCORES = 27, 189  # 9 rows × 3 runs; × 7 metrics
REQUEUE_S = 120  # longer than any step of the example takes on a busy 2-core machine


@dataclass
class Cluster:
    instance: dg.DagsterInstance
    postgres_url: str
    redis_url: str
    benchmark: Path
    workers: dict[str, CeleryWorker]
    job: ReconstructableJob
    folder: Path
    worker_env: dict[str, str]  # the environment every worker shares
    config_yaml: Path

    def start_worker(self, name: str) -> CeleryWorker:
        """Another worker machine, with its own working folder and Dagster home."""
        home = self.folder / name / "home"
        (home / "dagster").mkdir(parents=True)
        (home / "dagster" / "dagster.yaml").write_text(instance_yaml("distributed"))
        env = {
            **self.worker_env,
            "N8N_DEEPEVAL_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster"),
        }
        self.workers[name] = start_worker(name, self.folder / name, env, self.config_yaml)
        return self.workers[name]

    def runner(self) -> BenchmarkRunner:
        return BenchmarkRunner(load_benchmark(self.benchmark), self.benchmark, self.instance)

    def celery(self):  # the broker's control channel, as the workers see it
        from dagster_celery.executor import CeleryExecutor
        from dagster_celery.make_app import make_app

        return make_app(
            CeleryExecutor.for_cli(broker=self.redis_url, backend=self.redis_url).app_args()
        )


def _require_distributed() -> None:
    if not DISTRIBUTED:
        pytest.skip("distributed profile: set N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run does)")
    missing = missing_services()
    if missing:
        pytest.fail(f"not installed: {', '.join(missing)}; run scripts/install_services.sh")
    try:
        import dagster_celery  # noqa: F401
        import dagster_postgres  # noqa: F401
        import psycopg2  # noqa: F401
    except ImportError as error:
        pytest.fail(f"{error}: N8N_DEEPEVAL_DISTRIBUTED=1 scripts/bootstrap.sh installs the extra")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    _require_distributed()
    folder = tmp_path_factory.mktemp("distributed")
    benchmarks = folder / "benchmarks"
    shutil.copytree(EXAMPLE, benchmarks / "support_agent")
    with (
        postgres_server() as postgres,
        redis_server(folder / "redis") as redis,
        pytest.MonkeyPatch.context() as env,
    ):
        shared = {
            "N8N_DEEPEVAL_PROFILE": "distributed",
            "N8N_DEEPEVAL_POSTGRES_URL": postgres.url,
            "N8N_DEEPEVAL_REDIS_URL": redis.url,
            "N8N_DEEPEVAL_BENCHMARKS": str(benchmarks),
            "DEEPEVAL_POOL_SIZE": "2",
            "N8N_DEEPEVAL_CHUNK_SIZE": "100",  # 189 evaluations: two chunks
        }
        config_yaml = folder / "worker.yaml"
        deployed = yaml.safe_load((ROOT / "deploy" / "celery" / "worker.yaml").read_text())
        settings = deployed["execution"]["config"]["config_source"]
        settings["broker_transport_options"]["visibility_timeout"] = REQUEUE_S
        config_yaml.write_text(yaml.safe_dump(deployed))
        workers: dict[str, CeleryWorker] = {}
        try:
            # This process: the orchestrator, with a working folder of its own.
            for name, value in shared.items():
                env.setenv(name, value)
            env.setenv("N8N_DEEPEVAL_HOME", str(folder / "orchestrator"))
            env.setenv("DAGSTER_HOME", "unset")  # recorded, so restored afterwards
            env.delenv("DAGSTER_HOME")
            prepare_dagster_home()  # sets DAGSTER_HOME to the orchestrator's instance
            job = ReconstructableRepository.for_module(
                "n8n_deepeval_pipeline.orchestration.definitions", "defs", str(ROOT)
            ).get_reconstructable_job(JOB)
            with dg.DagsterInstance.get() as instance:
                cluster = Cluster(
                    instance,
                    postgres.url,
                    redis.url,
                    benchmarks / "support_agent" / "benchmark.yaml",
                    workers,
                    job,
                    folder,
                    {**os.environ, **shared},
                    config_yaml,
                )
                for name in ("machine-a", "machine-b"):
                    cluster.start_worker(name)
                yield cluster
        finally:
            for worker in workers.values():
                worker.kill(signal.SIGTERM)
            gc.collect()  # Celery's pending results unsubscribe while Redis is still up


def _query(url: str, sql: str) -> list[tuple]:
    import psycopg2

    connection = psycopg2.connect(libpq_url(url))
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()
    finally:
        connection.close()


def _assert_rows(url: str, key: str) -> None:
    """Every table of the version holds its rows once: no duplicates, none missing."""
    part = f"where left(workflow_hash, 12) = '{key}'"
    assert _query(
        url, f"select count(*), count(distinct run_id) from support_agent.expanded_runs {part}"
    ) == [(RUNS, RUNS)]
    assert _query(
        url, f"select count(*), count(distinct run_id) from support_agent.agent_outputs {part}"
    ) == [(RUNS, RUNS)]
    assert _query(
        url,
        "select count(*), count(distinct (run_id, metric)), count(distinct run_id) "
        f"from support_agent.metric_scores {part}",
    ) == [(SCORES, SCORES, RUNS)]
    assert _query(
        url, f"select count(*), count(distinct run_id) from support_agent.run_aggregates {part}"
    ) == [(RUNS, RUNS)]
    # one partition only: nothing else was written
    assert _query(url, "select count(*) from support_agent.metric_scores") == [(SCORES,)]


def _step_hosts(instance: dg.DagsterInstance, run_id: str) -> dict[str, tuple[str, int]]:
    """Step key → (Celery worker hostname, PID of the step's process), from the event log.

    The worker reports its hostname in an engine event as it takes the step; the step's own
    events (STEP_START) carry the PID of the process that runs it.
    """
    hosts, pids = {}, {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or entry.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.ENGINE_EVENT:
            metadata = event.event_specific_data.metadata
            if "Celery worker" in metadata:
                hosts[entry.step_key] = metadata["Celery worker"].value
        elif event.event_type == dg.DagsterEventType.STEP_START:
            pids[entry.step_key] = event.pid
    return {step: (host, pids.get(step)) for step, host in hosts.items()}
    return hosts


def _running_for(instance: dg.DagsterInstance, run_id: str, min_s: float) -> list[str]:
    """Steps started at least ``min_s`` ago that have not finished."""
    started, ended = {}, set()
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or entry.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_START:
            started[entry.step_key] = entry.timestamp
        elif event.event_type in (
            dg.DagsterEventType.STEP_SUCCESS,
            dg.DagsterEventType.STEP_FAILURE,
            dg.DagsterEventType.STEP_SKIPPED,
        ):
            ended.add(entry.step_key)
    now = time.time()
    return [step for step, at in started.items() if step not in ended and now - at >= min_s]


def _execute(cluster: Cluster, key: str, **options) -> dg.ExecuteJobResult:
    return dg.execute_job(
        cluster.job,
        instance=cluster.instance,
        tags={"dagster/partition": key},
        raise_on_error=False,
        **options,
    )


def test_a_benchmark_runs_on_two_workers_into_postgres(cluster: Cluster) -> None:
    runner = cluster.runner()
    key = runner.register_current_version()
    started = time.monotonic()
    result = _execute(cluster, key)
    elapsed = time.monotonic() - started
    assert result.success, [str(event) for event in result.all_events if event.is_failure]
    hosts = _step_hosts(cluster.instance, result.run_id)
    machines = {host.split("@")[0] for host, _ in hosts.values()}
    assert machines <= {"machine-a", "machine-b"} and len(hosts) >= 8, hosts
    chunks = sorted(step for step in hosts if step.startswith(CHUNK_STEP))
    assert chunks == [f"{CHUNK_STEP}c01_of_02]", f"{CHUNK_STEP}c02_of_02]"], hosts
    print(f"run on Celery: {elapsed:.1f} s; steps per worker: {hosts}")
    _assert_rows(cluster.postgres_url, key)
    # The instance is PostgreSQL's: a run, its partition and its materialisations are there.
    assert _query(cluster.postgres_url, "select count(*) from runs") == [(1,)]
    # A user reads the results back the way `n8n-deepeval` does, through the IO manager.
    assert runner.summary(key).runs == RUNS
    stored = runner.stored_versions([key])
    assert (len(stored.runs), len(stored.scores)) == (RUNS, SCORES)


def test_a_killed_worker_s_steps_finish_after_reexecution_from_failure(cluster: Cluster) -> None:
    runner = cluster.runner()
    key = runner.register_current_version()
    b = cluster.workers["machine-b"]
    app = cluster.celery()
    nodes = [name for reply in app.control.ping(timeout=5) for name in reply]
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
                hosts = _step_hosts(cluster.instance, runs[0].run_id)
                running = _running_for(cluster.instance, runs[0].run_id, min_s=1.0)
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
    failed = _execute(cluster, key)
    watcher.join(10)
    assert killed, "machine-b never ran the scoring step"
    assert not failed.success and failed.run_id == killed["run_id"]
    failures = [str(event) for event in failed.all_events if event.is_failure]
    assert any("WorkerLostError" in failure for failure in failures), failures
    # machine-b is gone entirely; machine-a takes work again.
    b.kill()
    assert b.process.poll() is not None and not b.processes() - {b.process.pid}
    app.control.add_consumer("dagster", destination=paused, reply=True, timeout=5)
    retried = _execute(
        cluster,
        key,
        reexecution_options=dg.ReexecutionOptions.from_failure(failed.run_id, cluster.instance),
    )
    assert retried.success, [str(event) for event in retried.all_events if event.is_failure]
    hosts = _step_hosts(cluster.instance, retried.run_id)
    assert any(step.startswith(CHUNK_STEP) for step in hosts), hosts  # only the lost chunk(s)
    assert "support_agent__agent_outputs" not in hosts, hosts  # not re-run: it had succeeded
    assert {host.split("@")[0] for host, _ in hosts.values()} == {"machine-a"}, hosts
    _assert_rows(cluster.postgres_url, key)
    assert cluster.runner().summary(key).runs == RUNS


def test_a_worker_lost_whole_mid_run_has_its_step_requeued_and_the_run_ends_whole(
    cluster: Cluster,
) -> None:
    runner = cluster.runner()
    for lost in [
        name for name, worker in cluster.workers.items() if worker.process.poll() is not None
    ]:
        del cluster.workers[lost]
    doomed = cluster.start_worker("machine-c")
    app = cluster.celery()
    deadline = time.monotonic() + 120
    while not any(
        name.startswith("machine-c@") for reply in app.control.ping(timeout=5) for name in reply
    ):
        assert time.monotonic() < deadline, doomed.log.read_text()[-2000:]
    survivors = [
        name
        for reply in app.control.ping(timeout=5)
        for name in reply
        if not name.startswith("machine-c@")
    ]
    assert survivors, "no other worker is up"
    app.control.cancel_consumer("dagster", destination=survivors, reply=True, timeout=5)
    key = runner.register_current_version()
    earlier = {run.run_id for run in cluster.instance.get_runs()}
    lost: dict[str, object] = {}

    def lose_c_while_scoring() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            runs = [run for run in cluster.instance.get_runs(limit=1) if run.run_id not in earlier]
            if runs:
                hosts = _step_hosts(cluster.instance, runs[0].run_id)
                running = _running_for(cluster.instance, runs[0].run_id, min_s=1.0)
                scoring = [step for step in running if step.startswith(CHUNK_STEP)]
                if scoring:
                    host, _ = hosts[scoring[0]]
                    assert host.startswith("machine-c@"), host
                    os.killpg(doomed.process.pid, signal.SIGKILL)  # the machine, whole
                    lost.update(step=scoring[0], at=time.monotonic())
                    app.control.add_consumer(
                        "dagster", destination=survivors, reply=True, timeout=5
                    )
                    return
            time.sleep(0.1)

    watcher = threading.Thread(target=lose_c_while_scoring, daemon=True)
    watcher.start()
    started = time.monotonic()
    # Without re-queueing the run would wait for machine-c for ever: bound the wait here.
    outcome: dict[str, dg.ExecuteJobResult] = {}
    running = threading.Thread(
        target=lambda: outcome.update(result=_execute(cluster, key)), daemon=True
    )
    running.start()
    running.join(REQUEUE_S + 600)
    watcher.join(10)
    assert lost, "machine-c never ran a scoring step"
    assert "result" in outcome, (
        f"the run still waits {time.monotonic() - started:.0f} s after it began"
    )
    result = outcome["result"]
    assert result.success, [str(event) for event in result.all_events if event.is_failure]
    assert doomed.process.wait(10) is not None and not doomed.processes() - {doomed.process.pid}
    hosts = _step_hosts(cluster.instance, result.run_id)
    assert not hosts[lost["step"]][0].startswith("machine-c@"), hosts  # taken by a survivor
    waited = time.monotonic() - lost["at"]
    print(f"a worker lost whole: its step re-queued and the run ended {waited:.0f} s later")
    assert waited >= REQUEUE_S - 10  # re-queued by the visibility timeout, nothing else
    _assert_rows(cluster.postgres_url, key)
    assert cluster.runner().summary(key).runs == RUNS
