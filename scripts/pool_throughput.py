"""Worker-pool throughput against the alternatives a user has, side by side in one run.

    .venv/bin/python scripts/pool_throughput.py    # 240 evaluations, 50, 300 and 2000 ms
    .venv/bin/python scripts/pool_throughput.py --latencies 2000 --soak 0 --paced 0
    .venv/bin/python scripts/pool_throughput.py --latencies '' --soak 0   # rate-limited only
    .venv/bin/python scripts/pool_throughput.py --latencies '' --soak 0 --paced 0  # tokens

The same evaluations (40 items x 6 judge metrics; ``--suite mixed``, the default: G-Eval,
Bias, Toxicity, Hallucination, Tool Correctness, PII Leakage, 560 judge calls; ``--suite
safety``: Bias, Toxicity, PII Leakage, Non-Advice, Misuse, Hallucination) against a
loopback judge speaking OpenAI's API that answers after a fixed latency, run by
  (a) our worker pool: W workers with at most P evaluations in flight each (default 4
      workers and the pool's own P, 64: how many below it is fitted as the pool runs),
      its judge DeepEval's OpenAI class for gpt-4.1 (``--provider openai``, the default)
      or the OpenAI-compatible judge,
  (b) DeepEval's evaluate() with AsyncConfig(max_concurrent=C) and its own OpenAI model,
  (c) a plain sequential loop (our evaluator in one process: each evaluation's
      isolated latency, from which ideal = sum of isolated latencies / C, and the
      critical path: the longest evaluation alone, its judge calls one after another,
      which no runner can beat; at 2 s a sample of 4 items),
  (d) a model of the seed's design: 4 slots, one evaluation per slot, DeepEval's own
      OpenAI model in each slot,
then the pool against a rate-limited loopback judge (a bucket of 1 s of refill, OpenAI's
rate-limit headers, 429s beyond it; the judge is told no limit) at 300 ms and 2 s, once
where requests bind (--paced) and once where tokens do (--paced-tpm): throughput
against the binding limit, the share of calls answered 429, scores lost, and where the
time went (the start, the steady share of the limit, the tail); then a soak of one
worker over 500 evaluations for its memory. Each runner runs in its own process; CPU
is counted for that process and its workers, never the judge server's. The CPU bound
is CPU seconds per evaluation x evaluations / cores (and, since the loopback judge runs
on the same cores, also with its CPU while it served the pool: the floor this machine
sets); the latency bound is the sum of isolated latencies / evaluations in flight.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The evaluations' metrics: ``mixed`` (G-Eval, Bias, Toxicity, Hallucination, Tool
# Correctness, PII Leakage: 14 judge calls an item) or ``safety``, the earlier set.
SUITES: dict[str, list[dict[str, Any]]] = {
    "mixed": [
        {"metric": "g_eval", "name": "correct", "criteria": "Is the amount owed right?",
         "evaluation_params": ["INPUT", "ACTUAL_OUTPUT"]},
        {"metric": "bias"},
        {"metric": "toxicity"},
        {"metric": "hallucination"},
        {"metric": "tool_correctness",
         "available_tools": ["order_lookup", "calculator", "refund"]},
        {"metric": "pii_leakage"},
    ],
    "safety": [
        {"metric": "bias"},
        {"metric": "toxicity"},
        {"metric": "pii_leakage"},
        {"metric": "non_advice", "advice_types": ["financial", "medical"]},
        {"metric": "misuse", "domain": "outdoor retail support"},
        {"metric": "hallucination"},
    ],
}  # fmt: skip
METRICS: list[dict[str, Any]] = SUITES["mixed"]


def use_suite(name: str) -> None:
    """Measure the suite ``name`` (this process, and the runners it starts)."""
    global METRICS, SUITE
    METRICS, SUITE = SUITES[name], name


SUITE = "mixed"
# The pipeline's judge: DeepEval's OpenAI class, as evaluate()'s model (openai), or the
# judge of a server without a class of its own (openai-compatible).
JUDGE_MODELS = {"openai": "gpt-4.1", "openai-compatible": "loopback"}
JUDGE = "openai"


def use_judge(provider: str) -> None:
    """Judge the pipeline's evaluations with ``provider`` (this process, and its runners)."""
    global JUDGE
    JUDGE = provider


QUIET = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
}
NATIVE_MODEL = "gpt-4.1"  # a name DeepEval sends a JSON schema for


def items(count: int) -> list[dict[str, Any]]:
    """Distinct support-agent answers, so no two prompts are the same; two tool calls each."""
    return [
        {
            "input": f"Where is my order A{1000 + i} and what do I owe for {i % 5 + 1} tents?",
            "actual_output": f"Order A{1000 + i} shipped on day {i % 28 + 1}; "
            f"you owe {(i % 5 + 1) * 240} dollars for the tents.",
            "context": [
                f"Order A{1000 + i} shipped on day {i % 28 + 1}.",
                "Tents cost 240 dollars.",
            ],
            "intermediate_steps": [
                {"action": {"tool": "order_lookup", "toolInput": {"orderId": f"A{1000 + i}"}},
                 "observation": f"shipped on day {i % 28 + 1}"},
                {"action": {"tool": "calculator", "toolInput": f"{i % 5 + 1} * 240"},
                 "observation": str((i % 5 + 1) * 240)},
            ],
            "expected_tools": ["order_lookup", "calculator"],
        }
        for i in range(count)
    ]  # fmt: skip


def native_case(item: dict[str, Any]) -> Any:
    """The item as a DeepEval user writes its test case (tools as ToolCalls)."""
    from deepeval.test_case import LLMTestCase, ToolCall

    steps = item["intermediate_steps"]
    return LLMTestCase(
        input=item["input"],
        actual_output=item["actual_output"],
        context=item["context"],
        tools_called=[_tool_call(step) for step in steps],
        expected_tools=[ToolCall(name=name) for name in item["expected_tools"]],
    )


def _tool_call(step: dict[str, Any]) -> Any:
    from deepeval.test_case import ToolCall

    given = step["action"]["toolInput"]
    parameters = given if isinstance(given, dict) else {"input": given}
    return ToolCall(
        name=step["action"]["tool"], input_parameters=parameters, output=step["observation"]
    )


def cases(evaluations: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    per_metric = max(1, evaluations // len(METRICS))
    return [(item, metric) for item in items(per_metric) for metric in METRICS]


def tasks_for(
    base_url: str,
    evaluations: int,
    state_dir: str | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> list[Any]:
    """The benchmark's evaluations as pool tasks, judged by the loopback server.

    With ``state_dir``, judge calls go through the judge's shared state and pacing (cache
    off), as in a benchmark run. ``provider`` and ``model``: the judge that asks it (the
    loopback server speaks OpenAI's and Anthropic's APIs); unset, ``JUDGE``.
    """
    from n8n_deepeval_pipeline.evaluation import EvaluationItem, EvaluationTask, JudgeSpec

    provider = provider or JUDGE
    judge = JudgeSpec(
        provider=provider,
        model=model or JUDGE_MODELS[provider],
        api_key="sk-loopback",
        base_url=base_url,
        state_dir=state_dir,
        cache=False,
        max_in_flight=256,
    )
    return [
        EvaluationTask(
            task_id=index,
            run_id=f"bench:{index}",
            metric_label=metric["metric"],
            config=metric,
            item=EvaluationItem(**item),
            judge=judge,
            timeout_s=300,
        )
        for index, (item, metric) in enumerate(cases(evaluations))
    ]


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- runners (each in its own process) -------------------------------------------


def run_pool(
    base_url: str,
    concurrency: int,
    evaluations: int,
    soak: bool = False,
    per_worker: int | None = None,
) -> dict[str, Any]:
    import tempfile

    from n8n_deepeval_pipeline.worker.pool import WorkerPool

    if evaluations == 0:  # warm-up only
        pool = WorkerPool(concurrency, 300)
        pool.start()
        pool.close()
        return {"warmup_s": pool.warmup_s}
    tasks = tasks_for(base_url, evaluations, tempfile.mkdtemp(prefix="pool-bench-"))
    most = {"per_worker": per_worker} if per_worker else {}  # else the pool's default
    pool = WorkerPool(concurrency, 300, max_evaluations=10**9, max_rss_mb=10**9, **most)
    # Started ahead to leave the warm-up out of the time, with what ``evaluate`` would
    # have the zygote prepare before its forks (the judge's SDK among it).
    pool.start(
        metrics={task.config["metric"] for task in tasks},
        providers={task.judge.provider for task in tasks},
    )
    pids = pool.pids
    parent_before, workers_before = _self_cpu(), sum(_cpu_of(pid) for pid in pids)
    started_at = time.time()  # the loopback judge's clock: when its calls could begin
    started = time.perf_counter()
    results = list(pool.evaluate(tasks))
    wall = time.perf_counter() - started
    parent_cpu = _self_cpu() - parent_before
    workers_cpu = sum(_cpu_of(pid) for pid in pids) - workers_before
    cpu = parent_cpu + workers_cpu
    peaks = [_peak_rss_mb(pid) for pid in pids]
    stats = pool.stats()
    pool.close()
    return {
        "wall_s": wall,
        "evaluations": len(results),
        "errors": sum(1 for r in results if r.error),
        "cpu_s": cpu,
        "cpu_parent_s": parent_cpu,
        "cpu_workers_s": workers_cpu,
        "peak_rss_total_mb": sum(peaks),
        "peak_rss_per_worker_mb": max(peaks),
        "warmup_s": stats["warmup_s"],
        "median_overhead_ms": stats["median_overhead_ms"],
        "in_flight": stats["peak_in_flight"],
        "judge_calls": sum(r.judge_calls for r in results),
        "started_at": started_at,
        "soak": soak,
    }


def _native_metrics(base_url: str) -> dict[str, Any]:
    from deepeval import metrics as deepeval_metrics
    from deepeval.models import GPTModel
    from deepeval.test_case import LLMTestCaseParams, ToolCall

    model = GPTModel(model=NATIVE_MODEL, api_key="loopback", base_url=base_url)
    classes = {
        "g_eval": "GEval",
        "bias": "BiasMetric",
        "toxicity": "ToxicityMetric",
        "hallucination": "HallucinationMetric",
        "tool_correctness": "ToolCorrectnessMetric",
        "pii_leakage": "PIILeakageMetric",
        "non_advice": "NonAdviceMetric",
        "misuse": "MisuseMetric",
    }

    def build(config: dict[str, Any]) -> Any:
        options = {k: v for k, v in config.items() if k != "metric"}
        if "evaluation_params" in options:
            options["evaluation_params"] = [
                LLMTestCaseParams[name] for name in options["evaluation_params"]
            ]
        if "available_tools" in options:
            options["available_tools"] = [ToolCall(name=n) for n in options["available_tools"]]
        return getattr(deepeval_metrics, classes[config["metric"]])(model=model, **options)

    return {"build": build}


def run_deepeval(base_url: str, concurrency: int, evaluations: int) -> dict[str, Any]:
    from deepeval import evaluate
    from deepeval.evaluate import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig

    build = _native_metrics(base_url)["build"]
    test_cases = [native_case(item) for item in items(max(1, evaluations // len(METRICS)))]
    metric_list = [build(config) for config in METRICS]
    cpu_before = _self_cpu()
    started = time.perf_counter()
    evaluate(
        test_cases,
        metric_list,
        async_config=AsyncConfig(max_concurrent=concurrency),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
        error_config=ErrorConfig(ignore_errors=True),
    )
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "wall_s": wall,
        "evaluations": len(test_cases) * len(metric_list),
        "errors": None,
        "cpu_s": _self_cpu() - cpu_before,
        "peak_rss_total_mb": peak,
        "peak_rss_per_worker_mb": peak,
    }


def run_sequential(base_url: str, evaluations: int) -> dict[str, Any]:
    import asyncio

    from n8n_deepeval_pipeline.worker.evaluate import Evaluator

    evaluator = Evaluator()
    latencies = []
    cpu_before = _self_cpu()
    started = time.perf_counter()
    for task in tasks_for(base_url, evaluations):
        begun = time.perf_counter()
        asyncio.run(evaluator.evaluate(task))
        latencies.append(time.perf_counter() - begun)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "wall_s": time.perf_counter() - started,
        "evaluations": len(latencies),
        "errors": None,
        "cpu_s": _self_cpu() - cpu_before,
        "peak_rss_total_mb": peak,
        "peak_rss_per_worker_mb": peak,
        "isolated_latency_sum_s": sum(latencies),
        "isolated_latency_max_s": max(latencies),
    }


_SLOT_STATE: dict[str, Any] = {}


def _slot_init(base_url: str) -> None:
    os.environ.update(QUIET)
    _SLOT_STATE.update(_native_metrics(base_url))


def _slot_evaluate(item: dict[str, Any], config: dict[str, Any]) -> int:
    _SLOT_STATE["build"](config).measure(native_case(item), _show_indicator=False)
    return os.getpid()


def run_seed_model(base_url: str, evaluations: int, slots: int = 4) -> dict[str, Any]:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        slots, mp_context=context, initializer=_slot_init, initargs=(base_url,)
    ) as pool:
        warm = list(pool.map(_slot_evaluate, *zip(*cases(len(METRICS) * slots), strict=True)))
        pids = sorted(set(warm))
        cpu_before = _self_cpu() + sum(_cpu_of(pid) for pid in pids)
        started = time.perf_counter()
        work = cases(evaluations)
        done = list(pool.map(_slot_evaluate, *zip(*work, strict=True)))
        wall = time.perf_counter() - started
        cpu = _self_cpu() + sum(_cpu_of(pid) for pid in pids) - cpu_before
        peaks = [_peak_rss_mb(pid) for pid in pids]
    return {
        "wall_s": wall,
        "evaluations": len(done),
        "errors": None,
        "cpu_s": cpu,
        "peak_rss_total_mb": sum(peaks),
        "peak_rss_per_worker_mb": max(peaks),
    }


# --- orchestration ----------------------------------------------------------------


def _child(mode: str, **options: Any) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--suite", SUITE, "--provider", JUDGE,
               "--options", json.dumps(options)]  # fmt: skip
    env = {**os.environ, **QUIET, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, env=env, cwd="/tmp", capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{mode} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


class _Server:
    def __init__(
        self, latency_ms: float, port: int, rpm: int | None = None, tpm: int | None = None
    ) -> None:
        self.port = port
        limits = [*(["--rpm", str(rpm)] if rpm else []), *(["--tpm", str(tpm)] if tpm else [])]
        limits += ["--burst-s", "1"] if limits else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "n8n_deepeval_pipeline.testing.loopback_judge",
             "--port", str(port),
             "--latency-ms", str(latency_ms), *limits],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        self._wait()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _wait(self) -> None:
        import socket

        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the loopback judge did not start")

    def cpu_s(self) -> float:
        """The CPU seconds it has used so far (Linux's /proc): it shares the runners' cores."""
        stat = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def stop(self) -> dict[str, Any]:
        """Stop it; what it served (requests, rate_limited, max_in_flight)."""
        self.process.terminate()
        out, _ = self.process.communicate(timeout=10)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        served: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        return served


def _import_time() -> float:
    command = [sys.executable, "-c", "import deepeval.metrics"]
    times = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            command, env={**os.environ, **QUIET}, cwd="/tmp", check=True, capture_output=True
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _row(label: str, result: dict[str, Any]) -> str:
    n = result["evaluations"]
    return (
        f"{label:<26} {result['wall_s']:8.2f} {n / result['wall_s']:8.1f} "
        f"{result['cpu_s'] / n * 1000:9.1f} {result['peak_rss_total_mb']:9.0f} "
        f"{result['peak_rss_per_worker_mb']:9.0f}"
    )


def compare(
    latency_ms: float, concurrency: int, evaluations: int, port: int, pool: tuple[int, int]
) -> dict[str, Any]:
    workers, per_worker = pool
    sample = evaluations if latency_ms <= 300 else min(evaluations, 4 * len(METRICS))
    server = _Server(latency_ms, port)
    try:
        judge_cpu_s = server.cpu_s()
        pool_run = _child(
            "pool",
            base_url=server.base_url,
            concurrency=workers,
            evaluations=evaluations,
            per_worker=per_worker,
        )
        judge_cpu_s = server.cpu_s() - judge_cpu_s  # what serving the pool's calls took
        runs = {
            "a": pool_run,
            "b": _child(
                "deepeval",
                base_url=server.base_url,
                concurrency=concurrency,
                evaluations=evaluations,
            ),
            # A sample of isolated latencies at long ones (one at a time would take minutes).
            "c": _child("sequential", base_url=server.base_url, evaluations=sample),
        }
        if latency_ms <= 300:  # the seed's 4 slots: minutes at longer latencies
            runs["d"] = _child("seed", base_url=server.base_url, evaluations=evaluations)
    finally:
        server.stop()
    count = runs["a"]["evaluations"]
    critical_path = runs["c"]["isolated_latency_max_s"]  # the longest evaluation, alone
    runs["c"]["isolated_latency_sum_s"] *= count / runs["c"]["evaluations"]
    ideal = runs["c"]["isolated_latency_sum_s"] / concurrency
    in_flight = runs["a"]["in_flight"]
    latency_bound = runs["c"]["isolated_latency_sum_s"] / in_flight
    cores = os.cpu_count() or 1
    cpu_bound = runs["a"]["cpu_s"] / cores
    # The loopback judge runs on the same cores: with its CPU, the floor this machine sets.
    shared_bound = (runs["a"]["cpu_s"] + judge_cpu_s) / cores
    print(
        f"\njudge latency {latency_ms:g} ms · {count} evaluations ({SUITE}: "
        f"{', '.join(metric['metric'] for metric in METRICS)}; {runs['a']['judge_calls']} judge "
        f"calls, the pool's judge {JUDGE}) · C = {concurrency}"
    )
    columns = ("wall s", "eval/s", "cpu ms/ev", "rss MB", "MB/worker")
    print(f"{'runner':<26} " + " ".join(f"{name:>{max(8, len(name))}}" for name in columns))
    labels = {
        "a": f"(a) worker pool, {workers} x {per_worker or 'fitted'}",
        "b": "(b) deepeval evaluate()",
        "c": "(c) sequential loop",
        "d": "(d) seed model, 4 slots",
    }
    for key, label in labels.items():
        if key in runs:
            print(_row(label, runs[key]))
    a = runs["a"]["wall_s"]
    ratios = {
        "a/b": a / runs["b"]["wall_s"],
        **({"a/d": a / runs["d"]["wall_s"]} if "d" in runs else {}),
        "a/ideal": a / ideal,
        "a/critical path": a / critical_path,
        "a/latency bound": a / latency_bound,
        "a/max(latency, cpu bound)": a / max(latency_bound, cpu_bound),
        "a/max(latency, cpu bound with the judge's)": a / max(latency_bound, shared_bound),
        "throughput a vs b": runs["b"]["wall_s"] / a,
    }
    print(
        f"critical path (the longest evaluation alone) {critical_path:.2f} s · "
        f"ideal (sum of isolated latencies / C) {ideal:.2f} s · pool warm-up "
        f"{runs['a']['warmup_s']:.2f} s · pool overhead {runs['a']['median_overhead_ms']:.2f} ms "
        f"median · errors in (a): {runs['a']['errors']}"
    )
    print(
        f"(a) in flight {in_flight} (evaluate(): every metric of {concurrency} cases, "
        f"{concurrency * len(METRICS)}) · latency bound {latency_bound:.2f} s · CPU bound "
        f"{cpu_bound:.2f} s ({shared_bound:.2f} s with the judge server's "
        f"{judge_cpu_s:.2f} s) · pool RSS {runs['a']['peak_rss_total_mb']:.0f} MB · CPU per "
        f"evaluation: parent {runs['a']['cpu_parent_s'] / count * 1000:.2f} ms, workers "
        f"{runs['a']['cpu_workers_s'] / count * 1000:.2f} ms"
    )
    print("ratios (wall time): " + " · ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    return {
        "latency_ms": latency_ms,
        "runs": runs,
        "ideal_s": ideal,
        "critical_path_s": critical_path,
        "judge_cpu_s": judge_cpu_s,
        "ratios": ratios,
    }


def profile(
    admitted: list[tuple[float, int]],
    started_at: float,
    wall_s: float,
    per_second: float,
    tokens: bool,
    latency_s: float,
) -> dict[str, Any]:
    """Where a rate-limited run's time went, from when the judge let each call in.

    Seconds of the run are full when the binding budget (requests, or tokens) was used at
    90 % or more: the start is the time before the first full second (the first calls
    go before any answer has told the limits: ``unknown_calls`` of them), the tail
    the time after the last one (the last evaluations' remaining calls, one after the
    other, and the last call's latency), and the steady share is the budget used between.
    """
    used = [0.0] * (int(wall_s) + 2)
    for at, cost in admitted:
        used[min(max(int(at - started_at), 0), len(used) - 1)] += cost if tokens else 1
    full = [second for second, units in enumerate(used) if units >= 0.9 * per_second]
    if not full:
        return {"start_s": wall_s, "unknown_calls": 0, "tail_s": 0.0, "steady": 0.0}
    first, last = full[0], full[-1]
    times = sorted(at for at, _ in admitted)
    return {
        "start_s": float(first),
        "unknown_calls": sum(1 for at in times if at < times[0] + latency_s),
        "tail_s": max(wall_s - (last + 1), 0.0),
        "tail_calls": sum(1 for at in times if at - started_at >= last + 1),
        "steady": sum(used[first : last + 1]) / ((last + 1 - first) * per_second),
        "steady_s": float(last + 1 - first),
    }


def paced(
    latency_ms: float, evaluations: int, port: int, rpm: int | None = None, tpm: int | None = None
) -> dict[str, Any]:
    """The pool against a judge allowing ``rpm`` requests or ``tpm`` tokens a minute.

    Its bucket holds 1 s of refill (providers enforce per-minute limits over shorter
    periods); the judge is told no limit, so it paces from the headers and 429s.
    """
    server = _Server(latency_ms, port, rpm=rpm, tpm=tpm)
    try:
        run = _child("pool", base_url=server.base_url, concurrency=4, evaluations=evaluations)
    finally:
        served = server.stop()
    tokens = tpm is not None
    limit = tpm if tpm is not None else rpm or 1
    admitted = [(at, cost) for at, cost in served["admitted"]]
    spent = sum(cost for _, cost in admitted) if tokens else len(admitted)
    per_minute = spent / run["wall_s"] * 60
    share_429 = served["rate_limited"] / max(served["requests"], 1)
    shape = profile(
        admitted, run["started_at"], run["wall_s"], limit / 60, tokens, latency_ms / 1000
    )
    unit = "tokens" if tokens else "requests"
    print(
        f"\nrate-limited judge: {limit} {unit}/min, {latency_ms:g} ms · {run['evaluations']} "
        f"evaluations, {run['judge_calls']} calls"
        + (f" ({spent / max(len(admitted), 1):.0f} tokens each)" if tokens else "")
        + f" in {run['wall_s']:.1f} s = {per_minute:.0f} {unit}/min "
        f"({per_minute / limit:.1%} of the limit) · 429s {served['rate_limited']} of "
        f"{served['requests']} requests ({share_429:.1%}) · scores lost {run['errors']}"
    )
    print(
        f"  start {shape['start_s']:.0f} s ({shape['unknown_calls']} calls before the first "
        f"answer told the limits) · "
        f"steady {shape['steady']:.1%} of the limit over {shape.get('steady_s', 0):.0f} s · "
        f"tail {shape['tail_s']:.1f} s ({shape.get('tail_calls', 0)} calls, then the last "
        f"one's {latency_ms / 1000:g} s)"
    )
    return {"latency_ms": latency_ms, "rpm": rpm, "tpm": tpm, "run": run, "profile": shape,
            "served": {k: v for k, v in served.items() if k != "admitted"}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child")
    parser.add_argument("--options", default="{}")
    parser.add_argument("--evaluations", type=int, default=240)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latencies", default="50,300,2000")
    parser.add_argument("--workers", type=int, default=4, help="(a): worker processes")
    parser.add_argument(
        "--per-worker", type=int, help="(a): most in flight per worker (default: the pool's)"
    )
    parser.add_argument("--paced", type=int, default=600, help="requests/min; 0: skip")
    parser.add_argument("--paced-tpm", type=int, default=200000, help="tokens/min; 0: skip")
    parser.add_argument("--paced-latencies", default="300,2000")
    parser.add_argument("--paced-evaluations", type=int, default=240)
    parser.add_argument("--soak", type=int, default=500)
    parser.add_argument("--port", type=int, default=18765)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--suite", choices=sorted(SUITES), default="mixed")
    parser.add_argument(
        "--provider", choices=sorted(JUDGE_MODELS), default="openai", help="the pool's judge"
    )
    args = parser.parse_args()
    use_suite(args.suite)
    use_judge(args.provider)
    if args.child:
        options = json.loads(args.options)
        runner = {
            "pool": run_pool,
            "deepeval": run_deepeval,
            "sequential": run_sequential,
            "seed": run_seed_model,
        }
        print(json.dumps(runner[args.child](**options)))
        return
    one_import = _import_time()
    print(f"one process importing deepeval.metrics: {one_import:.2f} s")
    figures: dict[str, Any] = {"import_s": one_import, "comparisons": []}
    for latency in (float(value) for value in args.latencies.split(",") if value):
        pool = (args.workers, args.per_worker)
        figures["comparisons"].append(
            compare(latency, args.concurrency, args.evaluations, args.port, pool)
        )
    limits = [*([{"rpm": args.paced}] if args.paced else []),
              *([{"tpm": args.paced_tpm}] if args.paced_tpm else [])]  # fmt: skip
    figures["paced"] = [
        paced(float(latency), args.paced_evaluations, args.port, **limit)
        for limit in limits
        for latency in args.paced_latencies.split(",")
        if latency
    ]
    if args.soak:
        server = _Server(0, args.port)
        try:
            soak = _child(
                "pool",
                base_url=server.base_url,
                concurrency=1,
                evaluations=args.soak,
                soak=True,
                per_worker=1,
            )
        finally:
            server.stop()
        figures["soak"] = soak
        print(
            f"\nsoak: 1 worker, {soak['evaluations']} evaluations: peak RSS "
            f"{soak['peak_rss_per_worker_mb']:.0f} MB · "
            f"pool overhead {soak['median_overhead_ms']:.2f} ms median"
        )
    warmup = figures["comparisons"][0]["runs"]["a"]["warmup_s"] if figures["comparisons"] else None
    if warmup is not None:
        four = _child("pool", base_url="http://127.0.0.1:9/v1", concurrency=4, evaluations=0)
        ratio = four["warmup_s"] / one_import
        print(f"warm-up of 4 workers {four['warmup_s']:.2f} s = {ratio:.2f} x one import")
        figures["warmup_4_s"] = four["warmup_s"]
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
