"""First runs on a fresh home at the same time: the Dagster instance is created once, whole."""

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLE

pytestmark = pytest.mark.slow

# Each process imports everything first, says so with its ready file, then waits for the
# go file, so that they all create the instance in the same instant.
OPEN_WHEN_TOLD = """
import sys, time
from pathlib import Path
from n8n_deepeval_pipeline.orchestration.local_runner import local_instance
Path(sys.argv[2]).touch()
while not Path(sys.argv[1]).exists():
    time.sleep(0.005)
with local_instance() as instance:
    instance.get_runs(limit=1)
"""


def environment(home: Path) -> dict[str, str]:
    env = {**os.environ, "N8N_DEEPEVAL_HOME": str(home), "DEEPEVAL_POOL_SIZE": "1"}
    env.pop("DAGSTER_HOME", None)
    return env


def migration_heads(dagster_home: Path) -> dict[str, int]:
    """Rows of each SQLite storage's alembic_version table (one, when it is whole)."""
    heads = {}
    for path in dagster_home.rglob("*.db"):
        with sqlite3.connect(path) as db:
            heads[path.name] = db.execute("select count(*) from alembic_version").fetchone()[0]
    return heads


def all_ready(openers: list[subprocess.Popen[str]], ready: list[Path]) -> None:
    """Wait until every opener has touched its ready file (none may have exited first)."""
    deadline = time.monotonic() + 300
    while not all(path.exists() for path in ready):
        exited = [opener for opener in openers if opener.poll() is not None]
        errors = [opener.communicate()[1][-2000:] for opener in exited]
        assert not exited and time.monotonic() < deadline, f"never ready: {errors}"
        time.sleep(0.01)


def test_four_processes_opening_a_fresh_instance_at_once_leave_it_whole(tmp_path):
    home, go = tmp_path / "home", tmp_path / "go"
    ready = [tmp_path / f"ready-{number}" for number in range(4)]
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_WHEN_TOLD, str(go), str(path)],
            env=environment(home),
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in ready
    ]
    all_ready(openers, ready)
    assert not (home / "dagster").exists()  # no opener went before the others
    go.touch()
    errors = [opener.communicate(timeout=300)[1] for opener in openers]
    assert [opener.returncode for opener in openers] == [0, 0, 0, 0], errors
    assert migration_heads(home / "dagster") == {"runs.db": 1, "index.db": 1, "schedules.db": 1}
    again = subprocess.run(
        [sys.executable, "-c", OPEN_WHEN_TOLD, str(go), str(tmp_path / "ready-again")],
        env=environment(home),
        check=False,
    )
    assert again.returncode == 0


def renamed_copy(folder: Path, name: str) -> Path:
    """The support-agent example under another benchmark name."""
    target = folder / name
    target.mkdir()
    for source in EXAMPLE.iterdir():
        (target / source.name).write_bytes(source.read_bytes())
    document = yaml.safe_load((target / "benchmark.yaml").read_text())
    (target / "benchmark.yaml").write_text(yaml.safe_dump({**document, "name": name}))
    return target / "benchmark.yaml"


def test_two_first_runs_at_once_both_succeed_and_a_third_works(tmp_path):
    home = tmp_path / "home"
    first, second = (renamed_copy(tmp_path, name) for name in ("agent_a", "agent_b"))
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "run"]
    runs = [
        subprocess.Popen(
            [*command, str(path)],
            env=environment(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in (first, second)
    ]
    errors = [run.communicate(timeout=600)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [error[-2000:] for error in errors]
    third = subprocess.run(
        [*command, str(first)],
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert third.returncode == 0, third.stderr[-2000:]
    assert set(migration_heads(home / "dagster").values()) == {1}
