"""The GitLab CI template's script, against a loopback stand-in of GitLab's notes API.

The job's `script:` runs as a GitLab runner runs it (one bash session, `-eo pipefail`)
with a merge request pipeline's variables, twice: one note of the job's, written then
edited (GitLab's own system notes left alone), and the job's exit code `run`'s own.
The `cache:` and `artifacts:` keywords are the runner's and cannot run here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.ci.composite_action import run_script
from tests.ci.forge_standins import GitLabStandIn
from tests.conftest import EXAMPLE, ROOT

TEMPLATE = ROOT / "templates" / "gitlab" / "n8n-deepeval.gitlab-ci.yml"
TOKEN = "glpat-standInToken0123456789"
PROJECT, IID = "42", 3

pytestmark = pytest.mark.slow


def _job(project: Path, api: GitLabStandIn) -> subprocess.CompletedProcess[str]:
    job = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))[".n8n-deepeval"]
    variables = {name: str(value) for name, value in job["variables"].items()}
    variables |= {
        "N8N_DEEPEVAL_CI_PACKAGE": "n8n-deepeval-pipeline (installed by the test)",
        "N8N_DEEPEVAL_CI_BENCHMARKS": "agent/benchmark.yaml",
    }
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(project.parent),
        "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_API_V4_URL": f"{api.base_url}/api/v4",
        "CI_PROJECT_ID": PROJECT,
        "CI_MERGE_REQUEST_IID": str(IID),
        "CI_COMMIT_REF_SLUG": "faster-refunds",
        "GITLAB_TOKEN": TOKEN,
        **variables,
    }
    return run_script("\n".join(job["script"]), project, environ)


def _installed_venv(project: Path) -> None:
    """The cached venv, as the cache leaves it: this environment's command, its pin."""
    venv = project / ".n8n-deepeval-venv"
    (venv / "bin").mkdir(parents=True)
    command = Path(sys.executable).parent / "n8n-deepeval"
    (venv / "bin" / "n8n-deepeval").write_text(f'#!/bin/sh\nexec "{command}" "$@"\n')
    (venv / "bin" / "n8n-deepeval").chmod(0o755)
    (venv / ".package").write_text("n8n-deepeval-pipeline (installed by the test)\n")


def test_one_merge_request_note_across_two_pushes_and_the_run_s_exit_code(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project / "agent")
    _installed_venv(project)
    with GitLabStandIn(TOKEN, PROJECT, IID) as api:
        api.add_system_note("added 1 commit")
        first = _job(project, api)
        assert first.returncode == 0, first.stderr
        first_note = dict(api.comments[1])
        shutil.copy(project / "agent" / "workflow.v2.json", project / "agent" / "workflow.json")
        second = _job(project, api)

    assert second.returncode == 5, second.stderr
    notes = f"/api/v4/projects/{PROJECT}/merge_requests/{IID}/notes"
    writes = [(r["method"], r["path"]) for r in api.requests if r["method"] != "GET"]
    assert writes == [("POST", notes), ("PUT", f"{notes}/{first_note['id']}")]
    assert [note["id"] for note in api.comments] == [api.comments[0]["id"], first_note["id"]]
    assert api.comments[0]["body"] == "added 1 commit"
    marker = "<!-- n8n-deepeval: agent/benchmark.yaml -->"
    assert first_note["body"].startswith(marker) and "exited 0" in first_note["body"]
    assert api.comments[1]["body"].startswith(marker)
    assert "exited 5" in api.comments[1]["body"]
    # The summary table is the job's log; the reports are where artifacts: takes them.
    assert "| support_agent |" in second.stdout and "❌ 5" in second.stdout
    reports = project / "n8n-deepeval-reports" / "agent_benchmark.yaml"
    assert (reports / "eval-pr-comment.md").is_file()
    assert all(r["headers"]["PRIVATE-TOKEN"] == TOKEN for r in api.requests)
    assert TOKEN not in first.stdout + first.stderr + second.stdout + second.stderr
