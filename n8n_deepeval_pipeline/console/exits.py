"""The exit codes of the commands, and the one-line refusals that carry them."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import click
from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.summary.exit_codes import (  # what a version's outcome decides
    EXIT_BELOW_FAIL_UNDER as EXIT_BELOW_FAIL_UNDER,
)
from n8n_deepeval_pipeline.summary.exit_codes import (
    EXIT_BREACH_OVER_FAIL_ON as EXIT_BREACH_OVER_FAIL_ON,
)
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_COMPARE_FAILED as EXIT_COMPARE_FAILED
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_INCOMPLETE as EXIT_INCOMPLETE
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_INVALID_CONFIG as EXIT_INVALID_CONFIG
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_N8N_UNREACHABLE as EXIT_N8N_UNREACHABLE
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_NEW_BREACH as EXIT_NEW_BREACH
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_REGRESSION as EXIT_REGRESSION
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_RUN_FAILED as EXIT_RUN_FAILED
from n8n_deepeval_pipeline.summary.exit_codes import EXIT_RUN_REGRESSION as EXIT_RUN_REGRESSION
from n8n_deepeval_pipeline.summary.exit_codes import RUN_EXIT_LADDER as RUN_EXIT_LADDER

EXIT_NOT_ADOPTED = 1  # optimize: the best candidate did not prove better on the held-out rows
# click's own: a ClickException said in one line, and a usage error.
EXIT_ERROR = 1
EXIT_USAGE = 2


class ExitCode(BaseModel):
    """What an exit code of some commands means (Markdown: `code` spans)."""

    model_config = ConfigDict(frozen=True)

    code: int
    commands: tuple[str, ...]
    when: str


ANY_COMMAND = "any command"
# The table the commands' help, the README and the docs' reference page all show.
EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(
        code=0, commands=("run",), when="every asset materialised, and none of the reasons below"
    ),
    ExitCode(
        code=EXIT_BELOW_FAIL_UNDER,
        commands=("run",),
        when="the run pass rate is below `--fail-under`",
    ),
    ExitCode(
        code=EXIT_INVALID_CONFIG,
        commands=("run",),
        when="the benchmark file, or a file it points to, is invalid (a dataset with no row "
        "or whose `filters` match none among them)",
    ),
    ExitCode(
        code=EXIT_INCOMPLETE,
        commands=("run", "backfill"),
        when="incomplete (for `backfill`, a version is; with variants, any of them): a judge "
        "outage (unless `--max-error-rate` is given), or more than `--max-error-rate` "
        "(default `checks.maxErrorRate`, 5%) of the workflow calls failed, of the scores "
        "have no judgement or of the red team's attack runs errored (the last line of "
        "stderr names each one over the limit)",
    ),
    ExitCode(
        code=EXIT_RUN_FAILED,
        commands=("run", "backfill", "compare", "report"),
        when="the run itself failed (a step raised), or storage failed: a full disk or a "
        "corrupt database, said in one line",
    ),
    ExitCode(
        code=EXIT_RUN_REGRESSION,
        commands=("run",),
        when="a case has the verdict `compare.failOn` (or a surer one) against the previous "
        "version (of the workflow itself: a variant worse than the workflow fails nothing)",
    ),
    ExitCode(
        code=EXIT_BREACH_OVER_FAIL_ON,
        commands=("run",),
        when="a vulnerability's breach rate is above `redTeam.failOn` (the red team; of the "
        "workflow itself, as for 5)",
    ),
    ExitCode(
        code=EXIT_NEW_BREACH,
        commands=("run",),
        when="a vulnerability breaches more than in the previous version (the "
        "`no_new_breach` check, at `compare.failOn`'s tier; of the workflow itself)",
    ),
    ExitCode(
        code=EXIT_REGRESSION,
        commands=("compare",),
        when="a case has the verdict `compare.failOn` (or a surer one); never with `--variants`",
    ),
    ExitCode(
        code=EXIT_COMPARE_FAILED,
        commands=("compare", "report"),
        when="the comparison cannot run (a version unknown or not run; with `--variants`, "
        "no variant of it scored)",
    ),
    ExitCode(
        code=EXIT_NOT_ADOPTED,
        commands=("optimize",),
        when="no candidate was adopted: none beat the workflow's prompt on the training rows, "
        "or the best one did not prove better on the held-out rows (`optimize.adoptWhen`)",
    ),
    ExitCode(
        code=EXIT_INVALID_CONFIG,
        commands=("optimize",),
        when="the benchmark file is invalid, its target is no n8n workflow (or it simulates "
        "conversations), the prompt's node or parameter is not found, or its dataset has "
        "too few rows to hold some out",
    ),
    ExitCode(
        code=EXIT_RUN_FAILED,
        commands=("optimize",),
        when="the optimiser's process failed (its exit code and last lines), a held-out run "
        "failed, the variant cannot be added without rewriting the file (the entry to add is "
        "printed), or storage failed",
    ),
    ExitCode(
        code=EXIT_INVALID_CONFIG,
        commands=("ci run",),
        when="a benchmark's workflow calls could act on real services (a webhook target, a "
        "harness copy without `mocks: services`): nothing ran (`--allow-side-effects` runs "
        "it); any other code is the most severe of its benchmarks' `run` codes",
    ),
    ExitCode(
        code=EXIT_RUN_FAILED,
        commands=("ci run",),
        when="a benchmark's `report` or `compare` step failed (unless its `run` exited a "
        "more severe code): the job's summary and comment say which step exited what",
    ),
    ExitCode(code=EXIT_ERROR, commands=("validate",), when="a benchmark file is invalid"),
    ExitCode(
        code=EXIT_INVALID_CONFIG,
        commands=("ui",),
        when="a benchmark file it loads is invalid, or two share a name: nothing is started",
    ),
    ExitCode(
        code=EXIT_ERROR,
        commands=("init",),
        when="the workflow cannot be read, or the benchmark written does not validate",
    ),
    ExitCode(
        code=EXIT_ERROR,
        commands=("dataset from-executions",),
        when="the executions gave no row: nothing is written",
    ),
    ExitCode(
        code=EXIT_ERROR,
        commands=("dataset synthesize",),
        when="the synthesizer made no row, or n8n failed: nothing is written",
    ),
    ExitCode(
        code=EXIT_INVALID_CONFIG,
        commands=("dataset synthesize",),
        when="an invalid option, or a source, contexts, documents or dataset file that "
        "does not read",
    ),
    ExitCode(
        code=EXIT_INCOMPLETE,
        commands=("dataset synthesize",),
        when="the judge failed (what it cost is still the last line)",
    ),
    ExitCode(
        code=EXIT_RUN_FAILED,
        commands=("dataset synthesize",),
        when="the synthesis process itself failed (its last line is quoted)",
    ),
    ExitCode(
        code=EXIT_ERROR,
        commands=("labels export", "review"),
        when="no judged score is left to label (every one is labelled by the reviewer, or the "
        "scores are dry-run placeholders): nothing is written",
    ),
    ExitCode(
        code=EXIT_ERROR,
        commands=("labels import",),
        when="a row names an unknown run or metric, or a label that does not read: nothing is "
        "imported (each problem with its line, or Data Table row, and field)",
    ),
    ExitCode(
        code=EXIT_ERROR,
        commands=("calibration",),
        when="`--adopt` cannot write a threshold (none fitted, strictMode pins it, fewer than "
        "10 labels of either verdict, or it agrees no better than the configured one), or "
        "`--align` writes no metric (the metric has no text to rewrite, its labels cannot "
        "show a gain, or kappa on the held-out rows did not rise): the file is unchanged",
    ),
    ExitCode(
        code=EXIT_COMPARE_FAILED,
        commands=("labels export", "review"),
        when="the version is unknown or not run",
    ),
    ExitCode(
        code=EXIT_RUN_FAILED,
        commands=("labels export", "labels import", "review", "calibration"),
        when="storage failed: a full disk or a corrupt database, said in one line",
    ),
    ExitCode(
        code=EXIT_RUN_FAILED,
        commands=("calibration",),
        when="`--align`'s optimiser process failed (its exit code and last lines): the file "
        "is unchanged, the search resumable",
    ),
    ExitCode(
        code=EXIT_N8N_UNREACHABLE,
        commands=(
            "run",
            "backfill",
            "optimize",
            "validate",
            "init",
            "dataset from-executions",
            "dataset synthesize",
            "labels export",
            "labels import",
            "review",
        ),
        when="n8n did not answer: one line names its scheme, host and port (the file is "
        "not at fault)",
    ),
    ExitCode(code=EXIT_ERROR, commands=(ANY_COMMAND,), when="an error, said in one line"),
    ExitCode(
        code=EXIT_USAGE,
        commands=(ANY_COMMAND,),
        when="a usage error: an unknown option, a missing argument",
    ),
)


def exit_codes_stated(command: str) -> Callable[[click.Command], click.Command]:
    """A decorator that ends a command's help with its exit codes other than 0."""

    def stated(click_command: click.Command) -> click.Command:
        rows = sorted(
            (row for row in EXIT_CODES if command in row.commands and row.code != 0),
            key=lambda row: row.code,
        )
        said = "; ".join(f"{row.code} {row.when.replace('`', '')}" for row in rows)
        # Dedented first: a docstring's later paragraphs keep their indent in click's help.
        described = inspect.cleandoc(click_command.help or "")
        click_command.help = f"{described}\n\nExit codes: {said}."
        return click_command

    return stated


class Refused(click.ClickException):
    """A ClickException with its own exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def storage_fault(messages: Sequence[str]) -> str | None:
    """The one line for a full disk or a corrupt database behind these errors, if so."""
    from n8n_deepeval_pipeline.storage_faults import storage_fault as fault_of

    # Named in this order: the home holds everything unless a variable moves a part.
    folders = [
        settings.home(),
        settings.database_path().parent,
        settings.dagster_home(),
        settings.judge_state_dir(),
    ]
    return fault_of(messages, settings.database_path(), list(dict.fromkeys(folders)))


def refuse_a_damaged_database() -> None:
    """Refuse at once, in one line, a local results database that is damaged (exit 4)."""
    from n8n_deepeval_pipeline.storage_faults import database_damage

    try:
        local = settings.profile() == "local"
    except ValueError:
        return  # a bad profile is refused where it is used
    fault = storage_fault(database_damage(settings.database_path())) if local else None
    if fault is not None:
        raise Refused(fault, EXIT_RUN_FAILED)


def storage_faults_refused(command: Callable[..., None]) -> Callable[..., None]:
    """A command that says a storage fault in one line and exits 4, without a traceback."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> None:
        from n8n_deepeval_pipeline.storage_faults import error_messages

        try:
            command(*args, **kwargs)
            return
        except click.ClickException:
            raise  # the command has already said what went wrong, with its exit code
        except Exception as error:
            fault = storage_fault(error_messages(error))
            if fault is None:
                raise
        # Raised out here, so that the failed frames (and Dagster's open resources) are
        # released now rather than at interpreter exit.
        raise Refused(fault, EXIT_RUN_FAILED)

    return guarded


def n8n_unreachable(messages: Sequence[str]) -> str | None:
    """The one line of an n8n that did not answer, among a failed run's errors, if any.

    Dagster names the error's class with its module when it is the cause of a step's
    failure (``n8n_deepeval_pipeline.n8n_api.client.N8nUnreachable: …``), bare otherwise.
    """
    for message in messages:
        said = _UNREACHABLE.match(message)
        if said is not None:
            return said["line"]
    return None


_UNREACHABLE = re.compile(r"^(?:[\w.]+\.)?N8nUnreachable: (?P<line>.*)$", re.S)


def failed_steps_refused(errors: Sequence[str], otherwise: str) -> Refused:
    """The refusal of a run whose steps failed: exit 8 for an n8n out of reach, else 4.

    Said in the one line of a storage fault when one is behind the errors, else ``otherwise``.
    """
    unreachable = n8n_unreachable(errors)
    if unreachable is not None:  # the outside world failed a step, not the run
        return Refused(unreachable, EXIT_N8N_UNREACHABLE)
    return Refused(storage_fault(errors) or otherwise, EXIT_RUN_FAILED)


def n8n_unreachable_refused(command: Callable[..., None]) -> Callable[..., None]:
    """A command that says an n8n out of reach in one line, naming it, and exits 8."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> None:
        from n8n_deepeval_pipeline.n8n_api.client import N8nUnreachable

        try:
            command(*args, **kwargs)
            return
        except N8nUnreachable as error:
            message = str(error)
        raise Refused(message, EXIT_N8N_UNREACHABLE)

    return guarded
