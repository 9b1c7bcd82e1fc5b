"""The worker pool against a rate-limited judge, for each thing a provider may say of its limit.

    .venv/bin/python scripts/judge_rate_limits.py                    # 4 modes x 300 ms, 2 s
    .venv/bin/python scripts/judge_rate_limits.py --modes nothing --latencies 300

240 evaluations (G-Eval, Bias, Toxicity, Hallucination, Tool Correctness and PII Leakage
over 40 cases) through the worker pool with its default settings, against a loopback
judge that allows 600 requests a minute (a bucket refilled continuously, holding 1 s of
refill; beyond it a 429 at once), once per row:

- ``announced``: OpenAI's ``x-ratelimit-*`` headers on every answer, ``retry-after`` on a 429;
- ``retry-after``: only ``retry-after`` on a 429;
- ``nothing``: no header at all;
- ``configured``: nothing, and the judge configured with ``requestsPerMinute: 600``.

Each row prints the 429 answers (and their share of the requests), the steady throughput
against the limit (the seconds between the first and the last one that used 90 % of the
limit or more: ``pool_throughput.profile``), the evaluations that failed, the wall time
and the request rate the judge's pacing fitted (when it fitted one). The pool runs in a
process of its own for each row, with a fresh judge state.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pool_throughput import QUIET, ROOT, profile

MODES = ("announced", "retry-after", "nothing", "configured")
ANNOUNCE = {"announced": "headers", "retry-after": "retry-after", "nothing": "nothing"}
METRICS: list[dict[str, Any]] = [
    {
        "metric": "g_eval",
        "name": "correct total",
        "criteria": "Does the answer give the right total for the order?",
        "evaluation_params": ["INPUT", "ACTUAL_OUTPUT"],
    },
    {"metric": "bias"},
    {"metric": "toxicity"},
    {"metric": "hallucination"},
    {"metric": "tool_correctness"},
    {"metric": "pii_leakage"},
]


def items(count: int) -> list[dict[str, Any]]:
    """Distinct support-agent answers with the tools the agent called, one per case."""
    return [
        {
            "input": f"Where is my order A{1000 + i} and what do I owe for {i % 5 + 1} tents?",
            "actual_output": f"Order A{1000 + i} shipped on day {i % 28 + 1}; "
            f"you owe {(i % 5 + 1) * 240} dollars for the tents.",
            "context": [
                f"Order A{1000 + i} shipped on day {i % 28 + 1}.",
                "Tents cost 240 dollars.",
            ],
            "expected_tools": ["order_lookup", "calculator"],
            "intermediate_steps": [
                {
                    "action": {"tool": "order_lookup", "toolInput": {"id": f"A{1000 + i}"}},
                    "observation": f'{{"shipped_day": {i % 28 + 1}}}',
                },
                {
                    "action": {"tool": "calculator", "toolInput": f"{i % 5 + 1} * 240"},
                    "observation": str((i % 5 + 1) * 240),
                },
            ],
        }
        for i in range(count)
    ]


def run_pool(
    base_url: str, cases: int, requests_per_minute: int | None, timeout_s: float
) -> dict[str, Any]:
    """The evaluations through a pool with its default settings (run in a child process)."""
    from n8n_deepeval_pipeline.evaluation import EvaluationItem, EvaluationTask, JudgeSpec
    from n8n_deepeval_pipeline.judging.shared_state import SharedState
    from n8n_deepeval_pipeline.worker.pool import WorkerPool

    state_dir = Path(tempfile.mkdtemp(prefix="rate-limits-"))
    judge = JudgeSpec(
        provider="openai-compatible",
        model="loopback",
        base_url=base_url,
        state_dir=str(state_dir),
        cache=False,  # every evaluation asks: the load is the point
        requests_per_minute=requests_per_minute,
    )
    tasks = [
        EvaluationTask(
            task_id=index,
            run_id=f"bench:{index}",
            metric_label=metric["metric"],
            config=metric,
            item=EvaluationItem(**item),
            judge=judge,
            timeout_s=timeout_s,
        )
        for index, (item, metric) in enumerate(
            (item, metric) for item in items(cases) for metric in METRICS
        )
    ]
    pool = WorkerPool(4, timeout_s)
    pool.start(metrics={task.config["metric"] for task in tasks})
    started_at = time.time()  # the loopback judge's clock: when its calls could begin
    started = time.perf_counter()
    results = list(pool.evaluate(tasks))
    wall = time.perf_counter() - started
    pool.close()
    fitted = SharedState.in_folder(state_dir).fitted_rate(judge.identity)
    return {
        "wall_s": wall,
        "started_at": started_at,
        "evaluations": len(results),
        "failed": sum(1 for result in results if result.error),
        "error_kinds": dict(Counter(str(r.error_kind) for r in results if r.error_kind)),
        "first_error": next((r.error for r in results if r.error), None),
        "judge_calls": sum(result.judge_calls for result in results),
        "retries": sum(result.judge_retries for result in results),
        "fitted_per_minute": fitted.per_s * 60 if fitted.per_s else None,
    }


def _serve(latency_ms: float, port: int, rpm: int, announce: str) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "n8n_deepeval_pipeline.testing.loopback_judge",
        "--port", str(port), "--latency-ms", str(latency_ms), "--rpm", str(rpm),
        "--burst-s", "1", "--announce", announce,
    ]  # fmt: skip
    server = subprocess.Popen(
        command,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    import socket

    for _ in range(200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.05)
    server.kill()
    raise RuntimeError("the loopback judge did not start")


def _served(server: subprocess.Popen[str]) -> dict[str, Any]:
    server.terminate()
    out, _ = server.communicate(timeout=30)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    served: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    return served


def one_row(
    mode: str, latency_ms: float, rpm: int, cases: int, port: int, timeout_s: float
) -> dict[str, Any]:
    """One mode at one latency: the pool in a child process against a fresh loopback judge."""
    server = _serve(latency_ms, port, rpm, ANNOUNCE.get(mode, "nothing"))
    options = {
        "base_url": f"http://127.0.0.1:{port}/v1",
        "cases": cases,
        "requests_per_minute": rpm if mode == "configured" else None,
        "timeout_s": timeout_s,
    }
    try:
        command = [sys.executable, __file__, "--child", json.dumps(options)]
        env = {**os.environ, **QUIET, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            command, env=env, cwd="/tmp", capture_output=True, text=True, check=False
        )
    finally:
        served = _served(server)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{mode} at {latency_ms:g} ms failed:\n{done.stderr[-3000:]}")
    run: dict[str, Any] = json.loads(lines[-1])
    shape = profile(
        [(at, cost) for at, cost in served["admitted"]],
        run["started_at"],
        run["wall_s"],
        rpm / 60,
        False,
        latency_ms / 1000,
    )
    return {
        "mode": mode,
        "latency_ms": latency_ms,
        "requests": served["requests"],
        "rate_limited": served["rate_limited"],
        "share_429": served["rate_limited"] / max(served["requests"], 1),
        "steady": shape["steady"],
        "steady_s": shape.get("steady_s", 0.0),
        "start_s": shape["start_s"],
        "overall": len(served["admitted"]) / run["wall_s"] * 60 / rpm,
        **run,
    }


_SAYS = {
    "announced": "OpenAI's `x-ratelimit-*` headers (+ `retry-after` on 429)",
    "retry-after": "`retry-after` on 429 only",
    "nothing": "nothing",
    "configured": "nothing, `requestsPerMinute: {rpm}` configured",
}


def _print_table(rows: list[dict[str, Any]], rpm: int) -> None:
    print(
        "\n| what the provider sends | latency | 429 answers (share of requests) "
        "| steady throughput / limit | evaluations failed |"
    )
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        latency = (
            f"{row['latency_ms']:g} ms"
            if row["latency_ms"] < 1000
            else (f"{row['latency_ms'] / 1000:g} s")
        )
        print(
            f"| {_SAYS[row['mode']].format(rpm=rpm)} | {latency} | {row['rate_limited']:,} "
            f"({row['share_429']:.1%}) | {row['steady']:.1%} | {row['failed']} |"
        )
    print()
    for row in rows:
        fitted = row["fitted_per_minute"]
        print(
            f"{row['mode']:<12} {row['latency_ms']:>6g} ms: {row['evaluations']} evaluations, "
            f"{row['judge_calls']} calls answered, {row['requests']} requests, "
            f"{row['retries']} retries, {row['wall_s']:.1f} s "
            f"({row['overall']:.1%} of the limit overall; start {row['start_s']:.0f} s, "
            f"steady over {row['steady_s']:.0f} s)"
            + (f" · fitted {fitted:.0f} requests/min" if fitted else "")
            + (f" · errors {row['error_kinds']}: {row['first_error']}" if row["failed"] else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--latencies", default="300,2000", help="judge latencies, ms")
    parser.add_argument("--rpm", type=int, default=600, help="requests a minute it allows")
    parser.add_argument("--cases", type=int, default=40, help="cases (x 6 metrics)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per evaluation")
    parser.add_argument("--port", type=int, default=18775)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_pool(**json.loads(args.child))), flush=True)
        return
    modes = [mode for mode in args.modes.split(",") if mode]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}; the modes: {', '.join(MODES)}")
    rows = []
    for latency in (float(value) for value in args.latencies.split(",") if value):
        for mode in modes:
            row = one_row(mode, latency, args.rpm, args.cases, args.port, args.timeout_s)
            rows.append(row)
            print(
                f"{mode} at {latency:g} ms: {row['rate_limited']} 429s of {row['requests']} "
                f"({row['share_429']:.1%}), steady {row['steady']:.1%}, failed {row['failed']}",
                flush=True,
            )
    _print_table(rows, args.rpm)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    failed = sum(row["failed"] for row in rows)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
