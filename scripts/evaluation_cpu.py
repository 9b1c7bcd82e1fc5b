"""CPU each evaluation costs a worker, in process, against a loopback judge at 0 ms.

    .venv/bin/python scripts/evaluation_cpu.py                 # with and without judge state
    .venv/bin/python scripts/evaluation_cpu.py --profile 25    # and where the CPU goes
    .venv/bin/python scripts/evaluation_cpu.py --pool-latency 50 --rounds 3  # and in the pool
    .venv/bin/python scripts/evaluation_cpu.py --provider anthropic  # another provider's judge

The pool's evaluations (``scripts/pool_throughput.py``: 40 items x 6 judge metrics) are
scored by one ``Evaluator`` as a worker scores them: warmed and frozen as the zygote
leaves it, all gathered on one event loop, after a warm-up. The figure is the process's
CPU time per evaluation (every thread), the median and the fastest of ``--rounds``
rounds (the fastest is the least disturbed on a shared machine), and the judge loop
thread's part of it. "state" runs the judge through its shared state and pacing in a
fresh folder (cache off), as a benchmark run does; "no state" without. The judge server
runs in a process of its own, not counted. With ``--profile``, each thread's functions
by their own CPU time (not wall time: the two threads wait on each other's GIL).

With ``--pool-latency MS``, the same evaluations also go through the pool as the pool
benchmark runs them (4 workers, the pool's own count in flight, a judge at MS ms, a
fresh pool each round as each run has): the CPU per evaluation of its workers and of the
process that feeds them, apart, beside the wall time.

``--provider`` picks the judge that asks the loopback server (in process only): the
OpenAI-compatible one by default, or ``openai`` (gpt-4.1) or ``anthropic``
(claude-haiku-4-5), each as its own SDK and DeepEval's class for it ask. The last line
divides the figures by the judge calls the server answered per evaluation: the CPU of
an evaluation per judge call it made (the metric's own work included).

``--provider-calls N`` prints only the CPU of one judge call per provider path, the
provider alone (no metric, no judge state): every provider with an SDK, N calls each.

    .venv/bin/python scripts/evaluation_cpu.py --provider-calls 500 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pool_throughput  # a script beside this one
from pydantic import BaseModel

os.environ.update(pool_throughput.QUIET)


def _on_judge_loop(call: Callable[[], Any]) -> Any:
    """``call()`` on the worker's judge loop thread, its result here."""
    from n8n_deepeval_pipeline.judging.judge import _process_loop

    async def called() -> Any:
        return call()

    return asyncio.run_coroutine_threadsafe(called(), _process_loop(os.getpid()).loop).result()


def _round(evaluator: Any, tasks: list[Any]) -> tuple[float, float]:
    """CPU ms per evaluation: the whole process, and the judge loop thread's part."""

    async def gathered() -> None:
        await asyncio.gather(*(evaluator.evaluate(task) for task in tasks))

    before = time.process_time(), _on_judge_loop(time.thread_time)
    asyncio.run(gathered())
    after = time.process_time(), _on_judge_loop(time.thread_time)
    process, judge = ((a - b) / len(tasks) * 1000 for a, b in zip(after, before, strict=True))
    return process, judge


def _profiled(evaluator: Any, tasks: list[Any], top: int) -> None:
    evaluations, judge = cProfile.Profile(time.thread_time), cProfile.Profile(time.thread_time)
    _on_judge_loop(judge.enable)
    evaluations.enable()
    _round(evaluator, tasks)
    evaluations.disable()
    _on_judge_loop(judge.disable)
    for name, profile in (("evaluations' loop", evaluations), ("judge loop", judge)):
        stats = pstats.Stats(profile)
        total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
        print(f"\n{name}: {total / len(tasks) * 1000:.2f} ms CPU per evaluation (profiled)")
        stats.sort_stats("tottime").print_stats(top)


def _pool_rounds(latency_ms: float, evaluations: int, rounds: int, port: int) -> None:
    """The pool's CPU per evaluation, workers and feeding process apart (a fresh pool each)."""
    server = pool_throughput._Server(latency_ms, port)
    try:
        runs = [
            pool_throughput._child(
                "pool",
                base_url=server.base_url,
                concurrency=4,
                evaluations=evaluations,
            )
            for _ in range(rounds)
        ]
    finally:
        server.stop()
    for part in ("parent", "workers"):
        figures = [run[f"cpu_{part}_s"] / run["evaluations"] * 1000 for run in runs]
        spread = " ".join(f"{figure:.2f}" for figure in figures)
        print(
            f"pool {part:<8} {statistics.median(figures):6.2f} ms CPU per evaluation at "
            f"{latency_ms:g} ms ({rounds} rounds of {evaluations}: {spread})",
            flush=True,
        )
    walls = " ".join(f"{run['wall_s']:.2f}" for run in runs)
    print(f"pool wall  {statistics.median(run['wall_s'] for run in runs):6.2f} s ({walls})")


# provider → (model, the part of the loopback server's URL its SDK adds itself)
JUDGES = {
    "openai-compatible": ("loopback", ""),
    "openai": ("gpt-4.1", ""),
    "anthropic": ("claude-haiku-4-5", "/v1"),
}

# Every provider with an SDK path, for --provider-calls: (model, the URL's part its SDK
# adds itself, the spec's other fields).
PROVIDER_CALLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "openai": ("gpt-4.1", "", {}),
    "azure-openai": ("gpt-4o", "/v1", {"deployment": "judge", "api_version": "2024-10-21"}),
    "openrouter": ("openai/gpt-4.1", "", {}),
    "deepseek": ("deepseek-chat", "/v1", {}),
    "anthropic": ("claude-haiku-4-5", "/v1", {}),
    "openai-compatible": ("loopback", "", {}),
    "gemini": ("gemini-2.5-flash", "/v1", {}),
    "ollama": ("llama3.1", "/v1", {}),
    "bedrock": (
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "/v1",
        {"region": "us-east-1", "aws_access_key_id": "AKIALOOPBACK"},
    ),
}


class _Answer(BaseModel):
    """A metric's answer schema, as judges are asked for one."""

    verdict: str
    reason: str | None = None


class _Answers(BaseModel):
    verdicts: list[_Answer]


def _provider_calls(port: int, calls: int, rounds: int, concurrency: int = 16) -> None:
    """CPU per judge call of each provider's path, the provider alone (no metric, no state).

    Each provider asks the loopback server ``calls`` times (``concurrency`` at once) with
    a schema, after 30 calls of warm-up (its client, its SDK's first call, its request
    shapes); the figure is the fastest of ``rounds`` (the least disturbed on a busy
    machine). The path says whether the openai or anthropic SDK's request was built once
    per call shape and filled (``request_templates``) or built by the SDK every call.
    """
    from n8n_deepeval_pipeline.judging.judge import _process_loop
    from n8n_deepeval_pipeline.judging.provider_apis import request_templates
    from n8n_deepeval_pipeline.judging.providers import build_provider
    from n8n_deepeval_pipeline.judging.spec import JudgeSpec

    server = pool_throughput._Server(0, port)
    prompt = "Judge the text below for bias and answer with JSON verdicts. " * 30
    print(f"\nCPU per judge call, the provider alone ({calls} calls, {concurrency} at once)")
    print(f"{'provider':<18} {'ms CPU':>7}  path · rounds")
    try:
        for provider, (model, added, fields) in PROVIDER_CALLS.items():
            spec = JudgeSpec(
                provider=provider,
                model=model,
                api_key="sk-loopback",
                base_url=server.base_url.removesuffix(added),
                **fields,
            )

            async def measured(spec: JudgeSpec = spec) -> tuple[list[float], str]:
                judge = build_provider(spec)
                gate = asyncio.Semaphore(concurrency)

                async def one(index: int) -> None:
                    async with gate:
                        await judge.complete(f"{prompt}{index}", _Answers)

                await asyncio.gather(*(one(index) for index in range(30)))
                figures = []
                for _ in range(rounds):
                    before = time.process_time()
                    await asyncio.gather(*(one(index) for index in range(calls)))
                    figures.append((time.process_time() - before) / calls * 1000)
                client = getattr(judge, "_client", None)
                shapes = request_templates._TEMPLATES.get(client, {}) if client else {}
                filled = any(template is not None for template in shapes.values())
                return figures, "SDK request filled" if filled else "SDK builds each"

            figures, path = _process_loop(os.getpid()).run(measured())  # as a worker's judge
            spread = " ".join(f"{figure:.3f}" for figure in figures)
            print(f"{provider:<18} {min(figures):7.3f}  {path} · {spread}", flush=True)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--port", type=int, default=18731)
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions")
    parser.add_argument("--pool-latency", type=float, help="also the pool, judge at MS ms")
    parser.add_argument("--provider", choices=sorted(JUDGES), default="openai-compatible")
    parser.add_argument(
        "--provider-calls",
        type=int,
        default=0,
        help="only the CPU per judge call of every provider's path, N calls each",
    )
    args = parser.parse_args()
    if args.provider_calls:
        _provider_calls(args.port, args.provider_calls, args.rounds)
        return
    if args.pool_latency is not None:
        _pool_rounds(args.pool_latency, args.evaluations, args.rounds, args.port)
    from n8n_deepeval_pipeline.worker.evaluate import Evaluator
    from n8n_deepeval_pipeline.worker.zygote import freeze_warm_heap

    server = pool_throughput._Server(0, args.port)
    evaluated = 0  # every evaluation the judge server answered, warm-ups included
    figures: dict[str, float] = {}
    try:
        evaluator = Evaluator()
        freeze_warm_heap()
        for label, state in (("no state", None), ("state", tempfile.mkdtemp())):
            model, added = JUDGES[args.provider]
            base_url = server.base_url.removesuffix(added)
            tasks = pool_throughput.tasks_for(
                base_url, args.evaluations, state, args.provider, model
            )
            for task in tasks[:12]:  # warm: the judge, its client, DeepEval's lazy parts
                asyncio.run(evaluator.evaluate(task))
            rounds = [_round(evaluator, tasks) for _ in range(args.rounds)]
            evaluated += 12 + args.rounds * len(tasks)
            process, judge = (statistics.median(part) for part in zip(*rounds, strict=True))
            figures[label] = process
            fastest = min(figures[0] for figures in rounds)
            spread = " ".join(f"{figures[0]:.2f}" for figures in rounds)
            print(
                f"{label:<9} {process:6.2f} ms CPU per evaluation, fastest {fastest:.2f} "
                f"({args.rounds} rounds of {len(tasks)}: {spread}; judge loop {judge:.2f})",
                flush=True,
            )
            if args.profile:
                _profiled(evaluator, tasks, args.profile)
                evaluated += len(tasks)
    finally:
        served = server.stop()
    calls = served.get("requests", 0) / evaluated if evaluated else 0
    if calls:
        per_call = ", ".join(f"{label} {ms / calls:.2f} ms" for label, ms in figures.items())
        print(f"{calls:.2f} judge calls per evaluation: CPU per judge call {per_call}")


if __name__ == "__main__":
    main()
