"""``n8n-deepeval``: the command group and its wiring; each command lives in ``console/``.

A command's module is imported only when that command runs (or its help is shown), so
``--help`` and the quick commands start without the heavy imports of the others.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from collections.abc import Sequence

import click

from n8n_deepeval_pipeline import settings

# name → "module:attribute" under n8n_deepeval_pipeline.console, in the order --help lists them.
_COMMANDS = {
    "validate": "check_commands:validate",
    "hash": "check_commands:hash_command",
    "schema": "check_commands:schema",
    "metrics": "check_commands:metrics",
    "run": "run_commands:run",
    "backfill": "run_commands:backfill",
    "compare": "version_commands:compare",
    "report": "version_commands:report",
    "optimize": "optimize_command:optimize",
    "init": "init_command:init",
    "dataset": "dataset_commands:dataset",
    "review": "calibration_commands:review",
    "labels": "calibration_commands:labels",
    "calibration": "calibration_commands:calibration",
    "cache": "cache_commands:cache",
    "ui": "ui_command:ui",
    "ci": "ci_commands:ci",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported from their modules on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = _COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, attribute = where.split(":")
        command = getattr(
            importlib.import_module(f"n8n_deepeval_pipeline.console.{module}"), attribute
        )
        if not isinstance(command, click.Command):
            raise TypeError(f"{where} is not a click command")
        return command


@click.group(cls=_LazyGroup)
@click.pass_context
def main(ctx: click.Context) -> None:
    """Benchmark n8n AI workflows with DeepEval, orchestrated by Dagster."""
    from n8n_deepeval_pipeline.console.printed import print_safely

    # Nothing printed holds a configured secret or a control character a terminal obeys.
    print_safely()
    # Every command's files (and its children's: workers, Dagster) are private.
    users_umask = settings.keep_files_private()
    ctx.call_on_close(lambda: settings.restore_umask(users_umask))


def entry(args: Sequence[str] | None = None) -> None:
    """The console script: the CLI, then its exit without the interpreter's teardown.

    Freeing every object of Dagster, pandas and DuckDB took ~1.5 s after a command had
    said all it had to say. The exit handlers still run and the streams are flushed;
    while a thread still runs, the exit is Python's own.
    """
    try:
        main(args, prog_name="n8n-deepeval")
        code = 0
    except SystemExit as done:
        code = _exit_code(done)
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_code(done: SystemExit) -> int:
    """The process's exit code for ``done`` (a message is printed, as Python would)."""
    if done.code is None or isinstance(done.code, int):
        return done.code or 0
    print(done.code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    entry()
