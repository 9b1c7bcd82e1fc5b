"""`ci run`'s exit code: the most severe of its benchmarks', a failed report or compare too.

The commands `ci run` starts are a stand-in here: each test says what `run`, `report` and
`compare` exit with for each benchmark, as their processes would.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.console import ci_commands


@pytest.fixture
def step_codes(monkeypatch) -> dict[tuple[str, str], int]:
    """What each command exits with, by (command, benchmark file); 0 unless a test says."""
    codes: dict[tuple[str, str], int] = {}

    def command_stand_in(args: list[str], stdout: Path | None) -> int:
        if stdout is not None:
            stdout.write_text("")  # it printed no JSON (the outcome reads the code alone)
        return codes.get((args[0], args[1]), 0)

    monkeypatch.setattr(ci_commands, "_command", command_stand_in)
    return codes


def _ci_run(tmp_path: Path, *files: str):
    reports = tmp_path / "reports"
    options = ["--no-comment", "--allow-side-effects", "--reports", str(reports)]
    done = CliRunner().invoke(main, ["ci", "run", "gitlab", *files, *options])
    return done, reports


def test_the_job_exits_with_the_most_severe_code_not_the_first(tmp_path, step_codes):
    step_codes.update({("run", "a.yaml"): 5, ("run", "b.yaml"): 3, ("run", "c.yaml"): 1})
    done, _ = _ci_run(tmp_path, "a.yaml", "b.yaml", "c.yaml")
    assert done.exit_code == 3, done.output  # incomplete outranks a regression
    step_codes[("run", "c.yaml")] = 2  # an invalid file: nothing of it ran
    assert _ci_run(tmp_path, "a.yaml", "b.yaml", "c.yaml")[0].exit_code == 2


def test_a_failed_report_fails_a_run_that_passed(tmp_path, step_codes):
    step_codes[("report", "a.yaml")] = 4  # a full disk while it wrote the report
    done, reports = _ci_run(tmp_path, "a.yaml")
    assert done.exit_code == 4, done.output
    said = "a.yaml: run exited 0: every asset materialised, and none of the reasons below; "
    assert f"{said}`report` exited 4: the job fails with 4" in done.stderr
    assert "| a.yaml |  |  |  | ❌ 4 |" in done.stdout
    assert '"command": "report"' in (reports / "a.yaml" / "outcome.json").read_text()


def test_a_failed_compare_outranks_a_regression(tmp_path, step_codes):
    step_codes.update({("run", "a.yaml"): 5, ("compare", "a.yaml"): 137})
    done, _ = _ci_run(tmp_path, "a.yaml")
    assert done.exit_code == 4, done.output  # a failed step is a failed run, above 5
    assert "`compare` exited 137: the job fails with 4" in done.stderr


def test_compare_s_verdicts_fail_nothing_and_a_failed_run_keeps_its_code(tmp_path, step_codes):
    # a first run has no baseline (compare exits 2); a flagged case is run's 5, said once
    step_codes.update({("compare", "a.yaml"): 2, ("compare", "b.yaml"): 1})
    done, _ = _ci_run(tmp_path, "a.yaml", "b.yaml")
    assert done.exit_code == 0, done.output
    assert "exited" not in done.stderr.replace("run exited 0", "")
    # n8n out of reach: nothing to report or compare, and the job says 8, not 4
    step_codes.update({("run", "a.yaml"): 8, ("report", "a.yaml"): 2})
    assert _ci_run(tmp_path, "a.yaml")[0].exit_code == 8


def test_a_step_killed_by_a_signal_exits_as_a_shell_says_it(tmp_path, monkeypatch):
    def killed(command, **options):
        return subprocess.CompletedProcess(command, -9)  # SIGKILL: Python says -9

    monkeypatch.setattr(ci_commands.subprocess, "run", killed)
    assert ci_commands._command(["run", "a.yaml"], tmp_path / "run.json") == 137
    assert ci_commands._command(["report", "a.yaml"], None) == 137
