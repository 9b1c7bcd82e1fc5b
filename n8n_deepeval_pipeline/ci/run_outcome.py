"""What a CI job says of one benchmark run: read from ``run --json`` and its exit code.

The job keeps ``n8n-deepeval run``'s exit code as it is, unless a step after it
(``report``, ``compare``) failed: the job then exits 4 at least (``ci run`` decides). This
module only reads the JSON the run printed to say *why* (the gate, incompleteness, the
pass rate) in the job's summary and the comment. ``run_outcome`` is the one place that
knows that JSON's shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict


class FailedStep(BaseModel):
    """A step after ``run`` that failed (``report``, ``compare``): what it wrote is missing."""

    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int


class RunOutcome(BaseModel):
    """One benchmark's run as the CI job reports it."""

    model_config = ConfigDict(frozen=True)

    file: str
    """The benchmark file the job ran (its comment's key)."""
    benchmark: str
    """The benchmark's name (the file's, when the run printed nothing)."""
    exit_code: int
    """``run``'s own exit code."""
    why: str
    """What the exit code means, and the run's own reason when it gave one."""
    failed_steps: tuple[FailedStep, ...] = ()
    job_exit_code: int
    """What the job exits with for this benchmark: ``run``'s code, or a failed step's."""
    version: str | None = None
    """The workflow version's key (12 hex), when the run got that far."""
    runs: int | None = None
    pass_rate: float | None = None
    baseline: str | None = None
    flagged_cases: tuple[str, ...] = ()
    cost_usd: float | None = None

    @property
    def passed(self) -> bool:
        """The job passes on this benchmark: ``run`` exited 0 and every step after it did."""
        return self.job_exit_code == 0

    @property
    def steps_said(self) -> str:
        """The steps after ``run`` that failed, in a sentence ('' when none did)."""
        failed = ", ".join(
            f"`{step.command}` exited {step.exit_code}" for step in self.failed_steps
        )
        return f"{failed}: the job fails with {self.job_exit_code}" if failed else ""


def read_run_json(path: Path) -> dict[str, Any] | None:
    """The JSON ``run --json`` printed, or None when it printed none (it stopped early)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return None
    return document if isinstance(document, dict) else None


def run_outcome(
    file: str,
    exit_code: int,
    meaning: str,
    document: dict[str, Any] | None,
    failed: tuple[FailedStep, ...] = (),
    job_exit_code: int | None = None,
) -> RunOutcome:
    """The outcome of benchmark ``file``'s run: its exit code, what it means, the JSON it printed.

    The exit code is the run's: it is never recomputed here. ``meaning`` is the exit-code
    table's word for it. The JSON adds the version, the pass rate, the gate's flagged
    cases and baseline, and why a run is incomplete. ``failed``: the steps after the run
    that failed, and ``job_exit_code`` what the job exits with for them (default: the run's).
    """
    job = exit_code if job_exit_code is None else job_exit_code
    if document is None:
        return RunOutcome(
            file=file,
            benchmark=file,
            exit_code=exit_code,
            why=meaning,
            failed_steps=failed,
            job_exit_code=job,
        )
    # The version's outcome (summary.outcome); a workflow run with its variants prints each
    # version's, the workflow's first.
    printed = document.get("outcome") or {}
    members = printed.get("members") or [printed]
    gate = members[0].get("gate") or {}
    incomplete = next(
        (member["incomplete"]["text"] for member in members if member.get("incomplete")), None
    )
    why = f"{meaning}: {incomplete}" if incomplete else meaning
    workflow_hash = document.get("workflow_hash")
    return RunOutcome(
        file=file,
        benchmark=str(document.get("benchmark") or file),
        exit_code=exit_code,
        why=why,
        version=workflow_hash[:12] if isinstance(workflow_hash, str) else None,
        runs=document.get("runs"),
        pass_rate=document.get("pass_rate"),
        baseline=gate.get("baseline"),
        flagged_cases=tuple(gate.get("flagged_cases") or ()),
        cost_usd=document.get("cost_usd"),
        failed_steps=failed,
        job_exit_code=job,
    )


def summary_markdown(outcomes: list[RunOutcome]) -> str:
    """The job summary's section (``$GITHUB_STEP_SUMMARY``): a line per benchmark."""
    lines = [
        "| benchmark | version | runs | pass rate | exit | why |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for outcome in outcomes:
        rate = "" if outcome.pass_rate is None else f"{outcome.pass_rate:.1%}"
        mark = "✅" if outcome.passed else "❌"
        why = outcome.why
        if outcome.flagged_cases:
            why += f" ({', '.join(outcome.flagged_cases)} against {outcome.baseline})"
        if outcome.failed_steps:
            why += f"; {outcome.steps_said}"
        lines.append(
            f"| {outcome.benchmark} | {outcome.version or ''} | {outcome.runs or ''} | {rate} "
            f"| {mark} {outcome.job_exit_code} | {_cell(why)} |"
        )
    return "\n".join(lines) + "\n"


def comment_body(outcome: RunOutcome, report_comment: str | None) -> str:
    """The pull request's comment: the run's verdict line, then the report's comment.

    Without a report (the run stopped before storing a version) the line says so.
    """
    mark = "✅" if outcome.passed else "❌"
    line = f"{mark} `n8n-deepeval run {outcome.file}` exited {outcome.exit_code}: {outcome.why}"
    if outcome.failed_steps:
        line += f"; {outcome.steps_said}"
    if report_comment is None:
        return f"{line}\n\nNo report: the run stored no version to report on.\n"
    return f"{line}\n\n{report_comment}"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")
