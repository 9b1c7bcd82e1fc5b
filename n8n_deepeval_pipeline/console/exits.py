"""The exit codes of the commands, and the one-line refusals that carry them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import click

from n8n_deepeval_pipeline import settings

# Exit codes of `run`, one per way it can disappoint, for CI scripts.
EXIT_BELOW_FAIL_UNDER = 1
EXIT_INVALID_CONFIG = 2
EXIT_INCOMPLETE = 3
EXIT_RUN_FAILED = 4  # also any command's storage failing: a full disk, a corrupt database
EXIT_RUN_REGRESSION = 5
EXIT_N8N_UNREACHABLE = 6  # any command reading n8n: it did not answer (not the file's fault)
# …and of `compare`.
EXIT_REGRESSION = 1
EXIT_COMPARE_FAILED = 2


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
    """The one line of an n8n that did not answer, among a failed run's errors, if any."""
    prefix = "N8nUnreachable: "
    return next((m.removeprefix(prefix) for m in messages if m.startswith(prefix)), None)


def n8n_unreachable_refused(command: Callable[..., None]) -> Callable[..., None]:
    """A command that says an n8n out of reach in one line, naming it, and exits 6."""

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
