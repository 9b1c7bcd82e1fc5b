"""The exit codes of the commands, and the one-line refusals that carry them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import click

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.summary.gate import (  # what a version's gate and errors decide
    EXIT_COMPARE_FAILED as EXIT_COMPARE_FAILED,
)
from n8n_deepeval_pipeline.summary.gate import EXIT_INCOMPLETE as EXIT_INCOMPLETE
from n8n_deepeval_pipeline.summary.gate import EXIT_REGRESSION as EXIT_REGRESSION
from n8n_deepeval_pipeline.summary.gate import EXIT_RUN_REGRESSION as EXIT_RUN_REGRESSION

# Exit codes of `run`, one per way it can disappoint, for CI scripts (3 and 5: the gate's).
EXIT_BELOW_FAIL_UNDER = 1
EXIT_INVALID_CONFIG = 2
EXIT_RUN_FAILED = 4  # also any command's storage failing: a full disk, a corrupt database


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
