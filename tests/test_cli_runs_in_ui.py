"""CLI runs as the UI sees them: on their job's page, a regression a verdict, dead runs failed."""

import os
import subprocess
import sys

import dagster as dg
import pytest
from click.testing import CliRunner
from dagster._cli.workspace.cli_target import WorkspaceOpts, workspace_opts_to_load_target
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.orchestration.assets import VERDICT_TAG
from n8n_deepeval_pipeline.orchestration.code_location import DEFINITIONS_MODULE
from n8n_deepeval_pipeline.orchestration.run_owner import HOST_TAG, PID_TAG, owner_tags
from tests.test_cli import cli_home  # noqa: F401  (a fixture)

JOB = "support_agent__benchmark"
pytestmark = pytest.mark.slow


def ui_location():
    """The code location `dagster dev -m …` loads, as its own command line builds it."""
    target = workspace_opts_to_load_target(WorkspaceOpts(module_name=(DEFINITIONS_MODULE,)))
    (origin,) = target.create_origins()
    return origin


def test_a_cli_run_is_on_its_job_page_and_a_regression_is_a_verdict(
    example_copy,
    cli_home,  # noqa: F811
):
    runner = CliRunner()
    assert runner.invoke(main, ["run", str(example_copy)]).exit_code == 0
    workflow = example_copy.parent / "workflow.json"
    workflow.write_text((example_copy.parent / "workflow.v2.json").read_text())
    second = runner.invoke(main, ["run", str(example_copy)])
    assert second.exit_code == 5
    # said once, as a verdict: no Dagster error and its stack trace
    assert second.stderr.count("likely_regression against baseline f7ee35b359b4: ") == 1
    assert "DagsterAssetCheckFailedError" not in second.output
    assert "Stack Trace" not in second.output
    location = ui_location()
    with dg.DagsterInstance.get() as instance:
        # the UI's job page asks for the job's runs with its repository's label
        label = f"__repository__@{location.location_name}"
        runs = instance.get_runs(dg.RunsFilter(job_name=JOB, tags={REPOSITORY_LABEL_TAG: label}))
    assert len(runs) == 2
    # newest first: the regressed version's run fails on its verdict, tagged so; the first
    # passed (both were successes before, the regression green in the runs list)
    assert [run.status for run in runs] == [
        dg.DagsterRunStatus.FAILURE,
        dg.DagsterRunStatus.SUCCESS,
    ]
    assert [run.tags[VERDICT_TAG] for run in runs] == ["regressed", "passed"]
    for run in runs:
        assert run.remote_job_origin.job_name == JOB
        assert run.remote_job_origin.repository_origin.code_location_origin == location
        assert run.tags["dagster/partition"] in ("f7ee35b359b4", "f7b1504dcb09")


def test_a_run_whose_cli_was_killed_is_failed_at_the_next_cli_start(
    example_copy,
    cli_home,  # noqa: F811
):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    runner = CliRunner()
    assert runner.invoke(main, ["run", str(example_copy)]).exit_code == 0
    with dg.DagsterInstance.get() as instance:
        (done,) = instance.get_runs()
        tags = {**owner_tags(), PID_TAG: str(gone.pid)}
        killed = dg.DagsterRun(job_name=JOB, status=dg.DagsterRunStatus.STARTED, tags=tags)
        instance.add_run(killed)
        alive = {**owner_tags(), PID_TAG: str(os.getpid())}
        running = dg.DagsterRun(job_name=JOB, status=dg.DagsterRunStatus.STARTED, tags=alive)
        instance.add_run(running)
        elsewhere = {**tags, HOST_TAG: "another-host"}
        other = dg.DagsterRun(job_name=JOB, status=dg.DagsterRunStatus.STARTED, tags=elsewhere)
        instance.add_run(other)
    assert (
        runner.invoke(main, ["backfill", str(example_copy), "--from", "run_aggregates"]).exit_code
        == 0
    )
    with dg.DagsterInstance.get() as instance:
        status = {run.run_id: run.status for run in instance.get_runs()}
        (failure,) = instance.all_logs(killed.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert status[killed.run_id] == dg.DagsterRunStatus.FAILURE
    assert f"pid {gone.pid}) ended without finishing it" in failure.dagster_event.message
    assert status[running.run_id] == dg.DagsterRunStatus.STARTED  # its process is alive
    assert status[other.run_id] == dg.DagsterRunStatus.STARTED  # not this machine's to judge
    assert status[done.run_id] == dg.DagsterRunStatus.SUCCESS
