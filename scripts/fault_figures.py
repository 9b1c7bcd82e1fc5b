"""Figures of the faults a user meets: how fast each is said, and what is left exposed.

    .venv/bin/python scripts/fault_figures.py                 # every probe
    .venv/bin/python scripts/fault_figures.py --only corrupt,files

Each probe runs the CLI as a user would (a fresh interpreter, a scratch home) and prints
one line of figures:

- ``unreachable``: seconds until ``validate``, ``run`` and ``backfill`` say that n8n
  (``N8N_API_URL`` on a closed port) cannot be reached, their exit code and how many
  lines they wrote to stderr;
- ``corrupt``: seconds until ``run`` and ``backfill`` name a ``results.duckdb`` cut to 0 B,
  1,000 B and 100 KB, and their exit code;
- ``files``: after ``run`` and ``report --out`` with umask 022 in a home made beforehand at
  0755, how many files and folders under the home another user may read, of how many;
- ``pattern``: Pattern Match's engine on ``(a+)+$``: the seconds RE2 takes on a 100,000-
  character output, and Python's re (DeepEval's engine) on 24 to 28 characters;
- ``spend``: a run killed twice (at 30% and 60% of its judge calls) then resumed, against
  a loopback judge: the calls the judge was sent, the calls the resumed run's summary
  charges over every attempt (those answered to a run), and a clean run's;
- ``spend-chunks``: the same with the scores in chunks of 50, killed once at 60% (some
  chunks had finished);
- ``spend-simulation``: a simulated benchmark (a loopback chatbot) killed in its
  simulation and resumed; then two runs of it at once, each charged its own calls.

Times are wall-clock on this machine, with whatever else it is running: read them with
the load average printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent" / "benchmark.yaml"


def cli(home: Path, *args: str, umask: int | None = None, **env: str) -> tuple[float, int, str]:
    """(seconds, exit code, stderr) of one CLI command in a fresh interpreter."""
    environment = {**os.environ, "N8N_DEEPEVAL_HOME": str(home), "DEEPEVAL_POOL_SIZE": "2", **env}
    for name in ("DAGSTER_HOME", "N8N_DEEPEVAL_DUCKDB"):
        environment.pop(name, None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        preexec_fn=None if umask is None else (lambda: os.umask(umask)),
    )
    return time.perf_counter() - started, done.returncode, done.stderr


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unreachable(scratch: Path) -> None:
    folder = scratch / "unreachable"
    shutil.copytree(EXAMPLE.parent, folder)
    benchmark = folder / "benchmark.yaml"
    text = benchmark.read_text().replace("workflow: workflow.json", "workflow: {id: wf-1}")
    benchmark.write_text(text)
    url = f"http://127.0.0.1:{closed_port()}"
    seconds, _, _ = cli(scratch / "home-unreachable", "validate", str(EXAMPLE))
    print(f"validate of the bundled example (no n8n to read), for scale: {seconds:.1f} s")
    for command in ("validate", "run", "backfill"):
        seconds, code, said = cli(
            scratch / "home-unreachable", command, str(benchmark), N8N_API_URL=url, N8N_API_KEY="k"
        )
        print(
            f"unreachable n8n · {command}: {seconds:.1f} s · exit {code} · "
            f"{len(said.splitlines())} line(s): {said.splitlines()[-1][:90] if said else ''}"
        )


def corrupt(scratch: Path) -> None:
    home = scratch / "home-corrupt"
    cli(home, "run", str(EXAMPLE))
    database = home / "results.duckdb"
    whole = database.read_bytes()
    for size in (0, 1000, 100_000):
        database.write_bytes(whole[:size])
        for command in ("run", "backfill"):
            seconds, code, said = cli(home, command, str(EXAMPLE))
            named = "corrupt or truncated" in said
            print(
                f"results.duckdb cut to {size:,} B · {command}: {seconds:.1f} s to "
                f"{'name it' if named else 'end without naming it'} · exit {code}"
            )


def files(scratch: Path) -> None:
    home = scratch / "home-files"
    home.mkdir(mode=0o755)
    cli(home, "run", str(EXAMPLE), umask=0o022)
    out = scratch / "report-out"
    cli(home, "report", str(EXAMPLE), "--out", str(out), umask=0o022)
    entries = [path for path in home.rglob("*")]
    exposed = [path for path in entries if stat.S_IMODE(path.lstat().st_mode) & 0o077]
    kinds = {
        "files": [p for p in entries if p.is_file()],
        "folders": [p for p in entries if p.is_dir()],
    }
    figures = " · ".join(
        f"{len([p for p in exposed if p in paths])} of {len(paths)} {kind}"
        for kind, paths in kinds.items()
    )
    modes = sorted({oct(stat.S_IMODE(p.stat().st_mode)) for p in out.iterdir()})
    print(
        f"umask 022, home made at 0755 · readable by others under the home: {figures} · "
        f"home itself {oct(stat.S_IMODE(home.stat().st_mode))} · report --out files {modes}"
    )


def pattern(_scratch: Path) -> None:
    from n8n_deepeval_pipeline.worker.pattern_engine import compile_pattern

    compiled = compile_pattern("(a+)+$", ignore_case=False)
    text = "a" * 100_000 + "b"
    started = time.perf_counter()
    answer = compiled.fullmatch(text)
    linear = time.perf_counter() - started
    print(
        f"(a+)+$ · RE2 ({compiled.engine_for(text)}) on 100,000 characters: "
        f"{linear * 1000:.3f} ms, match {answer}"
    )
    for length in (24, 26, 28):
        started = time.perf_counter()
        re.fullmatch("(a+)+$", "a" * length + "b")
        print(f"(a+)+$ · Python's re on {length} characters: {time.perf_counter() - started:.2f} s")


def _judge_env(base_url: str) -> dict[str, str]:
    return {
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": base_url,
        "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-loopback",
    }


def _environment(home: Path, base_url: str, **extra: str) -> dict[str, str]:
    environment = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DEEPEVAL_POOL_SIZE": "2",
        **_judge_env(base_url),
        **extra,
    }
    environment.pop("DAGSTER_HOME", None)
    return environment


def _run_command(benchmark: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(benchmark), *extra]


def _killed_then_resumed(
    home: Path, benchmark: Path, fractions: tuple[float, ...], clean_calls: int, **extra: str
) -> tuple[dict[str, object], int]:
    """Kill a run at each fraction of a clean run's judge calls, then resume it."""
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

    server = LoopbackJudge(latency_s=0.02).start()
    environment = _environment(home, server.base_url, **extra)
    try:
        for fraction in fractions:
            process = subprocess.Popen(
                _run_command(benchmark),
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            deadline = time.monotonic() + 300
            while server.requests < clean_calls * fraction and time.monotonic() < deadline:
                time.sleep(0.02)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        done = subprocess.run(
            _run_command(benchmark, "--json"),
            env=environment,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        server.stop()
    return json.loads(done.stdout), server.requests


def _clean_calls(home: Path, benchmark: Path, **extra: str) -> int:
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

    server = LoopbackJudge(latency_s=0.0).start()
    try:
        subprocess.run(
            _run_command(benchmark),
            env=_environment(home, server.base_url, **extra),
            capture_output=True,
            timeout=900,
            check=False,
        )
        return server.requests
    finally:
        server.stop()


def _charged(summary: dict[str, object]) -> str:
    attempts = summary["attempts"]
    assert isinstance(attempts, dict)
    calls = sum(part["judge_calls"] for part in attempts.values())
    cost = sum(part["cost_usd"] or 0.0 for part in attempts.values())
    return f"charged over {len(attempts)} attempts: {calls} calls, ${cost:.4f}"


def spend(scratch: Path) -> None:
    """The example killed twice in its one scoring chunk, then resumed."""
    clean_calls = _clean_calls(scratch / "home-clean", EXAMPLE)
    summary, sent = _killed_then_resumed(scratch / "home-spend", EXAMPLE, (0.3, 0.6), clean_calls)
    print(
        f"killed twice, resumed · the judge was sent {sent} calls (those in flight at a kill "
        f"never reached the run) · {_charged(summary)} · the resumed run's rows: "
        f"{summary['judge_calls']} calls (+{summary['cached_calls']} cached) · a clean run: "
        f"{clean_calls} calls"
    )


def spend_chunks(scratch: Path) -> None:
    """The example scored in chunks of 50, killed once some had finished, then resumed."""
    chunks = {"N8N_DEEPEVAL_CHUNK_SIZE": "50"}
    clean_calls = _clean_calls(scratch / "home-clean-chunks", EXAMPLE, **chunks)
    summary, sent = _killed_then_resumed(
        scratch / "home-chunks", EXAMPLE, (0.6,), clean_calls, **chunks
    )
    print(
        f"scored in chunks of 50, killed at 60% of its calls, resumed · the judge was sent "
        f"{sent} calls · {_charged(summary)} · the resumed run's rows: "
        f"{summary['judge_calls']} calls (+{summary['cached_calls']} cached) · a clean run: "
        f"{clean_calls} calls"
    )


def _simulated_benchmark(folder: Path, chatbot_url: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "goldens.csv").write_text(
        "id,scenario,expectedOutcome\n"
        "mul,What is 6*7,learns 42\nweather,Asks about weather,weather told\n"
        "refund,Wants a refund,refund promised\nhours,Asks the opening hours,hours told\n",
        encoding="utf-8",
    )
    (folder / "simulated.yaml").write_text(
        f"name: simulated\nworkflow: {EXAMPLE.parent / 'workflow.json'}\n"
        "dataset: {path: goldens.csv}\nrunsPerRow: 2\n"
        f"target: {{type: n8n_webhook, url: '{chatbot_url}', maxConcurrency: 8}}\n"
        "simulation: {maxUserTurns: 4}\n"
        "metrics: [{metric: turn_relevancy}, {metric: knowledge_retention}]\n",
        encoding="utf-8",
    )
    return folder / "simulated.yaml"


def spend_simulation(scratch: Path) -> None:
    """A simulation killed half-way, then resumed; two runs of it at once."""
    from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

    chatbot = LoopbackChatbot().start()
    try:
        benchmark = _simulated_benchmark(scratch / "simulated", chatbot.url)
        clean_calls = _clean_calls(scratch / "home-clean-simulated", benchmark)
        summary, sent = _killed_then_resumed(
            scratch / "home-simulated", benchmark, (0.15,), clean_calls
        )
        print(
            f"a simulation killed at 15% of a run's calls, resumed · the judge was sent {sent} "
            f"calls · {_charged(summary)} · a clean run: {clean_calls} calls"
        )
        server = LoopbackJudge(latency_s=0.02).start()
        environment = _environment(scratch / "home-overlap", server.base_url)
        try:
            runs = [
                subprocess.Popen(
                    _run_command(benchmark, "--json"),
                    env=environment,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                for _ in range(2)
            ]
            said = [json.loads(process.communicate(timeout=900)[0]) for process in runs]
        finally:
            server.stop()
        own = [part["attempts"][part["run_id"]]["judge_calls"] for part in said]
        rows = " and ".join(str(part["simulation"]["judge_calls"]) for part in said)
        print(
            f"two runs of the simulation at once · the judge was sent {server.requests} calls "
            f"· each run charged its own: {' + '.join(map(str, own))} = {sum(own)} · their "
            f"simulated users' rows say {rows}"
        )
    finally:
        chatbot.stop()


PROBES: dict[str, Callable[[Path], None]] = {
    "unreachable": unreachable,
    "corrupt": corrupt,
    "files": files,
    "pattern": pattern,
    "spend": spend,
    "spend-chunks": spend_chunks,
    "spend-simulation": spend_simulation,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(PROBES), help="probes, comma-separated")
    chosen = [name.strip() for name in parser.parse_args().only.split(",") if name.strip()]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="n8n-deepeval-faults-") as scratch:
        for name in chosen:
            PROBES[name](Path(scratch))


if __name__ == "__main__":
    main()
