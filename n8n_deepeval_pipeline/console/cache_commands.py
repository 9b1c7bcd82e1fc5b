"""`cache`: the judge-call cache that re-runs and resumed runs reuse."""

from __future__ import annotations

import click

from n8n_deepeval_pipeline import settings


@click.group()
def cache() -> None:
    """The judge-call cache (answers reused by re-runs and resumed runs)."""


@cache.command("clear")
def cache_clear() -> None:
    """Forget every cached judge answer."""
    from n8n_deepeval_pipeline.judging.shared_state import SharedState

    folder = settings.judge_state_dir()
    path = folder / SharedState.FILE_NAME
    removed = SharedState.in_folder(folder).clear_cache() if path.exists() else 0
    click.echo(f"removed {removed} cached judge answer(s) from {path}")
