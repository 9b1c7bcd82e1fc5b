"""Chunked scoring at scale: a synthetic benchmark against a loopback judge at 50 ms.

    .venv/bin/python scripts/scaling_benchmark.py            # 20,000 evaluations; tens of minutes
    .venv/bin/python scripts/scaling_benchmark.py --quick    # 1,200 evaluations, a sanity run

A benchmark of rows × runsPerRow × judge-backed metrics (bias, toxicity, PII leakage,
hallucination) with recorded outputs is materialised the way the UI runs it (a fresh
process, the job's own executor, a persistent instance), every metric judged by the
loopback OpenAI-compatible judge (``testing.loopback_judge``, 50 ms a call, judge cache
off, so every evaluation calls it). First with 1, 2 and 4 chunks in parallel at the
largest size (``parallel``), then at 1/4, 1/2 and all of it in chunks of the default 1000
evaluations, 4 steps at once (``growth``: a chunk's memory must not grow with the
benchmark), and prints for each: wall time of
the ``metric_scores`` steps, evaluations per second, CPU per evaluation (the machine's busy
CPU during the run, from ``/proc/stat``, less the judge's: run it on a quiet machine), the
largest chunk step's peak RSS and its workers' peak RSS. Each chunk has its own pool
(``DEEPEVAL_POOL_SIZE``, default 4 here).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.tables.scoring_chunks import DEFAULT_CHUNK_SIZE

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["bias", "toxicity", "pii_leakage", "hallucination"]
RUNS_PER_ROW = 5
JOB = "bench_scale__benchmark"
STEP = "bench_scale__metric_scores"

_WORKFLOW = {
    "nodes": [
        {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "parameters": {}}
    ],
    "connections": {},
}

# The stand-in for the UI's run worker; prints the run's figures as one JSON line.
_RUN = """
import json, sys, time
import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository
from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.local_runner import BenchmarkRunner, local_instance

path, root = sys.argv[1], sys.argv[2]
with local_instance() as instance:
    key = BenchmarkRunner(
        load_benchmark(path), __import__("pathlib").Path(path), instance
    ).register_current_version()
    job = ReconstructableRepository.for_module(
        "n8n_deepeval_pipeline.orchestration.definitions", "defs", root
    ).get_reconstructable_job(sys.argv[3])
    result = dg.execute_job(job, instance=instance, tags={"dagster/partition": key})
    times, chunks = {}, []
    for entry in instance.all_logs(result.run_id):
        event = entry.dagster_event
        if event is None or not entry.step_key or not entry.step_key.startswith(sys.argv[4]):
            continue
        if event.is_step_start or event.is_step_success:
            times.setdefault(entry.step_key, []).append(entry.timestamp)
        if event.event_type_value == "STEP_OUTPUT" and ".score[" in entry.step_key:
            metadata = event.event_specific_data.metadata
            chunks.append({k: getattr(v, "value", v) for k, v in metadata.items()})
    stamps = [t for pair in times.values() for t in pair]
    print("RESULT " + json.dumps({
        "success": result.success,
        "scoring_s": max(stamps) - min(stamps),
        "chunks": chunks,
    }))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_benchmark(folder: Path, evaluations: int) -> tuple[Path, int]:
    """A benchmark of about ``evaluations`` evaluations; its file and exact size."""
    from n8n_deepeval_pipeline.workflow.hashing import workflow_hash

    rows = max(1, math.ceil(evaluations / (RUNS_PER_ROW * len(METRICS))))
    folder.mkdir(parents=True)
    (folder / "workflow.json").write_text(json.dumps(_WORKFLOW))
    with (folder / "dataset.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["id", "input", "context"])
        for row in range(rows):
            writer.writerow(
                [f"r{row}", f"Where is order A{row}?", json.dumps([f"Order A{row} shipped."])]
            )
    with (folder / "outputs.jsonl").open("w") as file:
        for row in range(rows):
            for run in range(RUNS_PER_ROW):
                answer = f"Order A{row} shipped on day {(row + run) % 28 + 1}."
                line = {"row_id": f"r{row}", "run_index": run, "output": answer}
                file.write(json.dumps(line) + "\n")
    metrics = "\n".join(f"  - metric: {name}" for name in METRICS)
    (folder / "benchmark.yaml").write_text(
        "name: bench_scale\n"
        "workflow: workflow.json\n"
        "dataset:\n  path: dataset.csv\n"
        "  columnMapping: {input: input, context: context}\n"
        f"runsPerRow: {RUNS_PER_ROW}\n"
        "target:\n  type: recorded\n  outputs: outputs.jsonl\n"
        f"  workflowHash: {workflow_hash(_WORKFLOW)}\n"
        f"metrics:\n{metrics}\n"
    )
    return folder / "benchmark.yaml", rows * RUNS_PER_ROW * len(METRICS)


def _machine_busy_cpu_s() -> float:
    """CPU seconds every process of the machine has spent, from ``/proc/stat``."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float:
    """CPU seconds of one process (user + system), from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(
    work: Path, evaluations: int, chunks: int | None, judge_url: str, pool: int, judge_pid: int
) -> dict[str, Any]:
    """One materialisation of a fresh benchmark of this size in ``chunks`` chunks.

    ``chunks`` None: chunks of the default size, 4 steps at once.
    """
    benchmark, total = write_benchmark(work / "benchmarks" / "bench_scale", evaluations)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "N8N_DEEPEVAL_DUCKDB")},
        "N8N_DEEPEVAL_HOME": str(work / "home"),
        "N8N_DEEPEVAL_BENCHMARKS": str(work / "benchmarks"),
        "N8N_DEEPEVAL_CHUNK_SIZE": str(math.ceil(total / chunks) if chunks else DEFAULT_CHUNK_SIZE),
        "N8N_DEEPEVAL_LOCAL_EXECUTOR": "multiprocess",  # chunks in parallel
        "N8N_DEEPEVAL_MAX_STEPS": str(max(chunks or 4, 2)),
        "DEEPEVAL_POOL_SIZE": str(pool),
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "loopback",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": judge_url,
        "N8N_DEEPEVAL_JUDGE_CACHE": "0",
        "N8N_DEEPEVAL_JUDGE_MAX_IN_FLIGHT": "256",
    }
    # The run's processes include workers forked by each chunk's zygote, which no rusage of
    # this process sees: count the machine's busy CPU, less the judge's.
    before = _machine_busy_cpu_s() - _process_cpu_s(judge_pid)
    started = time.monotonic()
    command = [sys.executable, "-c", _RUN, str(benchmark), str(ROOT), JOB, STEP]
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = _machine_busy_cpu_s() - _process_cpu_s(judge_pid)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"run failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    figures = json.loads(lines[-1][len("RESULT ") :])
    if not figures["success"]:
        raise RuntimeError(f"run did not succeed:\n{done.stderr[-4000:]}")
    cpu = after - before
    step_rss = [chunk.get("step_peak_rss_mb", 0.0) for chunk in figures["chunks"]]
    worker_rss = [chunk.get("pool/peak_rss_mb_per_worker", 0.0) for chunk in figures["chunks"]]
    return {
        "evaluations": total,
        "chunks": len(figures["chunks"]),
        "wall_s": wall,
        "scoring_s": figures["scoring_s"],
        "per_s": total / figures["scoring_s"],
        "cpu_ms_per_eval": 1000 * cpu / total,
        "chunk_step_peak_mb": max(step_rss),
        "worker_peak_mb": max(worker_rss),
    }


def _print(result: dict[str, Any]) -> None:
    print(
        f"{result['evaluations']:>7} evals | {result['chunks']:>2} chunks | scoring "
        f"{result['scoring_s']:7.1f} s | {result['per_s']:6.1f} evals/s | CPU "
        f"{result['cpu_ms_per_eval']:5.1f} ms/eval | chunk step peak "
        f"{result['chunk_step_peak_mb']:6.1f} MB | worker peak {result['worker_peak_mb']:5.1f} MB "
        f"| run wall {result['wall_s']:6.1f} s",
        flush=True,
    )


def main() -> None:
    """Start the loopback judge, run every configuration, print a line for each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,200 evaluations at most")
    parser.add_argument("--evaluations", type=int, default=None)
    parser.add_argument("--pool", type=int, default=4, help="workers per chunk")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--series", choices=["parallel", "growth", "both"], default="both")
    args = parser.parse_args()
    largest = args.evaluations or (1200 if args.quick else 20_000)
    port = _free_port()
    judge = subprocess.Popen(
        [
            *(sys.executable, "-m", "n8n_deepeval_pipeline.testing.loopback_judge"),
            *("--port", str(port), "--latency-ms", str(args.latency_ms)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parallel: list[tuple[int, int | None]] = [(largest, 1), (largest, 2), (largest, 4)]
    growth: list[tuple[int, int | None]] = [
        (largest // 4, None),
        (largest // 2, None),
        (largest, None),
    ]
    plan = {"parallel": parallel, "growth": growth, "both": parallel + growth}[args.series]
    print(
        f"loopback judge at {args.latency_ms:g} ms; {args.pool} workers per chunk; "
        f"{os.cpu_count()} CPUs"
    )
    try:
        time.sleep(1.0)
        for evaluations, chunks in plan:
            work = Path(tempfile.mkdtemp(prefix="scaling-"))
            try:
                url = f"http://127.0.0.1:{port}/v1"
                _print(run_once(work, evaluations, chunks, url, args.pool, judge.pid))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        judge.terminate()
        judge.wait(10)


if __name__ == "__main__":
    main()
