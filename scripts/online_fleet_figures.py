"""Figures of online evaluation on a fleet: its throughput, and what the shared journal saves.

Executions scored a minute on one machine and on two Celery workers, and the judge calls
a step re-delivered after its worker was lost spends, with the fleet's shared journal
and without it:

    N8N_DEEPEVAL_DISTRIBUTED=1 .venv/bin/python scripts/online_fleet_figures.py
    N8N_DEEPEVAL_DISTRIBUTED=1 .venv/bin/python scripts/online_fleet_figures.py --no-pin

It needs PostgreSQL and Redis (scripts/install_services.sh) and the distributed extra
(``N8N_DEEPEVAL_DISTRIBUTED=1 scripts/bootstrap.sh``); it starts its own on loopback, as
the live tests do (tests/live/cluster.py), with a loopback judge at 300 ms and the judge
cache off, so every evaluation asks the judge.

- ``throughput``: a fake of n8n's public API (tests/n8n_api/fake_n8n.py) serves a webhook
  agent's production executions; the online sensor ticks after every batch of new ones
  and asks for a run per tick; each run scores its batch on two judge-backed metrics
  (answer_relevancy, bias). Every run is its own process, as the daemon launches it. One
  machine: the local profile (SQLite instance, DuckDB results), runs one after the other,
  one step at a time, as one worker machine takes them. Two workers: the distributed
  profile (PostgreSQL, Redis), the runs launched together and their steps taken by two
  Celery workers, one step at a time each. Every machine scores with the same pool
  (``DEEPEVAL_POOL_SIZE``) and, unless ``--no-pin``, on a core of its own (CPU affinity,
  which its steps' processes inherit), so that two machines have twice one's CPU as two
  real ones would; the orchestrator, PostgreSQL, Redis, the fake and the judge are not
  pinned. The judge is not the bound (each worker has several evaluations in flight):
  CPU is, so the host's CPU busy over each measurement is printed too. The figure:
  executions scored / wall-clock minutes from the first run's launch to the last one's
  end, every run's process start included.
- ``journal``: the example benchmark on the fleet; the worker scoring a chunk is lost
  whole (its process group killed) once it journaled 12 judged evaluations, and the
  chunk is re-delivered to another worker after Redis's visibility timeout. Figures:
  the judge calls the run spent beyond those behind its rows (paid twice) with the
  journal the fleet shares in PostgreSQL, and without it: a per-machine journal is lost
  with its machine, so the re-delivered step scores from scratch and pays again every
  call the lost machine made. There is no switch that turns the shared journal off, so
  that figure is those calls, counted by the judge, not a second run.

Times are wall-clock on this machine, where the workers, PostgreSQL, Redis, n8n's fake and
the judge all share its cores: read them with the load average printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAME = "support_online"
JOB = f"{NAME}__online"
BENCHMARK = f"""
name: {NAME}
workflow: {{id: wf}}
dataset: {{path: dataset.jsonl, idColumn: rowId}}
target: {{type: n8n_workflow, startNodeName: AI Agent, endNodeName: Reply}}
metrics:
  - metric: answer_relevancy
  - metric: bias
online:
  metrics: [answer_relevancy, bias]
  maxPerHour: 100000
"""
EXAMPLE_JOB = "support_agent__benchmark"
REQUEUE_S = 60  # Redis's visibility timeout for the workers here: longer than any step
POOL_SIZE = "2"

# One run in a process of its own, as the daemon launches it: its instance from
# $DAGSTER_HOME (the profile's), its steps by the profile's executor.
CHILD = """
import json, sys
import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository
from n8n_deepeval_pipeline.orchestration.local_runner import prepare_dagster_home

request = json.loads(sys.argv[1])
prepare_dagster_home()
with dg.DagsterInstance.get() as instance:
    for name, keys in request["register"]:
        instance.add_dynamic_partitions(name, keys)
    job = ReconstructableRepository.for_module(
        "n8n_deepeval_pipeline.orchestration.definitions", "defs", request["root"]
    ).get_reconstructable_job(request["job"])
    result = dg.execute_job(
        job, instance=instance, tags={"dagster/partition": request["partition"]},
        run_config=request["run_config"], raise_on_error=False,
    )
    scores = errors = 0
    for event in result.get_asset_materialization_events():
        materialisation = event.step_materialization_data.materialization
        if materialisation.asset_key.path[-1] == "online_scores":
            scores += materialisation.metadata["scores"].value
            errors += materialisation.metadata["errors"].value
    print("RESULT " + json.dumps({"success": result.success, "scores": scores, "errors": errors}))
"""


def _tests() -> None:
    """The live tests' fleet and n8n's fake are reused: the repository's root on the path."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def write_benchmarks(folder: Path) -> Path:
    """The online benchmark and the example benchmark, side by side."""
    online = folder / NAME
    online.mkdir(parents=True)
    (online / "dataset.jsonl").write_text('{"rowId": "r1", "input": "hello"}\n')
    (online / "benchmark.yaml").write_text(BENCHMARK)
    shutil.copytree(ROOT / "examples" / "support_agent", folder / "support_agent")
    return online / "benchmark.yaml"


def plan_runs(fake: Any, benchmark: Path, executions: int, runs: int) -> list[dict[str, Any]]:
    """The sensor's ticks over ``executions`` new executions in ``runs`` batches: a run each."""
    import dagster as dg

    from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
    from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
    from tests.orchestration.test_online import webhook_execution

    sensor = build_definitions([benchmark]).resolve_sensor_def(f"{NAME}__online")
    n8n = N8nResource(base_url=fake.base_url, api_key="test-key")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    planned, cursor, number = [], None, 0
    with dg.DagsterInstance.ephemeral() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"n8n": n8n})
        cursor = sensor(context).cursor  # the first tick: where the traffic stands
        for batch in range(runs):
            size = executions // runs + (batch < executions % runs)
            for _ in range(size):
                number += 1
                started = now - timedelta(seconds=executions - number)
                answer = f"Order A{number} ships on day {number % 28 + 1}."
                fake.executions.append(
                    {**webhook_execution(number, answer, started), "workflowVersionId": "v1"}
                )
            context = dg.build_sensor_context(
                instance=instance, cursor=cursor, resources={"n8n": n8n}
            )
            result = sensor(context)
            cursor = result.cursor
            register = [
                [request.partitions_def_name, request.partition_keys]
                for request in result.dynamic_partitions_requests or []
            ]
            for name, keys in register:
                instance.add_dynamic_partitions(name, keys)
            (request,) = result.run_requests
            items = request.run_config["ops"][f"{NAME}__online_scores"]["config"]["items"]
            assert len(items) == size, (len(items), size)
            planned.append(
                {"root": str(ROOT), "job": JOB, "partition": request.partition_key,
                 "run_config": request.run_config, "register": register}
            )  # fmt: skip
    return planned


def launch(
    run: dict[str, Any], env: dict[str, str], cores: set[int] | None
) -> subprocess.Popen[str]:
    """A run in a process of its own, on ``cores`` (its steps' processes inherit them)."""
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(run)],
        preexec_fn=None if cores is None else (lambda: os.sched_setaffinity(0, cores)),
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=1800)
    for line in out.splitlines():
        if line.startswith("RESULT "):
            done: dict[str, Any] = json.loads(line[len("RESULT ") :])
            if done["success"]:
                return done
    raise RuntimeError(f"a run failed ({process.returncode}):\n{out[-2000:]}\n{err[-4000:]}")


def busy_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core so far, from /proc/stat."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def score_runs(
    runs: list[dict[str, Any]], env: dict[str, str], together: bool, cores: set[int] | None
) -> tuple[float, int, float]:
    """(seconds from the first launch to the last run's end, scores, host CPU busy 0-1)."""
    started, (busy, total) = time.monotonic(), busy_ticks()
    if together:
        results = [finish(process) for process in [launch(run, env, cores) for run in runs]]
    else:
        results = [finish(launch(run, env, cores)) for run in runs]
    elapsed, (busy_after, total_after) = time.monotonic() - started, busy_ticks()
    if any(result["errors"] for result in results):
        raise RuntimeError(f"scores with errors: {results}")
    cpu = (busy_after - busy) / max(1, total_after - total)
    return elapsed, sum(result["scores"] for result in results), cpu


def per_minute(label: str, executions: int, measured: tuple[float, int, float]) -> None:
    elapsed, scores, cpu = measured
    print(
        f"throughput {label}: {executions} executions ({scores} scores) in {elapsed:.1f} s: "
        f"{executions / elapsed * 60:.1f} executions scored a minute; the host's CPU "
        f"{cpu:.0%} busy",
        flush=True,
    )


def judge_environment(judge_url: str, fake_url: str, benchmarks: Path) -> dict[str, str]:
    return {
        "N8N_DEEPEVAL_BENCHMARKS": str(benchmarks),
        "N8N_API_URL": fake_url,
        "N8N_API_KEY": "test-key",
        "DEEPEVAL_POOL_SIZE": POOL_SIZE,
        "N8N_DEEPEVAL_CHUNK_SIZE": "100",  # the example's 189 evaluations: two chunks
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": judge_url,
        "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-loopback",
        "N8N_DEEPEVAL_JUDGE_CACHE": "0",  # every evaluation asks the judge
    }


def one_machine(
    runs: list[dict[str, Any]], shared: dict[str, str], folder: Path, pin: bool
) -> tuple[float, int, float]:
    env = {**os.environ, **shared, "N8N_DEEPEVAL_PROFILE": "local",
           "N8N_DEEPEVAL_HOME": str(folder / "one-machine")}  # fmt: skip
    for name in ("DAGSTER_HOME", "N8N_DEEPEVAL_DUCKDB", "N8N_DEEPEVAL_POSTGRES_URL"):
        env.pop(name, None)
    return score_runs(runs, env, together=False, cores={0} if pin else None)


def lose_a_worker(cluster: Any, judge: Any, benchmark: Path) -> dict[str, Any]:
    """The example benchmark on machine-c, lost whole mid-chunk; the survivors finish it."""
    from n8n_deepeval_pipeline import load_benchmark
    from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner
    from tests.live.cluster import lose_mid_chunk, scores_metadata

    doomed = cluster.start_worker("machine-c")
    cluster.wait_for_workers("machine-c")
    app = cluster.celery()
    survivors = [name for name in cluster.consuming() if not name.startswith("machine-c@")]
    app.control.cancel_consumer("dagster", destination=survivors, reply=True, timeout=5)
    key = BenchmarkRunner(
        load_benchmark(benchmark), benchmark, cluster.instance
    ).register_current_version()
    watcher, lost = lose_mid_chunk(
        cluster, doomed, survivors, lambda: judge.requests, deadline_s=600
    )
    asked = judge.requests
    result = cluster.execute(EXAMPLE_JOB, key)
    watcher.join(10)
    if "error" in lost or "requests" not in lost or not result.success:
        raise RuntimeError(f"the lost worker's run did not go as planned: {lost}, {result.success}")
    metadata = scores_metadata(result)
    spent = judge.requests - asked
    made = lost["requests"] - asked  # every call machine-c made before it was lost
    return {
        "spent": spent,
        "behind_rows": metadata["judge_calls"],
        "made_by_lost": made,
        "journaled": lost["journaled"],
        "extra": spent - metadata["judge_calls"],
        "resumed": metadata["resumed"],
        "evaluated": metadata["evaluated"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=120, help="production executions scored")
    parser.add_argument("--runs", type=int, default=4, help="sensor ticks, a run each")
    parser.add_argument("--only", default="throughput,journal", help="comma-separated figures")
    parser.add_argument(
        "--no-pin",
        dest="pin",
        action="store_false",
        help="let every machine use every core, rather than one core a machine",
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    os.environ.setdefault("N8N_DEEPEVAL_DISTRIBUTED", "1")  # the fleet's set-up requires it
    _tests()
    import pytest

    import tests.live.cluster as fleet
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
    from tests.n8n_api.fake_n8n import FakeN8nApi
    from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT

    fleet.REQUEUE_S = REQUEUE_S  # a lost worker's step re-delivered within the script
    print(f"load average: {' '.join(f'{load:.2f}' for load in os.getloadavg())}; "
          f"{os.cpu_count()} cores; judge 300 ms, cache off; pool {POOL_SIZE} a machine; "
          f"{'one core a machine' if args.pin else 'every machine on every core'}",
          flush=True)  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="online-fleet-"))
    judge = LoopbackJudge(latency_s=0.3).start()
    try:
        with FakeN8nApi() as fake:
            fake.workflows["wf"] = {**WEBHOOK_AGENT, "active": True, "activeVersionId": "v1"}
            fake.versions["v1"] = WEBHOOK_AGENT
            benchmark = write_benchmarks(folder / "benchmarks")
            shared = judge_environment(judge.base_url, fake.base_url, folder / "benchmarks")
            os.environ.update(shared)  # the sensor reads the benchmarks as the daemon does
            runs = plan_runs(fake, benchmark, args.executions, args.runs)
            if "throughput" in only:
                measured = one_machine(runs, shared, folder, args.pin)
                per_minute("on one machine", args.executions, measured)
            with fleet.cluster_of(
                folder / "fleet", folder / "benchmarks", shared, ("machine-a", "machine-b")
            ) as cluster:
                cluster.wait_for_workers("machine-a", "machine-b")
                if "throughput" in only:
                    if args.pin:  # each worker machine on a core of its own
                        for core, name in enumerate(("machine-a", "machine-b")):
                            for pid in cluster.workers[name].processes():
                                os.sched_setaffinity(pid, {core})
                    env = {**os.environ}  # the orchestrator's: the distributed profile
                    measured = score_runs(runs, env, together=True, cores=None)
                    (stored,) = cluster.query(f"select count(*) from {NAME}.online_scores")
                    assert stored[0] == measured[1], (stored, measured)
                    per_minute("on two Celery workers", args.executions, measured)
                if "journal" in only:
                    loss = lose_a_worker(
                        cluster, judge, folder / "benchmarks" / "support_agent" / "benchmark.yaml"
                    )
                    print(
                        f"journal: a worker lost whole mid-chunk after {loss['made_by_lost']} "
                        f"judge calls ({loss['journaled']} behind the evaluations it journaled); "
                        f"the re-delivered step paid {loss['extra']} calls again with the shared "
                        f"journal ({loss['made_by_lost'] - loss['journaled']} were in flight at "
                        f"the loss; resumed {loss['resumed']}, evaluated {loss['evaluated']}); "
                        f"without it (a journal per machine, lost with it) the step scores from "
                        f"scratch and pays all {loss['made_by_lost']} again; the run spent "
                        f"{loss['spent']}, {loss['behind_rows']} behind its rows",
                        flush=True,
                    )
    except pytest.fail.Exception as error:  # a part of the fleet is not installed
        print(error, file=sys.stderr)
        return 2
    finally:
        judge.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
