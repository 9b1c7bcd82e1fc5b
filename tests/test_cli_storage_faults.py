"""A full disk or a corrupt database: one line naming the file or folder, exit 4, rows kept."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE

pytestmark = pytest.mark.slow
BENCHMARK = EXAMPLE / "benchmark.yaml"
CORRUPT = (
    "Error: {}: the database is corrupt or truncated: move it aside (its rows cannot be "
    "read) and run again, or point N8N_DEEPEVAL_DUCKDB at another file"
)
NO_SPACE = (
    "Error: no space left under {}: free some space and run again (the rows stored before are kept)"
)


def environment(home: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "N8N_DEEPEVAL_HOME": str(home), "DEEPEVAL_POOL_SIZE": "2", **more}
    env.pop("DAGSTER_HOME", None)
    return env


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_truncated_or_corrupt_database_is_named_in_one_line_and_left_as_it_is(tmp_path):
    env = environment(tmp_path / "home")
    database = tmp_path / "home" / "results.duckdb"
    assert cli(env, "run", str(BENCHMARK)).returncode == 0
    whole = database.read_bytes()
    report = ["report", str(BENCHMARK), "--out", str(tmp_path / "report")]

    database.write_bytes(whole[: len(whole) // 2])
    truncated = digest(database)
    read = cli(env, *report)
    assert (read.returncode, read.stderr) == (4, CORRUPT.format(database) + "\n")
    assert digest(database) == truncated  # reading it wrote nothing over what is left
    run = cli(env, "run", str(BENCHMARK))
    assert run.returncode == 4
    assert run.stderr.splitlines()[-1] == CORRUPT.format(database)

    database.write_bytes(os.urandom(4096) + whole[4096:])  # a header that is not DuckDB's
    read = cli(env, *report)
    assert (read.returncode, read.stderr) == (4, CORRUPT.format(database) + "\n")


def test_a_truncated_database_is_named_before_run_or_backfill_start_anything(tmp_path):
    env = environment(tmp_path / "home")
    database = tmp_path / "home" / "results.duckdb"
    assert cli(env, "run", str(BENCHMARK)).returncode == 0
    whole = database.read_bytes()
    assert len(whole) > 100_000
    for size in (0, 1000, 100_000):
        database.write_bytes(whole[:size])
        for command in ("run", "backfill"):
            done = cli(env, command, str(BENCHMARK))
            # one line, before any step: Dagster's connect retried the file for ~100 s
            assert (done.returncode, done.stderr) == (4, CORRUPT.format(database) + "\n"), size
        assert database.read_bytes() == whole[:size]  # looked at, never written


# Run in a mount namespace of its own: its small tmpfs folders exist for it alone.
FULL_DISKS = """
set -u
mount -t tmpfs -o size=40m tmpfs "$DB_DIR"
mount -t tmpfs -o size=1m tmpfs "$FULL_HOME"
run() { "$PYTHON" -m n8n_deepeval_pipeline.cli run "$BENCHMARK"; }
run >/dev/null 2>&1; echo "first=$?"
dd if=/dev/zero of="$DB_DIR/filler" bs=1M count=64 2>/dev/null
run >/dev/null 2>"$OUT/second.err"; echo "second=$?"
rm "$DB_DIR/filler"
"$PYTHON" -c "import duckdb, sys
rows = duckdb.connect(sys.argv[1], read_only=True).execute(
    'select count(*) from support_agent.metric_scores').fetchone()[0]
print(f'rows={rows}')" "$DB_DIR/results.duckdb"
dd if=/dev/zero of="$FULL_HOME/filler" bs=1M count=8 2>/dev/null
N8N_DEEPEVAL_HOME="$FULL_HOME/home" N8N_DEEPEVAL_DUCKDB= run >/dev/null 2>"$OUT/fresh.err"
echo "fresh=$?"
"""


def own_mount_namespace() -> list[str]:
    """The command that runs another in a mount namespace of its own (skips without one)."""
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    except FileNotFoundError:
        pytest.skip("no unshare command: a small disk to fill cannot be made")
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here: {probe.stderr.decode().strip()}")
    return prefix


def test_a_full_disk_is_named_in_one_line_exits_4_and_keeps_the_rows(tmp_path):
    prefix = own_mount_namespace()
    folders = {name: tmp_path / name for name in ("db", "full_home", "out")}
    for folder in folders.values():
        folder.mkdir()
    env = environment(
        tmp_path / "home",
        N8N_DEEPEVAL_DUCKDB=str(folders["db"] / "results.duckdb"),
        DB_DIR=str(folders["db"]),
        FULL_HOME=str(folders["full_home"]),
        OUT=str(folders["out"]),
        PYTHON=sys.executable,
        BENCHMARK=str(BENCHMARK),
    )
    done = subprocess.run(
        [*prefix, "bash", "-c", FULL_DISKS],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    outcome = dict(line.split("=", 1) for line in done.stdout.split())
    assert outcome == {"first": "0", "second": "4", "rows": "189", "fresh": "4"}, done.stderr
    # the database's disk is full: its folder is named, and the first run's rows are whole
    second = (folders["out"] / "second.err").read_text()
    assert second.splitlines()[-1] == NO_SPACE.format(folders["db"])
    # a fresh home on a full disk: the Dagster instance cannot even be created
    fresh = (folders["out"] / "fresh.err").read_text()
    assert fresh == NO_SPACE.format(folders["full_home"] / "home") + "\n"


# A home whose disk fills up to a few hundred KB to ~2 MB short of full: Dagster's storage
# still opens, and a write of its event log fails half-way through the run.
NEARLY_FULL = """
set -u
mount -t tmpfs -o size=60m tmpfs "$HOME_DISK"
export N8N_DEEPEVAL_HOME="$HOME_DISK/home"
run() { "$PYTHON" -m n8n_deepeval_pipeline.cli run "$BENCHMARK"; }
run >/dev/null 2>&1; echo "first=$?"
for left in 2000 500; do
  rm -f "$HOME_DISK/filler"
  free=$(df -k --output=avail "$HOME_DISK" | tail -1)
  dd if=/dev/zero of="$HOME_DISK/filler" bs=1K count=$((free - left)) 2>/dev/null
  run >/dev/null 2>"$OUT/left$left.err"; echo "left$left=$?"
done
"""


def test_a_disk_that_fills_during_a_run_is_said_in_the_projects_one_line_only(tmp_path):
    prefix = own_mount_namespace()
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    env = environment(
        tmp_path / "unused", HOME_DISK=str(disk), OUT=str(out), PYTHON=sys.executable,
        BENCHMARK=str(BENCHMARK),
    )  # fmt: skip
    done = subprocess.run(
        [*prefix, "bash", "-c", NEARLY_FULL],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    outcome = dict(line.split("=", 1) for line in done.stdout.split())
    assert outcome == {"first": "0", "left2000": "4", "left500": "4"}, done.stderr
    for left in (2000, 500):
        said = (out / f"left{left}.err").read_text().splitlines()
        # no Dagster "Exception while writing logger call …" nor sqlalche.me link before it
        assert said[-1] == NO_SPACE.format(disk / "home"), said
        assert said[:-1] in ([], ["running support_agent for workflow f7ee35b359b4 …"]), said
