"""A fleet on loopback for the distributed profile's live tests: PostgreSQL, Redis and
Celery workers, each worker a stand-in for one machine.

This process is the runs' orchestrator (``execute_job`` of a reconstructable job, as
dagster-celery requires); every step runs on a worker. Each worker is its own process
group with its own working folder and Dagster home (``machine-a@host``, …), pointed at
the same PostgreSQL instance storage and the same Redis broker. The workers' config is
``deploy/celery/worker.yaml`` with a shorter visibility timeout (``REQUEUE_S``), so that
the step of a worker lost whole is re-queued within a test.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

from n8n_deepeval_pipeline.orchestration.local_runner import prepare_dagster_home
from n8n_deepeval_pipeline.orchestration.profiles import instance_yaml
from tests.conftest import ROOT
from tests.live.services import (
    CeleryWorker,
    missing_services,
    postgres_server,
    redis_server,
    run_sql,
    start_worker,
)

DISTRIBUTED = os.environ.get("N8N_DEEPEVAL_DISTRIBUTED") == "1"
REQUEUE_S = 120  # longer than any step of the tests takes on a busy 2-core machine


def require_distributed() -> None:
    """Skip without N8N_DEEPEVAL_DISTRIBUTED=1; fail when it is set but a part is missing."""
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


@dataclass
class Cluster:
    instance: dg.DagsterInstance
    postgres_url: str
    redis_url: str
    folder: Path
    worker_env: dict[str, str]  # the environment every worker shares
    config_yaml: Path
    workers: dict[str, CeleryWorker] = field(default_factory=dict)

    def start_worker(self, name: str) -> CeleryWorker:
        """Another worker machine, with its own working folder and Dagster home."""
        home = self.folder / name / "home"
        (home / "dagster").mkdir(parents=True, exist_ok=True)
        (home / "dagster" / "dagster.yaml").write_text(instance_yaml("distributed"))
        env = {
            **self.worker_env,
            "N8N_DEEPEVAL_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster"),
        }
        self.workers[name] = start_worker(name, self.folder / name, env, self.config_yaml)
        return self.workers[name]

    def job(self, name: str) -> ReconstructableJob:
        """A job of the code location, as the workers load it."""
        return ReconstructableRepository.for_module(
            "n8n_deepeval_pipeline.orchestration.definitions", "defs", str(ROOT)
        ).get_reconstructable_job(name)

    def execute(self, job: str, partition: str, **options) -> dg.ExecuteJobResult:
        """One run of ``job`` for ``partition``, its steps on the workers."""
        return dg.execute_job(
            self.job(job),
            instance=self.instance,
            tags={"dagster/partition": partition},
            raise_on_error=False,
            **options,
        )

    def celery(self):  # the broker's control channel, as the workers see it
        from dagster_celery.executor import CeleryExecutor
        from dagster_celery.make_app import make_app

        return make_app(
            CeleryExecutor.for_cli(broker=self.redis_url, backend=self.redis_url).app_args()
        )

    def consuming(self) -> list[str]:
        """The Celery names of the workers that answer a ping."""
        return [name for reply in self.celery().control.ping(timeout=5) for name in reply]

    def wait_for_workers(self, *names: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while not all(any(node.startswith(f"{name}@") for node in self.consuming())
                      for name in names):  # fmt: skip
            assert time.monotonic() < deadline, f"workers {names} never answered"

    def serve_only(self, name: str) -> None:
        """Steps go to worker ``name`` alone: the others stop taking any (they keep running)."""
        app, nodes = self.celery(), self.consuming()
        chosen = [node for node in nodes if node.startswith(f"{name}@")]
        assert chosen, f"worker {name} does not answer: {nodes}"
        app.control.add_consumer("dagster", destination=chosen, reply=True, timeout=5)
        others = [node for node in nodes if node not in chosen]
        if others:
            app.control.cancel_consumer("dagster", destination=others, reply=True, timeout=5)

    def query(self, sql: str, parameters: list | None = None) -> list[tuple]:
        return run_sql(self.postgres_url, sql, parameters)


@contextlib.contextmanager
def cluster_of(
    folder: Path, benchmarks: Path, environment: dict[str, str], machines: tuple[str, ...]
) -> Iterator[Cluster]:
    """PostgreSQL, Redis and a worker per machine name; this process as the orchestrator.

    ``environment``: what the orchestrator and every worker share besides the profile's own
    (judge, pool size, n8n's API).
    """
    require_distributed()
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
            **environment,
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
            with dg.DagsterInstance.get() as instance:
                cluster = Cluster(
                    instance,
                    postgres.url,
                    redis.url,
                    folder,
                    {**os.environ, **shared},
                    config_yaml,
                    workers,
                )
                for name in machines:
                    cluster.start_worker(name)
                yield cluster
        finally:
            for worker in workers.values():
                worker.kill(signal.SIGTERM)
            gc.collect()  # Celery's pending results unsubscribe while Redis is still up


def step_hosts(instance: dg.DagsterInstance, run_id: str) -> dict[str, tuple[str, int]]:
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


def running_for(instance: dg.DagsterInstance, run_id: str, min_s: float) -> list[str]:
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


CHUNK_STEP = "support_agent__metric_scores.score["  # the example's scoring steps, one a chunk
JOURNALED_AT_LOSS = 12  # judged evaluations of a chunk journaled when its machine is lost


def scores_metadata(result: dg.ExecuteJobResult) -> dict[str, Any]:
    """The metadata of a run's materialisation of the example's metric_scores."""
    key = dg.AssetKey(["support_agent", "metric_scores"])
    for event in result.get_asset_materialization_events():
        materialisation = event.step_materialization_data.materialization
        if materialisation.asset_key == key:
            return {name: value.value for name, value in materialisation.metadata.items()}
    raise AssertionError("metric_scores was not materialised")


def chunk_journal(cluster: Cluster, chunk: str) -> dict[str, int]:
    """A chunk's journal and ledger so far: its judged evaluations, the judge calls behind
    the evaluations it journaled, and the calls its workers were answered."""
    if cluster.query("select to_regclass('n8n_deepeval_journal.scores')") == [(None,)]:
        return {"judged": 0, "journaled": 0, "answered": 0}  # no step has journaled yet
    ((judged, journaled),) = cluster.query(
        "select count(*) filter (where (result->>'judge_calls')::int > 0), "
        "coalesce(sum((result->>'judge_calls')::int), 0) "
        "from n8n_deepeval_journal.scores where chunk = %s",
        [chunk],
    )
    ((answered,),) = cluster.query(
        "select count(*) from n8n_deepeval_journal.answered_calls where chunk = %s", [chunk]
    )
    return {"judged": int(judged), "journaled": int(journaled), "answered": int(answered)}


def lose_mid_chunk(
    cluster: Cluster,
    doomed: CeleryWorker,
    survivors: list[str],
    requests: Callable[[], int],
    deadline_s: float = 300,
) -> tuple[threading.Thread, dict[str, Any]]:
    """Watch the next run; once its chunk step on ``doomed`` has journaled
    ``JOURNALED_AT_LOSS`` judged evaluations, kill that machine whole and let the
    ``survivors`` take steps again.

    Returns the watching thread and what it saw at the loss: the chunk, its step, when
    (``time.monotonic``), the judge's ``requests()`` and the chunk's journal; ``error`` if
    the watch failed.
    """
    earlier = {run.run_id for run in cluster.instance.get_runs()}
    lost: dict[str, Any] = {}

    def lose() -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            runs = [run for run in cluster.instance.get_runs(limit=1) if run.run_id not in earlier]
            if runs:
                running = running_for(cluster.instance, runs[0].run_id, min_s=0.0)
                scoring = [step for step in running if step.startswith(CHUNK_STEP)]
                chunk = scoring[0][len(CHUNK_STEP) : -1] if scoring else ""
                # several judged evaluations journaled, more to come: the machine is lost
                if scoring and chunk_journal(cluster, chunk)["judged"] >= JOURNALED_AT_LOSS:
                    host, _ = step_hosts(cluster.instance, runs[0].run_id)[scoring[0]]
                    assert host.startswith(f"{doomed.name}@"), host
                    os.killpg(doomed.process.pid, signal.SIGKILL)  # the machine, whole
                    time.sleep(1)  # nothing arrives from a lost machine: the counts settle
                    lost.update(chunk=chunk, step=scoring[0], at=time.monotonic())
                    lost.update(requests=requests(), **chunk_journal(cluster, chunk))
                    cluster.celery().control.add_consumer(
                        "dagster", destination=survivors, reply=True, timeout=5
                    )
                    return
            time.sleep(0.1)

    def watch() -> None:
        try:
            lose()
        except BaseException as error:  # said by the caller, not lost with the thread
            lost["error"] = repr(error)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher, lost
