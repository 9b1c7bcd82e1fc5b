"""The GitHub Action's run steps, against a loopback stand-in of GitHub's REST API.

Two pushes of a pull request run the action on the bundled example (recorded outputs,
the dry-run judge): the first version passes, the second (the example's workflow.v2)
regresses. The thread ends with one comment, written then edited; the job's exit code
is `n8n-deepeval run`'s; the job summary says why. The `uses:` steps (setup-python,
cache, upload-artifact) are JavaScript actions of other repositories and cannot run
here: the test pins which ones are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.ci.composite_action import ActionRun, run_composite_action
from tests.ci.forge_standins import GitHubStandIn
from tests.conftest import EXAMPLE, ROOT

TOKEN = "ghs_standInToken0123456789abcdef"
REPOSITORY = "acme/support-bot"
PULL_REQUEST = 7

pytestmark = pytest.mark.slow


def _installed_venv(runner_temp: Path) -> None:
    """The venv the action caches, as a cache hit leaves it: this environment's command."""
    bin_dir = runner_temp / "n8n-deepeval-venv" / "bin"
    bin_dir.mkdir(parents=True)
    command = Path(sys.executable).parent / "n8n-deepeval"
    (bin_dir / "n8n-deepeval").write_text(f'#!/bin/sh\nexec "{command}" "$@"\n')
    (bin_dir / "n8n-deepeval").chmod(0o755)


def _push(workspace: Path, api: GitHubStandIn, runner_temp: Path, summary: Path) -> ActionRun:
    event = runner_temp / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": PULL_REQUEST,
                                 "pull_request": {"number": PULL_REQUEST}}))  # fmt: skip
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(runner_temp),
        "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": api.base_url,
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(runner_temp),
    }
    return run_composite_action(
        ROOT,
        inputs={"benchmarks": "agent/benchmark.yaml"},
        github={"token": TOKEN, "action_path": str(ROOT), "head_ref": "faster-refunds",
                "base_ref": "main", "ref_name": "7/merge", "run_id": "1", "run_attempt": "1"},
        runner={"os": "Linux", "temp": str(runner_temp)},
        environ=environ,
        workspace=workspace,
    )  # fmt: skip


def test_one_sticky_comment_across_two_pushes_and_the_run_s_exit_code(tmp_path: Path) -> None:
    workspace, runner_temp = tmp_path / "workspace", tmp_path / "runner"
    shutil.copytree(EXAMPLE, workspace / "agent")
    runner_temp.mkdir()
    _installed_venv(runner_temp)
    summary = tmp_path / "summary.md"
    with GitHubStandIn(TOKEN, REPOSITORY, PULL_REQUEST) as api:
        api.comments.append({"id": 1, "body": "LGTM, but check the refunds"})  # a reviewer's
        first = _push(workspace, api, runner_temp, summary)
        assert first.outputs["benchmarks"]["exit-code"] == "0", first.logs
        assert first.exit_code == 0
        after_first = [dict(comment) for comment in api.comments]

        shutil.copy(workspace / "agent" / "workflow.v2.json", workspace / "agent" / "workflow.json")
        second = _push(workspace, api, runner_temp, summary)

    # The uses: steps are the only ones not run.
    assert first.skipped == [
        "actions/setup-python@v5",
        "actions/cache@v4",
        "actions/cache/restore@v4",
        "actions/cache/save@v4",
        "actions/upload-artifact@v4",
    ]
    # One comment of the action's, created by the first push and edited by the second.
    writes = [(r["method"], r["path"]) for r in api.requests if r["method"] != "GET"]
    thread = f"/repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments"
    assert writes[0] == ("POST", thread)
    assert writes[1][0] == "PATCH"
    assert writes[1][1] == f"/repos/{REPOSITORY}/issues/comments/{api.comments[1]['id']}"
    assert len(writes) == 2
    assert [c["id"] for c in api.comments] == [1, after_first[1]["id"]]
    assert api.comments[0]["body"] == "LGTM, but check the refunds"
    marker = "<!-- n8n-deepeval: agent/benchmark.yaml -->"
    assert after_first[1]["body"].startswith(marker)
    assert "exited 0" in after_first[1]["body"]
    edited = api.comments[1]["body"]
    assert edited.startswith(marker)
    assert "exited 5" in edited and "ord-missing" in edited
    # The job's exit code is the run's: 5, a regression against the first version.
    assert second.outputs["benchmarks"]["exit-code"] == "5"
    assert second.exit_code == 5
    assert second.steps[-1].id == "verdict" and second.steps[-1].exit_code == 5
    run_json = json.loads((workspace / "n8n-deepeval-reports" / "agent_benchmark.yaml" /
                           "run.json").read_text())  # fmt: skip
    assert run_json["outcome"]["exit_codes"]["run"] == 5
    # The job summary says why, once per push.
    said = summary.read_text()
    assert said.count("| support_agent |") == 2
    assert "✅ 0" in said
    assert "❌ 5" in said and "ord-missing, returns-policy against f7ee35b359b4" in said
    # The report is where the artifact step uploads it from.
    report = workspace / "n8n-deepeval-reports" / "agent_benchmark.yaml"
    assert {"report.html", "eval-results.json", "eval-pr-comment.md", "outcome.json"} <= {
        path.name for path in report.iterdir()
    }
    # Every call carried the token in its header; no step printed it.
    assert all(r["headers"]["Authorization"] == f"Bearer {TOKEN}" for r in api.requests)
    assert TOKEN not in first.logs + second.logs
