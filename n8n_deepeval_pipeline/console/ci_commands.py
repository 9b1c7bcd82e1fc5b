"""`ci`: what the GitHub Action and the GitLab template run around `n8n-deepeval run`.

The templates call `run` themselves and pass its exit code on unchanged; these commands
do the rest: refuse a benchmark that would act on the world, read what the run printed,
write the sticky comment on the pull or merge request, and sum the runs up for the job.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.console import benchmarks
from n8n_deepeval_pipeline.console.exits import ANY_COMMAND, EXIT_CODES


@click.group()
def ci() -> None:
    """A benchmark in a team's CI: sticky comment, job summary (the Action and template)."""


@ci.command("paths")
def paths() -> None:
    """Print the folders a CI cache keeps between runs, as NAME=PATH lines.

    ``home`` holds the results (the baseline a pull request is compared with) and
    ``judge_state`` the judge's cache: the lines suit ``$GITHUB_OUTPUT``.
    """
    click.echo(f"home={settings.home().resolve()}")
    click.echo(f"judge_state={settings.judge_state_dir().resolve()}")


@ci.command("check")
@click.argument("files", nargs=-1, required=True, type=benchmarks.EXISTING_FILE)
def check(files: tuple[Path, ...]) -> None:
    """Refuse benchmark FILES whose runs could act on real services (exit 1)."""
    from n8n_deepeval_pipeline.benchmark.config import load_benchmark
    from n8n_deepeval_pipeline.ci.side_effects import acts_on_the_world
    from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError

    refused = []
    for file in files:
        try:
            why = acts_on_the_world(load_benchmark(file))
        except BenchmarkConfigError:
            continue  # `run` says what is wrong with the file, with its own exit code
        if why is not None:
            refused.append(f"{file}: {why}")
    if refused:
        raise click.ClickException(
            "a CI job runs unreviewed changes; these benchmarks could act on the world:\n"
            + "\n".join(refused)
        )


@ci.command("outcome")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--exit-code", type=int, required=True, help="What `n8n-deepeval run` exited.")
@click.option(
    "--run-json",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="What `n8n-deepeval run FILE --json` printed (missing or empty: it stopped early).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to write the outcome (JSON), for `ci comment` and `ci summary`.",
)
def outcome(file: Path, exit_code: int, run_json: Path, out: Path) -> None:
    """Write the outcome of benchmark FILE's run: its exit code and why, from its JSON."""
    from n8n_deepeval_pipeline.ci.run_outcome import read_run_json, run_outcome

    result = run_outcome(
        str(file), exit_code, _run_exit_meaning(exit_code), read_run_json(run_json)
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    click.echo(f"{file}: exit {exit_code}: {result.why}", err=True)


@ci.command("comment")
@click.argument("platform", type=click.Choice(["github", "gitlab"]))
@click.option(
    "--outcome",
    "outcome_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The run's outcome (`ci outcome --out`).",
)
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
    help="The report's folder (`report --out`), whose eval-pr-comment.md is the comment. "
    "Default: the outcome's folder.",
)
def comment(platform: str, outcome_file: Path, report: Path | None) -> None:
    """Write or update the benchmark's one comment on the pull or merge request.

    The token is GITHUB_TOKEN (github) or GITLAB_TOKEN (gitlab, a token with the api
    scope); the thread is the one the CI job runs for. Outside a pull or merge request
    nothing is written.
    """
    from n8n_deepeval_pipeline.ci.review_threads import (
        ForgeError,
        NoReviewThread,
        github_thread,
        gitlab_thread,
    )
    from n8n_deepeval_pipeline.ci.run_outcome import RunOutcome, comment_body
    from n8n_deepeval_pipeline.ci.sticky_comment import post_sticky

    result = RunOutcome.model_validate_json(outcome_file.read_text(encoding="utf-8"))
    comment_file = (report or outcome_file.parent) / "eval-pr-comment.md"
    report_text = comment_file.read_text(encoding="utf-8") if comment_file.is_file() else None
    token_name = "GITHUB_TOKEN" if platform == "github" else "GITLAB_TOKEN"
    token = os.environ.get(token_name)
    if not token:
        raise click.ClickException(f"{token_name} is not set: no comment can be written")
    try:
        thread = (github_thread if platform == "github" else gitlab_thread)(os.environ, token)
    except NoReviewThread as nothing:
        click.echo(str(nothing), err=True)
        return
    try:
        posted = post_sticky(thread, result.file, comment_body(result, report_text))
    except ForgeError as error:
        raise click.ClickException(f"{thread.description}: {error}") from None
    finally:
        thread.close()
    click.echo(f"{thread.description}: comment {posted.comment_id} {posted.action}")


@ci.command("summary")
@click.argument(
    "outcomes",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
def summary(outcomes: tuple[Path, ...]) -> None:
    """Print the job's summary (Markdown) of the runs' OUTCOMES, for $GITHUB_STEP_SUMMARY."""
    from n8n_deepeval_pipeline.ci.run_outcome import RunOutcome, summary_markdown

    read = [RunOutcome.model_validate_json(path.read_text(encoding="utf-8")) for path in outcomes]
    click.echo(summary_markdown(read), nl=False)


def _run_exit_meaning(code: int) -> str:
    """What `run`'s exit code means, in the exit-code table's words."""
    rows = [row for row in EXIT_CODES if row.code == code and "run" in row.commands]
    rows = rows or [row for row in EXIT_CODES if row.code == code and ANY_COMMAND in row.commands]
    return rows[0].when.replace("`", "") if rows else f"exit code {code}"
