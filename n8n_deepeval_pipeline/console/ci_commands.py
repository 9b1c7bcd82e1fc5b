"""`ci`: what the GitHub Action and the GitLab template run, the same way for both.

`ci run` runs each benchmark with `n8n-deepeval run` in a process of its own, so the job
passes on the run's exit code unchanged (4 at least when its report or comparison
failed), the most severe of the benchmarks'; around it, it refuses a benchmark that could
act on the world, writes the report, the comparison and the outcome, keeps the
benchmark's one comment on the pull or merge request, and sums the runs up for the job.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.ci.run_outcome import FailedStep, RunOutcome
from n8n_deepeval_pipeline.console.exits import (
    ANY_COMMAND,
    EXIT_CODES,
    EXIT_INVALID_CONFIG,
    exit_codes_stated,
)
from n8n_deepeval_pipeline.summary.exit_codes import (
    EXIT_COMPARE_FAILED,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_RUN_FAILED,
    most_severe,
)

PLATFORMS = ("github", "gitlab")
OUTCOME_FILE = "outcome.json"
# The codes a step after `run` ends with that fail nothing: compare's verdicts (a flagged
# case, which `run` exits 5 for; no baseline yet, on a benchmark's first run).
_STEP_VERDICTS = {
    "report": (EXIT_OK,),
    "compare": (EXIT_OK, EXIT_REGRESSION, EXIT_COMPARE_FAILED),
}


@click.group()
def ci() -> None:
    """A benchmark in a team's CI: the GitHub Action's and the GitLab template's steps."""


@ci.command("paths")
def paths() -> None:
    """Print the folders a CI cache keeps between runs, as NAME=PATH lines.

    ``home`` holds the results (the baseline a pull request is compared with) and
    ``judge_state`` the judge's cache: the lines suit ``$GITHUB_OUTPUT``.
    """
    click.echo(f"home={settings.home().resolve()}")
    click.echo(f"judge_state={settings.judge_state_dir().resolve()}")


@exit_codes_stated("ci run")
@ci.command("run")
@click.argument("platform", type=click.Choice(PLATFORMS))
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--run-args", default="", help="More options for `n8n-deepeval run`.")
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("n8n-deepeval-reports"),
    show_default=True,
    help="Where each benchmark's report, run JSON, comparison and outcome are written.",
)
@click.option("--comment/--no-comment", default=True, help="Keep the benchmark's comment.")
@click.option(
    "--allow-side-effects",
    is_flag=True,
    help="Run benchmarks whose workflow calls could act on real services.",
)
@click.option(
    "--summary",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the job's summary (Markdown) here, e.g. $GITHUB_STEP_SUMMARY.",
)
def run(
    platform: str,
    files: tuple[Path, ...],
    run_args: str,
    reports: Path,
    comment: bool,
    allow_side_effects: bool,
    summary: Path | None,
) -> None:
    """Run benchmark FILES in order and exit with the most severe exit code of `run`.

    Every benchmark runs, whatever the one before exited; the job exits with the most
    severe of their codes, by the order the exit codes page gives (2 first: nothing ran).
    A benchmark whose `report` or `compare` step failed counts as 4 at least. A benchmark
    whose workflow calls could act on real services (a webhook target, a harness copy
    without `mocks: services`) stops the job before anything runs (2), unless
    --allow-side-effects.
    """
    from n8n_deepeval_pipeline.ci.run_outcome import summary_markdown

    if not allow_side_effects:
        _refuse_side_effects(files)
    outcomes = [_run_one(platform, file, run_args.split(), reports, comment) for file in files]
    if summary is not None:
        with summary.open("a", encoding="utf-8") as written:
            written.write(summary_markdown(outcomes))
    else:
        click.echo(summary_markdown(outcomes), nl=False)
    sys.exit(most_severe([outcome.job_exit_code for outcome in outcomes]))


@ci.command("comment")
@click.argument("platform", type=click.Choice(PLATFORMS))
@click.option(
    "--outcome",
    "outcome_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help=f"A run's outcome ({OUTCOME_FILE}, beside its report).",
)
def comment(platform: str, outcome_file: Path) -> None:
    """Write or update the benchmark's one comment on the pull or merge request.

    The body is the report's eval-pr-comment.md beside the outcome, after a line saying
    what `run` exited and why. The token is GITHUB_TOKEN (github) or GITLAB_TOKEN
    (gitlab, a token with the api scope); the thread is the one the CI job runs for.
    Outside a pull or merge request nothing is written.
    """
    from n8n_deepeval_pipeline.ci.run_outcome import RunOutcome

    outcome = RunOutcome.model_validate_json(outcome_file.read_text(encoding="utf-8"))
    click.echo(_commented(platform, outcome, outcome_file.parent))


def _refuse_side_effects(files: tuple[Path, ...]) -> None:
    """Refuse the job if a benchmark could act on real services (exit 2, nothing run)."""
    from n8n_deepeval_pipeline.benchmark.config import load_benchmark
    from n8n_deepeval_pipeline.ci.side_effects import acts_on_the_world
    from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
    from n8n_deepeval_pipeline.console.exits import Refused

    refused = []
    for file in files:
        try:
            why = acts_on_the_world(load_benchmark(file))
        except (BenchmarkConfigError, OSError):
            continue  # `run` says what is wrong with the file, with its own exit code
        if why is not None:
            refused.append(f"{file}: {why}")
    if refused:
        raise Refused(
            "a CI job runs unreviewed changes, and these benchmarks could act on the world "
            "(--allow-side-effects runs them anyway):\n" + "\n".join(refused),
            EXIT_INVALID_CONFIG,
        )


def _run_one(
    platform: str, file: Path, run_args: list[str], reports: Path, comment: bool
) -> RunOutcome:
    """One benchmark: run, report, compare, outcome and comment; its outcome."""
    from n8n_deepeval_pipeline.ci.run_outcome import read_run_json, run_outcome

    out = reports / str(file).replace("/", "_").replace(" ", "_")
    out.mkdir(parents=True, exist_ok=True)
    group = platform == "github"  # the Actions log folds a group
    if group:
        click.echo(f"::group::n8n-deepeval run {file}", err=True)
    code = _command(["run", str(file), "--json", *run_args], out / "run.json")
    failed = _failed_steps(
        {
            "report": _command(["report", str(file), "--out", str(out)], None),
            "compare": _command(["compare", str(file), "--json"], out / "compare.json"),
        }
    )
    if group:
        click.echo("::endgroup::", err=True)
    # A failed step is a failed run, by run's ladder: 4, unless run exited a worse code.
    job = most_severe([code, *(EXIT_RUN_FAILED for _ in failed)])
    printed = read_run_json(out / "run.json")
    outcome = run_outcome(str(file), code, _run_exit_meaning(code), printed, failed, job)
    (out / OUTCOME_FILE).write_text(outcome.model_dump_json(indent=2) + "\n", encoding="utf-8")
    steps = f"; {outcome.steps_said}" if failed else ""
    click.echo(f"{file}: run exited {code}: {outcome.why}{steps}", err=True)
    if comment:
        try:
            click.echo(_commented(platform, outcome, out), err=True)
        except click.ClickException as failed:  # the job's verdict is the run's, not this
            warning = "::warning::" if group else "warning: "
            click.echo(f"{warning}{file}: no comment written: {failed.message}", err=True)
    return outcome


def _failed_steps(codes: dict[str, int]) -> tuple[FailedStep, ...]:
    """The steps after `run` (`report`, `compare`: their exit codes) that failed."""
    return tuple(
        FailedStep(command=command, exit_code=code)
        for command, code in codes.items()
        if code not in _STEP_VERDICTS[command]
    )


def _command(args: list[str], stdout: Path | None) -> int:
    """``n8n-deepeval ARGS`` in a process of its own (stdout to a file); its exit code.

    A process killed by signal N exits 128 + N, as a shell says it (Python says -N, which
    the job could not exit with).
    """
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *args]
    if stdout is None:
        code = subprocess.run(command, stdout=subprocess.DEVNULL, check=False).returncode
    else:
        with stdout.open("wb") as printed:
            code = subprocess.run(command, stdout=printed, check=False).returncode
    return 128 - code if code < 0 else code


def _commented(platform: str, outcome: RunOutcome, report: Path) -> str:
    """Keep ``outcome``'s comment on the job's review thread; what was done, in a line."""
    from n8n_deepeval_pipeline.ci.review_threads import (
        ForgeError,
        NoReviewThread,
        github_thread,
        gitlab_thread,
    )
    from n8n_deepeval_pipeline.ci.run_outcome import comment_body
    from n8n_deepeval_pipeline.ci.sticky_comment import post_sticky

    comment_file = report / "eval-pr-comment.md"
    report_text = comment_file.read_text(encoding="utf-8") if comment_file.is_file() else None
    token_name = "GITHUB_TOKEN" if platform == "github" else "GITLAB_TOKEN"
    token = os.environ.get(token_name)
    if not token:
        raise click.ClickException(f"{token_name} is not set: no comment can be written")
    try:
        thread = (github_thread if platform == "github" else gitlab_thread)(os.environ, token)
    except NoReviewThread as nothing:
        return str(nothing)
    except ForgeError as error:
        raise click.ClickException(str(error)) from None
    try:
        posted = post_sticky(thread, outcome.file, comment_body(outcome, report_text))
    except ForgeError as error:
        raise click.ClickException(f"{thread.description}: {error}") from None
    finally:
        thread.close()
    return f"{thread.description}: comment {posted.comment_id} {posted.action}"


def _run_exit_meaning(code: int) -> str:
    """What `run`'s exit code means, in the exit-code table's words."""
    rows = [row for row in EXIT_CODES if row.code == code and "run" in row.commands]
    rows = rows or [row for row in EXIT_CODES if row.code == code and ANY_COMMAND in row.commands]
    return rows[0].when.replace("`", "") if rows else f"exit code {code}"
