"""scripts/example.sh runs the example, whose `run` says where its report is (set-up stubbed).

The script sources scripts/bootstrap.sh, which installs the project; here a stand-in that
only puts this environment's interpreter first on PATH takes its place, in a copy.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_example_prints_its_summary_then_where_its_report_is(tmp_path):
    sandbox = tmp_path / "clone"
    (sandbox / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "example.sh", sandbox / "scripts" / "example.sh")
    shutil.copytree(ROOT / "examples", sandbox / "examples")
    bin_dir = Path(sys.executable).parent
    (sandbox / "scripts" / "bootstrap.sh").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DEEPEVAL_POOL_SIZE": "2"}
    for name in ("N8N_DEEPEVAL_HOME", "DAGSTER_HOME"):
        env.pop(name, None)
    done = subprocess.run(
        ["bash", str(sandbox / "scripts" / "example.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("benchmark support_agent · workflow f7ee35b359b4\n")
    report = ".n8n-deepeval/reports/support_agent/f7ee35b359b4/report.html"
    assert done.stdout.endswith(
        f"\n\nreport: {report} (open it in a browser; eval-results.json and "
        "eval-pr-comment.md beside it)\n"
    )
    assert (sandbox / report).is_file()  # relative to the clone, where the script runs
