"""Simulated users: the pipeline's simulation against DeepEval's own simulate(), in one run.

    .venv/bin/python scripts/simulation_throughput.py                  # 300 ms and 2 s
    .venv/bin/python scripts/simulation_throughput.py --latencies 2000 --workloads full,mixed
    .venv/bin/python scripts/simulation_throughput.py --latencies 2000 --conversations 6 \
        --max-user-turns 3 --workloads mixed        # a small run: 6 conversations

The same 40 conversations (40 goldens, up to 5 user turns each) against a loopback
OpenAI-compatible judge and a loopback chatbot (a chat webhook with memory) that both
answer after the same fixed latency, played by
  (a) the pipeline: its simulator process (DeepEval's ConversationSimulator with the
      pipeline's judge: cache (cold), pacing, retries), every conversation in flight, the
      chatbot called as an n8n_webhook target with maxConcurrency 40;
  (a') the pipeline's whole ``run`` of a simulated benchmark of the same goldens (one
      metric that needs no judge), from the CLI in a fresh home: Dagster's set-up, the
      simulator process (started as soon as the benchmark is read), tables and report;
  (b) DeepEval's own ConversationSimulator.simulate() with its own OpenAI model class, at
      its default max_concurrent (5) and at 16, in a process of its own.
Workloads: ``full`` (the judge never finds the expected outcome reached, so every
conversation plays its 5 user turns: 5 user turns, 4 outcome checks and 5 chatbot calls,
one after another), ``mixed`` (the loopback judge decides from a hash of each check's
request, so conversations stop after 1 to 5 user turns).

``--conversations`` and ``--max-user-turns`` make the run smaller (a small run's fixed
cost shows). Printed per latency and workload: wall time (each runner's whole process,
starting it and importing DeepEval included: a user of either pays them; "play" is the
conversations alone), the CPU seconds of the runner's processes, conversations in flight at
most (a session from its first chatbot call to its last answer), judge calls, whether
every runner played the same conversations, and the bound: the longest conversation's
chain of calls x the latency (no runner can finish sooner). The targets: at 2 s, the
pipeline at most half of DeepEval's time at 16, and within 1.5x the bound.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.simulation.golden import golden_runs
from n8n_deepeval_pipeline.simulation.launcher import simulate
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.worker.environment import worker_environment

MODEL = "gpt-4.1"  # a name DeepEval's own OpenAI model sends a JSON schema for
CONVERSATIONS = 40  # --conversations
MAX_USER_TURNS = 5  # --max-user-turns
HASH = "0" * 64


def children_cpu() -> float:
    """CPU seconds of the processes this one started and waited for (and of theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def goldens() -> list[dict[str, str]]:
    """The goldens: half about arithmetic (the chatbot's Calculator tool), half small talk."""
    return [
        {
            "scenario": f"Asks what {index}*7 is" if index % 2 else f"Chats about topic {index}",
            "expected_outcome": f"The user is satisfied with answer {index}",
            "user_description": "a busy customer",
        }
        for index in range(CONVERSATIONS)
    ]


def pipeline(judge: LoopbackJudge, chatbot: LoopbackChatbot, state: Path) -> dict[str, Any]:
    rows = [
        DatasetRow(workflow_hash=HASH, row_id=f"g{index:02d}", position=index + 1, raw={},
                   **golden)
        for index, golden in enumerate(goldens())
    ]  # fmt: skip
    request = SimulationRequest(
        runs=golden_runs(expanded_runs(rows, 1, "throughput"), rows),
        judge=JudgeSpec(
            provider="openai",
            model=MODEL,
            base_url=judge.base_url,
            api_key="sk-throughput",
            state_dir=str(state),  # a fresh folder: a cold cache
        ),
        target=WebhookTarget(type="n8n_webhook", url=chatbot.url, max_concurrency=CONVERSATIONS),
        url=chatbot.url,
        max_user_turns=MAX_USER_TURNS,
    )
    started, cpu = time.perf_counter(), children_cpu()
    conversations, times = simulate(request)
    wall = time.perf_counter() - started
    chains = [
        2 * c.user_turns + c.user_turns - (c.stop_reason == "turn_limit") for c in conversations
    ]
    return {"wall_s": wall, "play_s": times.simulate_s, "cpu_s": children_cpu() - cpu,
            "longest_chain": max(chains)}  # fmt: skip


def pipeline_run(judge: LoopbackJudge, chatbot: LoopbackChatbot) -> dict[str, Any]:
    """``n8n-deepeval run`` of a simulated benchmark of the goldens, in a fresh home.

    Its one metric needs no judge (agent loop detection), so the run's time is the
    simulation's and the run's own: Dagster's set-up, the simulator process (started as
    soon as the benchmark is read), the tables and the report.
    """
    import csv

    import yaml

    with tempfile.TemporaryDirectory(prefix="simulation-run-") as home:
        folder = Path(home)
        with (folder / "goldens.csv").open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(["id", "scenario", "expectedOutcome", "userDescription"])
            for index, golden in enumerate(goldens()):
                fields = (
                    golden["scenario"],
                    golden["expected_outcome"],
                    golden["user_description"],
                )
                writer.writerow([f"g{index:02d}", *fields])
        document = {
            "name": "simulated_run",
            "workflow": str(Path(__file__).resolve().parents[1] / "examples" / "support_agent"
                            / "workflow.json"),
            "dataset": {"path": "goldens.csv"},
            "target": {"type": "n8n_webhook", "url": chatbot.url,
                       "maxConcurrency": CONVERSATIONS},
            "simulation": {"maxUserTurns": MAX_USER_TURNS},
            "metrics": [{"metric": "agent_loop_detection"}],
        }  # fmt: skip
        path = folder / "benchmark.yaml"
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
        environment = {
            **{k: v for k, v in os.environ.items() if k not in ("N8N_API_URL", "N8N_API_KEY")},
            "N8N_DEEPEVAL_HOME": home,
            "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai",
            "N8N_DEEPEVAL_JUDGE_MODEL": MODEL,
            "N8N_DEEPEVAL_JUDGE_BASE_URL": judge.base_url,
            "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-throughput",
        }
        started, cpu = time.perf_counter(), children_cpu()
        done = subprocess.run(
            [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(path), "--json"],
            env=environment, cwd=home, capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"the pipeline's run failed:\n{done.stderr[-3000:]}")
    return {"wall_s": wall, "play_s": float("nan"), "cpu_s": cpu}


def deepeval(
    judge: LoopbackJudge, chatbot: LoopbackChatbot, max_concurrent: int | None
) -> dict[str, Any]:
    """DeepEval's own simulate() in a process of its own (DeepEval reads settings at import)."""
    spec = {"base_url": judge.base_url, "chatbot": chatbot.url, "max_concurrent": max_concurrent,
            "conversations": CONVERSATIONS, "max_user_turns": MAX_USER_TURNS}  # fmt: skip
    started, cpu = time.perf_counter(), children_cpu()
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--deepeval-child", json.dumps(spec)],
            env=worker_environment(),
            cwd=scratch,
            capture_output=True,
            text=True,
            check=True,
        )
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "wall_s": wall, "cpu_s": cpu}  # the process's whole life


def deepeval_child(spec: dict[str, Any]) -> None:
    """Play the goldens with DeepEval's ConversationSimulator and its own OpenAI model."""
    import aiohttp
    from deepeval.dataset import ConversationalGolden
    from deepeval.models import GPTModel
    from deepeval.simulator import ConversationSimulator
    from deepeval.test_case import ToolCall, Turn

    global CONVERSATIONS, MAX_USER_TURNS
    CONVERSATIONS, MAX_USER_TURNS = spec["conversations"], spec["max_user_turns"]
    http: list[aiohttp.ClientSession] = []

    async def chatbot(input: str, turns: list[Turn], thread_id: str) -> Turn:
        if not http:  # one connection pool, made on the simulator's loop
            http.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)))
        body = {"chatInput": input, "sessionId": thread_id}
        async with http[0].post(spec["chatbot"], json=body) as reply:
            answer = await reply.json()
        tools = [
            ToolCall(name=step["action"]["tool"], input_parameters=step["action"]["toolInput"],
                     output=step["observation"], reasoning=step["action"].get("log"))
            for step in answer.get("intermediateSteps") or []
        ]  # fmt: skip
        return Turn(role="assistant", content=answer["output"], tools_called=tools or None)

    model = GPTModel(model=MODEL, base_url=spec["base_url"], api_key="sk-throughput", temperature=0)
    options = {} if spec["max_concurrent"] is None else {"max_concurrent": spec["max_concurrent"]}
    simulator = ConversationSimulator(model_callback=chatbot, simulator_model=model, **options)
    cases = [ConversationalGolden(**golden) for golden in goldens()]
    started = time.perf_counter()
    simulator.simulate(cases, max_user_simulations=MAX_USER_TURNS)
    print(json.dumps({"play_s": time.perf_counter() - started}))


def conversations_played(chatbot: LoopbackChatbot) -> list[list[str]]:
    """What each session sent, sessions sorted: equal when the runners played the same."""
    return sorted(chatbot.memory.values())


def measure(latency_s: float, workload: str) -> list[dict[str, Any]]:
    fixed = {"is_complete": False} if workload == "full" else None
    judge = LoopbackJudge(latency_s=latency_s, fixed=fixed).start()
    rows: list[dict[str, Any]] = []
    played: list[list[list[str]]] = []
    bound_chain = 0
    try:
        runners = [("pipeline (all in flight)", None), ("pipeline run (CLI)", 0),
                   ("DeepEval simulate() C5", 5), ("DeepEval simulate() C16", 16)]  # fmt: skip
        for name, concurrency in runners:
            chatbot = LoopbackChatbot(latency_s=latency_s).start()
            before = judge.requests
            try:
                if concurrency is None:
                    with tempfile.TemporaryDirectory() as state:
                        result = pipeline(judge, chatbot, Path(state))
                    bound_chain = result.pop("longest_chain")
                elif concurrency == 0:
                    result = pipeline_run(judge, chatbot)
                else:
                    result = deepeval(judge, chatbot, concurrency)
            finally:
                chatbot.stop()
            played.append(conversations_played(chatbot))
            rows.append({
                "runner": name, **result, "in_flight": chatbot.sessions_in_flight(),
                "judge_calls": judge.requests - before, "chatbot_calls": len(chatbot.bodies),
            })  # fmt: skip
            print(f"  {name}: {result['wall_s']:.1f} s", file=sys.stderr, flush=True)
    finally:
        judge.stop()
    bound = bound_chain * latency_s
    same = all(conversation == played[0] for conversation in played)
    for row in rows:
        row.update(latency_s=latency_s, workload=workload, bound_s=bound, same=same)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'latency':>7}  {'workload':<8} {'runner':<26} {'wall s':>7} {'play s':>7} "
        f"{'cpu s':>6} {'in flight':>9} {'judge calls':>11} {'bot calls':>9} {'bound s':>7} "
        f"{'wall/bound':>10}  same"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        lines.append(
            f"{row['latency_s'] * 1000:>5.0f}ms  {row['workload']:<8} {row['runner']:<26} "
            f"{row['wall_s']:>7.1f} {row['play_s']:>7.1f} {row['cpu_s']:>6.1f} "
            f"{row['in_flight']:>9} "
            f"{row['judge_calls']:>11} {row['chatbot_calls']:>9} {row['bound_s']:>7.1f} "
            f"{row['wall_s'] / row['bound_s']:>10.2f}  {'yes' if row['same'] else 'NO'}"
        )
    return "\n".join(lines)


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """The targets at 2 s: at most half of DeepEval's time at 16, within 1.5x the bound.

    With as few conversations as DeepEval's default plays at once (a small run), the
    pipeline against DeepEval's default instead: wall and play, side by side.
    """
    lines = []
    for latency, workload in sorted({(row["latency_s"], row["workload"]) for row in rows}):
        group = {row["runner"]: row for row in rows
                 if (row["latency_s"], row["workload"]) == (latency, workload)}  # fmt: skip
        ours, run = group["pipeline (all in flight)"], group["pipeline run (CLI)"]
        default = group["DeepEval simulate() C5"]
        lines.append(
            f"{latency * 1000:g} ms {workload}: pipeline / DeepEval simulate() C5 (its default): "
            f"wall {ours['wall_s'] / default['wall_s']:.2f}, play "
            f"{ours['play_s'] / default['play_s']:.2f}, CPU {ours['cpu_s'] / default['cpu_s']:.2f}"
            f"; the whole run (CLI) / simulate() C5: wall {run['wall_s'] / default['wall_s']:.2f}"
            f", CPU {run['cpu_s'] / default['cpu_s']:.2f}"
        )
        if latency != 2.0 or CONVERSATIONS <= 5:
            continue
        theirs = group["DeepEval simulate() C16"]
        half = ours["wall_s"] <= theirs["wall_s"] / 2
        bound = ours["wall_s"] <= 1.5 * ours["bound_s"]
        lines.append(
            f"2 s {workload}: pipeline {ours['wall_s']:.1f} s vs DeepEval C16 "
            f"{theirs['wall_s']:.1f} s ({ours['wall_s'] / theirs['wall_s']:.2f}x: "
            f"{'met' if half else 'MISSED'} <= 0.5x); vs bound {ours['bound_s']:.1f} s "
            f"({ours['wall_s'] / ours['bound_s']:.2f}x: {'met' if bound else 'MISSED'} <= 1.5x)"
        )
    return lines


def main() -> None:
    """Measure every latency and workload asked for, then print the table and the verdicts."""
    global CONVERSATIONS, MAX_USER_TURNS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latencies", default="300,2000", help="milliseconds, comma-separated")
    parser.add_argument("--workloads", default="full", help="full, mixed or both (comma)")
    parser.add_argument("--conversations", type=int, default=CONVERSATIONS)
    parser.add_argument("--max-user-turns", type=int, default=MAX_USER_TURNS)
    parser.add_argument("--deepeval-child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    CONVERSATIONS, MAX_USER_TURNS = options.conversations, options.max_user_turns
    if options.deepeval_child:
        deepeval_child(json.loads(options.deepeval_child))
        return
    rows: list[dict[str, Any]] = []
    for workload in filter(None, options.workloads.split(",")):
        for latency in filter(None, options.latencies.split(",")):
            print(f"{workload} at {latency} ms …", file=sys.stderr, flush=True)
            rows += measure(float(latency) / 1000, workload)
    print(table(rows))
    for line in verdicts(rows):
        print(line)
    ok = all("MISSED" not in line for line in verdicts(rows))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
