"""A real n8n for the live tests, started once per session (N8N_DEEPEVAL_LIVE=1)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live.cluster import require_distributed
from tests.live.n8n_server import N8nServer, ensure_installed
from tests.live.services import Postgres, postgres_server

LIVE = os.environ.get("N8N_DEEPEVAL_LIVE") == "1"


@pytest.fixture(scope="session")
def n8n(tmp_path_factory: pytest.TempPathFactory) -> Iterator[N8nServer]:
    """n8n 2.41.1 on loopback with an owner and an API key; stopped by process group."""
    if not LIVE:
        pytest.skip("live n8n tests: set N8N_DEEPEVAL_LIVE=1 (installs n8n, ~7 min cold)")
    install_dir = ensure_installed()
    with N8nServer.start(install_dir, tmp_path_factory.mktemp("n8n")) as server:
        yield server


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server of the module's own (the distributed profile's live tests)."""
    require_distributed()
    with postgres_server() as server:
        yield server


def use_cli(
    monkeypatch: pytest.MonkeyPatch,
    n8n: N8nServer | None,
    home: Path,
    workers: int = 1,
    **judge: str,
) -> Path:
    """Point the CLI at the session's n8n, ``home`` and ``workers`` workers; the results database.

    ``n8n``: None for a benchmark that calls none (a recorded target). ``judge``: its
    ``N8N_DEEPEVAL_JUDGE_<NAME>`` variables (``provider="openai"``, …). DAGSTER_HOME is set
    too: the CLI exports it, and the next test would find this one's instance. A CLI started
    as a subprocess inherits all of them.
    """
    settings = {"N8N_DEEPEVAL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                "DEEPEVAL_POOL_SIZE": str(workers)}  # fmt: skip
    if n8n is not None:
        settings |= {"N8N_API_URL": n8n.base_url, "N8N_API_KEY": n8n.api_key}
    settings |= {f"N8N_DEEPEVAL_JUDGE_{name.upper()}": value for name, value in judge.items()}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return home / "results.duckdb"


@pytest.fixture
def cli_home(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's environment for the session's n8n, one worker; its results database."""
    return use_cli(monkeypatch, n8n, tmp_path / "home")
