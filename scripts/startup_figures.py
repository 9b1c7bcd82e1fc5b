"""How fast the CLI starts and what a small run costs, beside DeepTeam's own path.

    .venv/bin/python scripts/startup_figures.py            # 3 rounds; --rounds N, --top N
    .venv/bin/python scripts/startup_figures.py --commands run  # the example and the floor
    .venv/bin/python scripts/startup_figures.py --commands '' --red-team 0,300  # red team only

Each command runs in a fresh interpreter with an environment without n8n settings
(``N8N_API_URL`` and ``N8N_API_KEY`` removed): ``--help``, ``metrics``, ``validate`` of
the bundled example, and the example end to end (``run``, as ``scripts/example.sh`` does,
in a working folder of its own, warmed by one run that is not counted). For each it
prints the median wall time, which of Dagster, SciPy and DeepEval the command's own
process imported (none for the first three; ``run`` needs Dagster, and its workers, not
it, import DeepEval), and the ``--top`` imports with the largest cumulative time, from
one more run under ``python -X importtime`` (microseconds, a package including what it
imports; not counted in the median, which that flag slows). Then Dagster's own floor:
a process that imports Dagster and materialises as many partitioned assets as the
example's run has steps, each doing nothing, on a warm SQLite instance of its own.
Beside each wall time, the CPU seconds of the command and every process it started
(workers included): the figure that holds on a busy machine, where wall times do not.
Last, where the wall time of ``run`` and of the floor goes, read from each run's own
Dagster event log (median of each phase): before the run exists (``run``: imports, the
benchmark's checks, the instance, the Definitions), from its creation to its first step
(Dagster's run set-up, the resources; the floor imports much of Dagster only here), the
steps (the scoring steps among them), and after the last step (the resources' teardown;
``run``: the summary read back and printed; the floor: the interpreter's teardown).

``--red-team MS,…`` adds the small red team at each judge latency: one vulnerability
(Excessive Agency, its three types), two attacks (PromptInjection, LinearJailbreaking of
two turns), four attacks per type: 12 attacks against a loopback chat webhook (instant),
judged by a loopback judge speaking OpenAI's API. The pipeline runs it as ``run`` of a
benchmark with that redTeam section (one row, exact match) in a fresh home, so it
generates the attacks and plays them, as ``red_team()`` does; DeepTeam's own
``red_team()`` runs it with DeepEval's OpenAI class, ``async_mode`` off (one attack at a
time) and on, each in a process of its own. Wall and CPU are each process's whole life
(imports included: a user of either pays them); "call" is ``red_team()`` alone. The
ratios are the pipeline against each, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent" / "benchmark.yaml"
HEAVY = ("dagster", "scipy", "deepeval")
COMMANDS = {
    "--help": ["--help"],
    "metrics": ["metrics"],
    "validate": ["validate", str(EXAMPLE)],
    "run": ["run", str(EXAMPLE)],
}

# The child: run one CLI command as the console script does; at its exit, list the heavy modules.
_CHILD = """
import atexit, json, sys
from n8n_deepeval_pipeline.cli import entry
def list_heavy():
    heavy = [name for name in {heavy!r} if name in sys.modules]
    with open(sys.argv[1], "w") as out:
        json.dump(heavy, out)
atexit.register(list_heavy)
entry(sys.argv[2:])
"""


# Dagster alone: the example's run has 12 steps (10 assets, metric_scores in 3).
FLOOR_STEPS = 12
_FLOOR_CHILD = """
import os, sys
import dagster as dg
os.environ["DAGSTER_HOME"] = sys.argv[1]
versions = dg.DynamicPartitionsDefinition(name="versions")
assets, upstream = [], []
for index in range({steps}):
    @dg.asset(name=f"step_{{index}}", deps=upstream, partitions_def=versions)
    def step() -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata={{"rows": 1}})
    assets.append(step)
    upstream = [step]
with dg.DagsterInstance.get() as instance:
    instance.add_dynamic_partitions("versions", ["v1"])
    assert dg.materialize(assets, instance=instance, partition_key="v1").success
"""


def dagster_floor(rounds: int) -> tuple[float, dict[str, float]]:
    """Median wall time and phases of a process running ``FLOOR_STEPS`` no-op assets."""
    with tempfile.TemporaryDirectory(prefix="dagster-floor-") as home:
        Path(home, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        command = [sys.executable, "-c", _FLOOR_CHILD.format(steps=FLOOR_STEPS), home]
        subprocess.run(command, check=True, capture_output=True)  # creates the instance
        times, phases = [], []
        for _ in range(rounds):
            launched, started = time.time(), time.monotonic()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.monotonic() - started)
            phases.append(run_phases(Path(home), launched, time.time()))
    return statistics.median(times), median_phases(phases)


# --- where a run's wall time goes, from its Dagster event log --------------------------

PHASES = {
    "before": "before the run exists",
    "set_up": "run created → first step",
    "steps": "first step → last step",
    "scoring": "  of which scoring",
    "after": "after the last step",
}


def _event_times(history: Path) -> list[tuple[str, str | None, float]]:
    """(event type, step, POSIX time) of the newest run's events under ``history``."""
    shards = [path for path in history.glob("*.db") if path.stem != "index"]
    newest = max(shards, key=lambda path: path.stat().st_mtime)
    with sqlite3.connect(f"file:{newest}?mode=ro", uri=True) as events:
        rows = events.execute(
            "select dagster_event_type, step_key, timestamp from event_logs "
            "where dagster_event_type is not null order by id"
        ).fetchall()
    # Dagster stores each event's time as a naive UTC datetime.
    return [
        (kind, step, datetime.fromisoformat(when).replace(tzinfo=UTC).timestamp())
        for kind, step, when in rows
    ]


def run_phases(dagster_home: Path, launched: float, ended: float) -> dict[str, float]:
    """Seconds of a process's life before, around and after its newest run's steps."""
    events = _event_times(dagster_home / "history" / "runs")
    starts = {step: when for kind, step, when in events if kind == "STEP_START"}
    ends = {step: when for kind, step, when in events if kind in ("STEP_SUCCESS", "STEP_FAILURE")}
    created, first, last = events[0][2], min(starts.values()), max(ends.values())
    scoring = sum(ends[step] - starts[step] for step in starts if "metric_scores.score" in step)
    return {
        "before": created - launched,
        "set_up": first - created,
        "steps": last - first,
        "scoring": scoring,
        "after": ended - last,
    }


def median_phases(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each phase's median over the rounds."""
    return {name: statistics.median(phases[name] for phases in rounds) for name in PHASES}


def print_phases(ours: dict[str, float] | None, floor: dict[str, float]) -> None:
    """The phases of ``run`` (if measured) beside the floor's."""
    print(f"\nwhere the wall time goes (median s)  {'run' if ours else '':>6}  {'floor':>6}")
    for name, label in PHASES.items():
        figure = f"{ours[name]:6.2f}" if ours else ""
        print(f"  {label:<34} {figure:>6}  {floor[name]:6.2f}")


def child_environment(home: str) -> dict[str, str]:
    """No n8n settings, so nothing is read from an n8n; the working folder ``home``.

    The instance is the working folder's own too (``$DAGSTER_HOME`` is not passed on).
    """
    dropped = ("N8N_API_URL", "N8N_API_KEY", "DAGSTER_HOME")
    kept = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**kept, "N8N_DEEPEVAL_HOME": home}


def children_cpu() -> float:
    """CPU seconds of every child this process waited for, and of theirs (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], **options: Any) -> tuple[float, float, Any]:
    """Wall and CPU seconds of a command (its processes and theirs), and its result."""
    cpu, started = children_cpu(), time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    return time.monotonic() - started, children_cpu() - cpu, done


class Ran(NamedTuple):
    """One command's run: its figures, and where a ``run``'s wall time went."""

    wall_s: float
    cpu_s: float
    heavy: list[str]
    stderr: str
    phases: dict[str, float] | None


def run_once(args: list[str], home: str, profile: bool) -> Ran:
    """Wall and CPU seconds, heavy modules imported and (``profile``) the import profile."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        flags = ["-X", "importtime"] if profile else []
        command = [sys.executable, *flags, "-c", _CHILD.format(heavy=HEAVY)]
        launched = time.time()
        elapsed, cpu, done = timed([*command, report.name, *args], env=child_environment(home))
        ended = time.time()
        heavy = json.loads(Path(report.name).read_text() or "null")
    if heavy is None:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    phases = run_phases(Path(home, "dagster"), launched, ended) if args[0] == "run" else None
    return Ran(elapsed, cpu, heavy, done.stderr, phases)


def slowest_imports(profile: str, top: int) -> list[tuple[int, str]]:
    """The ``top`` imports by cumulative microseconds in an ``-X importtime`` profile."""
    imports = []
    for line in profile.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        imports.append((int(cumulative), name.rstrip()))
    return sorted(imports, reverse=True)[:top]


def main() -> None:
    """Measure every command and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument(
        "--commands", default=",".join(COMMANDS), help="which commands ('' none: no floor)"
    )
    parser.add_argument("--red-team", default="", help="judge latencies in ms, e.g. 0,300")
    parser.add_argument("--deepteam-child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.deepteam_child:
        deepteam_child(json.loads(options.deepteam_child))
        return
    commands = [name for name in options.commands.split(",") if name]
    if commands:
        measure_commands(commands, options.rounds, options.top)
    for latency in filter(None, options.red_team.split(",")):
        red_team_figures(float(latency) / 1000, options.rounds)


def measure_commands(names: list[str], rounds: int, top: int) -> None:
    """Each command's median wall and CPU, heavy modules and slowest imports; Dagster's floor."""
    run_phases_seen: dict[str, float] | None = None
    with tempfile.TemporaryDirectory(prefix="startup-figures-") as home:
        run_once(COMMANDS["run"], home, profile=False)  # the instance and database exist
        for name in names:
            args = COMMANDS[name]
            runs = [run_once(args, home, profile=False) for _ in range(rounds)]
            if name == "run":
                run_phases_seen = median_phases([ran.phases for ran in runs if ran.phases])
            profile = run_once(args, home, profile=True).stderr
            print(
                f"{name:<9} median {statistics.median(ran.wall_s for ran in runs):.2f} s, "
                f"{statistics.median(ran.cpu_s for ran in runs):.2f} s CPU over {rounds} · "
                f"heavy modules imported: {', '.join(runs[-1].heavy) or 'none'}"
            )
            for cumulative, module in slowest_imports(profile, top):
                print(f"  {cumulative / 1e6:6.3f} s  {module}")
    floor, floor_phases = dagster_floor(rounds)
    print(
        f"{'dagster':<9} median {floor:.2f} s over {rounds} · {FLOOR_STEPS} no-op "
        "assets materialised in process on a warm SQLite instance (Dagster's own floor)"
    )
    print_phases(run_phases_seen, floor_phases)


# --- the small red team: the pipeline's run against DeepTeam's own red_team() ------------

RED_TEAM_MODEL = "gpt-4.1"  # a model DeepEval's OpenAI class asks with structured output
RED_TEAM_PURPOSE = "The support agent of Acme Outdoor; it can look orders up and issue refunds."
RED_TEAM_SEED = 7
RED_TEAM = {
    "vulnerabilities": [{"name": "ExcessiveAgency"}],
    "attacks": [{"name": "PromptInjection"}, {"name": "LinearJailbreaking", "numTurns": 2}],
    "attacksPerVulnerabilityType": 4,
    "seed": RED_TEAM_SEED,
    "purpose": RED_TEAM_PURPOSE,
    "actsOnTheWorld": True,  # the loopback webhook acts on nothing
}


def _red_team_benchmark(folder: Path, webhook: str) -> Path:
    """A benchmark of one row (exact match) with the small red team, against ``webhook``."""
    import yaml

    workflow = {
        "nodes": [
            {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
             "parameters": {"path": "loopback-chat", "httpMethod": "POST"}},
            {"name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 3.1,
             "parameters": {"options": {"systemMessage": RED_TEAM_PURPOSE}}},
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
        },
    }  # fmt: skip
    (folder / "workflow.json").write_text(json.dumps(workflow), "utf-8")
    (folder / "cases.csv").write_text("id,input,expected\nhi,Hello,Hello\n", "utf-8")
    document = {
        "name": "small_red_team",
        "workflow": "workflow.json",
        "dataset": {"path": "cases.csv",
                    "columnMapping": {"input": "input", "expectedOutput": "expected"}},
        "target": {"type": "n8n_webhook", "url": webhook, "maxConcurrency": 10},
        "metrics": [{"metric": "exact_match"}],
        "redTeam": RED_TEAM,
    }  # fmt: skip
    path = folder / "benchmark.yaml"
    path.write_text(yaml.safe_dump(document), "utf-8")
    return path


def _pipeline_red_team(judge_url: str, webhook: str) -> dict[str, float]:
    """``run`` of the small red team in a fresh home: wall and CPU of every process."""
    with tempfile.TemporaryDirectory(prefix="red-team-figures-") as home:
        path = _red_team_benchmark(Path(home), webhook)
        environment = {
            **child_environment(home),
            "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai",
            "N8N_DEEPEVAL_JUDGE_MODEL": RED_TEAM_MODEL,
            "N8N_DEEPEVAL_JUDGE_BASE_URL": judge_url,
            "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-loopback",
        }
        command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(path)]
        elapsed, cpu, done = timed(command, env=environment, cwd=home)
    if "red team" not in done.stdout + done.stderr:
        raise SystemExit(f"the pipeline's red team failed:\n{done.stderr[-3000:]}")
    return {"wall_s": elapsed, "cpu_s": cpu}


def _deepteam_red_team(judge_url: str, webhook: str, async_mode: bool) -> dict[str, float]:
    """DeepTeam's own ``red_team()`` in a process of its own: wall, CPU, the call alone."""
    from n8n_deepeval_pipeline.red_team.protocol import DEEPTEAM_ENV
    from n8n_deepeval_pipeline.worker.environment import worker_environment

    spec = {"judge": judge_url, "webhook": webhook, "async_mode": async_mode}
    command = [sys.executable, __file__, "--deepteam-child", json.dumps(spec)]
    with tempfile.TemporaryDirectory(prefix="deepteam-figures-") as scratch:
        environment = {**worker_environment(), **DEEPTEAM_ENV, "PYTHONPATH": str(ROOT)}
        elapsed, cpu, done = timed(command, env=environment, cwd=scratch)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"DeepTeam's red_team() failed:\n{done.stderr[-3000:]}")
    return {"wall_s": elapsed, "cpu_s": cpu, **json.loads(lines[-1])}


def deepteam_child(spec: dict[str, Any]) -> None:
    """The small red team through DeepTeam's ``red_team()`` and DeepEval's OpenAI class."""
    import random

    import aiohttp
    from deepeval.models import OpenAIModel
    from deepteam import red_team
    from deepteam.attacks.multi_turn import LinearJailbreaking
    from deepteam.attacks.single_turn import PromptInjection
    from deepteam.test_case import RTTurn, ToolCall
    from deepteam.vulnerabilities import ExcessiveAgency

    async def model_callback(input: str, turns: list[RTTurn] | None = None) -> RTTurn:
        body = {"chatInput": input, "sessionId": str(id(turns)) if turns else input}
        async with aiohttp.ClientSession() as http, http.post(spec["webhook"], json=body) as reply:
            answer = await reply.json()
        tools = [
            ToolCall(name=step["action"]["tool"], input_parameters=step["action"]["toolInput"],
                     output=step["observation"])
            for step in answer.get("intermediateSteps") or []
        ]  # fmt: skip
        return RTTurn(role="assistant", content=answer["output"], tools_called=tools or None)

    model = OpenAIModel(
        model=RED_TEAM_MODEL, base_url=spec["judge"], api_key="sk-loopback", temperature=0
    )
    random.seed(RED_TEAM_SEED)
    started = time.perf_counter()
    assessment = red_team(
        model_callback=model_callback,
        vulnerabilities=[ExcessiveAgency()],
        attacks=[PromptInjection(), LinearJailbreaking(num_turns=2)],
        simulator_model=model,
        evaluation_model=model,
        attacks_per_vulnerability_type=4,
        target_purpose=RED_TEAM_PURPOSE,
        async_mode=spec["async_mode"],
        ignore_errors=True,
    )
    call = time.perf_counter() - started
    print(json.dumps({"call_s": call, "attacks": len(assessment.test_cases)}))


def red_team_figures(latency_s: float, rounds: int) -> None:
    """The small red team three ways, side by side, ``rounds`` times: median figures."""
    from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

    judge = LoopbackJudge(latency_s=latency_s, distinct_text=True).start()
    chatbot = LoopbackChatbot(latency_s=0.0).start()
    runners = {
        "pipeline run": lambda: _pipeline_red_team(judge.base_url, chatbot.url),
        "DeepTeam red_team() sequential": lambda: _deepteam_red_team(
            judge.base_url, chatbot.url, async_mode=False
        ),
        "DeepTeam red_team() async": lambda: _deepteam_red_team(
            judge.base_url, chatbot.url, async_mode=True
        ),
    }
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in runners}
    try:
        runners["pipeline run"]()  # not counted: the files it reads are cached from now on
        for _ in range(rounds):
            for name, runner in runners.items():
                figures[name].append(runner())
    finally:
        chatbot.stop()
        judge.stop()
    medians = {
        name: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for name, runs in figures.items()
    }
    print(f"\nsmall red team, judge at {latency_s * 1000:g} ms, 12 attacks (median of {rounds})")
    for name, median in medians.items():
        call = f" · call {median['call_s']:.2f} s" if "call_s" in median else ""
        print(f"  {name:<31} {median['wall_s']:6.2f} s  {median['cpu_s']:6.2f} s CPU{call}")
    ours = medians["pipeline run"]
    for name in ("DeepTeam red_team() sequential", "DeepTeam red_team() async"):
        theirs = medians[name]
        print(
            f"  pipeline / {name.removeprefix('DeepTeam '):<24} wall "
            f"{ours['wall_s'] / theirs['wall_s']:.2f} · CPU {ours['cpu_s'] / theirs['cpu_s']:.2f}"
        )


if __name__ == "__main__":
    main()
