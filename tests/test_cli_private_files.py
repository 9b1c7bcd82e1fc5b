"""Every file n8n-deepeval writes under its home is private, whatever the umask.

A home made beforehand by the user (0755) and a umask of 022 are the common case: the
results, the judge's prompts and answers, the journal, the steps and Dagster's storage
are still readable by their owner only. The report asked for elsewhere (``report --out``)
holds every answer too: it is as private as the home.
"""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE

pytestmark = pytest.mark.slow


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "N8N_DEEPEVAL_HOME": str(home), "DEEPEVAL_POOL_SIZE": "2"}
    env.pop("DAGSTER_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=lambda: os.umask(0o022),  # the usual umask: files 0644, folders 0755
    )


def readable_by_others(root: Path) -> list[str]:
    """Every file or folder under ``root`` that its group or other users may use."""
    found = []
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder, name)
            if stat.S_IMODE(path.lstat().st_mode) & 0o077:
                found.append(f"{oct(stat.S_IMODE(path.lstat().st_mode))} {path.relative_to(root)}")
    return found


def test_everything_under_a_home_made_at_0755_is_private_and_so_is_the_report_asked_for(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    benchmark = str(EXAMPLE / "benchmark.yaml")
    assert cli(home, "run", benchmark).returncode == 0
    out = tmp_path / "out"
    assert cli(home, "report", benchmark, "--out", str(out)).returncode == 0
    assert readable_by_others(home) == []
    files = [path for path in home.rglob("*") if path.is_file()]
    assert len(files) > 100  # results, journal, steps, reports, Dagster's storage and logs
    assert {"results.duckdb", "judge", "journal", "steps", "reports", "dagster"} <= {
        path.name for path in home.iterdir()
    }
    assert stat.S_IMODE(home.stat().st_mode) == 0o755  # the user's own folder keeps its mode
    # the report the user asked for, where they asked: every answer is in it, so private
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in out.iterdir()} == {
        "report.html": 0o600,
        "eval-results.json": 0o600,
        "eval-pr-comment.md": 0o600,
    }
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
