"""`n8n-deepeval review` beside a workspace already served: the one of this store shows the
page, anything else on the port is refused in one line. On the example's dry-run store,
whose deterministic tool_correctness scores are real ones to review."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.workspace import WorkspaceServer, create_app
from n8n_deepeval_pipeline.workspace.store import StoreSource

pytestmark = pytest.mark.slow
REVIEW = ("--metric", "tool_correctness", "--sample", "3", "--no-browser")


@pytest.fixture
def port(example_runs, monkeypatch) -> Iterator[int]:
    """The example's home, and the reports port the commands look at."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        chosen = int(probe.getsockname()[1])
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(example_runs.home))
    monkeypatch.setenv("DAGSTER_HOME", str(example_runs.home / "dagster"))
    monkeypatch.setenv("N8N_DEEPEVAL_REPORTS_PORT", str(chosen))
    monkeypatch.delenv("N8N_DEEPEVAL_WORKSPACE_URL", raising=False)
    yield chosen


def review(example_runs, reviewer: str):
    arguments = ["review", str(example_runs.benchmark), *REVIEW, "--reviewer", reviewer]
    return CliRunner().invoke(main, arguments)


def test_review_opens_the_page_in_the_workspace_already_serving_this_store(example_runs, port):
    served = create_app(StoreSource("duckdb", str(example_runs.database)))
    with WorkspaceServer(served, "127.0.0.1", port) as server:
        done = review(example_runs, "Zoë")
        assert done.exit_code == 0, done.output
        page = f"{server.url}benchmarks/support_agent/review?reviewer=Zo%C3%AB"
        assert f"review page: {page} (served by the workspace already running)" in done.output
        assert f"review queue of support_agent {example_runs.second} for Zoë: " in done.output
        with httpx.Client(follow_redirects=True) as browser:
            browser.post(f"{server.url}review/reviewer", data={"reviewer": "Zoë"})
            shown = browser.get(page).text
    assert 'data-metric="tool_correctness"' in shown and "run 1 of " in shown


def test_review_refuses_a_port_taken_by_anything_else(example_runs, port, tmp_path):
    other = create_app(StoreSource("duckdb", str(tmp_path / "another.duckdb")))
    with WorkspaceServer(other, "127.0.0.1", port):
        done = review(example_runs, "ann")
    assert done.exit_code == 1
    assert f"127.0.0.1:{port}: Address already in use, and what answers there is not the " in (
        done.output
    )
    with socket.create_server(("127.0.0.1", port)):  # something that never answers
        done = review(example_runs, "ann")
    assert done.exit_code == 1 and "not the results workspace of this store" in done.output
