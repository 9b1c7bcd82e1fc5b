"""The support-agent benchmark against a judge that misbehaves, end to end.

    .venv/bin/python scripts/fault_injection.py

A loopback OpenAI-compatible judge answers the example benchmark's judge calls, with a
fault in every third request for the first few hundred (429 with and without
Retry-After, 500, 503, slow past the timeout, dropped connections, invalid JSON,
schema-violating JSON). The benchmark runs through the CLI in a scratch home; the
script prints the calls the server saw, the retries the pipeline counted, errors by
kind, and whether any score row was lost.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent" / "benchmark.yaml"
FAULTS = ["429:1", "429", "500", "503", "slow", "drop", "invalid_json", "schema_violation"]


def fault_plan(requests: int) -> list[str]:
    """A fault in every third request, cycling through every kind."""
    kinds = itertools.cycle(FAULTS)
    return [next(kinds) if index % 3 == 0 else "ok" for index in range(requests)]


def main() -> None:
    server = LoopbackJudge(latency_s=0.02, faults=fault_plan(300), slow_s=3).start()
    home = Path(tempfile.mkdtemp(prefix="n8n-deepeval-faults-"))
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai-compatible",
        "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
        "N8N_DEEPEVAL_JUDGE_BASE_URL": server.base_url,
        "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-loopback",
        "N8N_DEEPEVAL_JUDGE_TIMEOUT_S": "1",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run", str(EXAMPLE), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    server.stop()
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    summary = json.loads(done.stdout)
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        rows = db.execute("select count(*) from support_agent.metric_scores").fetchone()[0]
        kinds = Counter(
            dict(
                db.execute(
                    "select coalesce(error_kind, 'scored'), count(*) "
                    "from support_agent.metric_scores group by 1"
                ).fetchall()
            )
        )
    expected = summary["runs"] * len(summary["metrics"])
    print(f"fault-injection run of the support-agent example ({elapsed:.1f} s)")
    print(f"server: {server.requests} requests · faults served {dict(server.served)}")
    print(
        f"pipeline: {summary['judge_calls']} judge calls answered, "
        f"{summary['cached_calls']} from the cache, {summary['judge_retries']} retries"
    )
    print(f"score rows: {rows} of {expected} expected · rows lost: {expected - rows}")
    print("rows by outcome: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))


if __name__ == "__main__":
    main()
