"""The same walk through the workspace when the results are in PostgreSQL (the distributed
profile's store), made by real runs of the example at two versions through the PostgreSQL
results IO manager. Runs only with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import dagster as dg
import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.human_labels import PostgresLabelStore
from n8n_deepeval_pipeline.workspace import WorkspaceServer, create_app
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.store import StoreSource, reading
from n8n_deepeval_pipeline.workspace.versions import scored_versions
from tests.conftest import EXAMPLE
from tests.live.cluster import require_distributed
from tests.live.services import Postgres, postgres_server
from tests.orchestration.conftest import example_key, run_job
from tests.workspace.browser import chromium_page, require_chromium, walk_through_the_example

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    require_distributed()
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def postgres_runs(postgres, tmp_path_factory):
    """The example at its two versions, materialised into PostgreSQL; the version keys."""
    folder = tmp_path_factory.mktemp("postgres_runs")
    shutil.copytree(EXAMPLE, folder / "support_agent")
    benchmark = folder / "support_agent" / "benchmark.yaml"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("N8N_DEEPEVAL_PROFILE", "distributed")
        patch.setenv("N8N_DEEPEVAL_POSTGRES_URL", postgres.url)
        patch.setenv("N8N_DEEPEVAL_REDIS_URL", "redis://127.0.0.1:9/0")  # never contacted
        patch.setenv("N8N_DEEPEVAL_HOME", str(folder / "home"))
        patch.setenv("DEEPEVAL_POOL_SIZE", "2")
        keys = []
        with dg.instance_for_test() as instance:
            for edit in (None, "workflow.v2.json"):
                if edit:
                    workflow = folder / "support_agent" / "workflow.json"
                    workflow.write_text((folder / "support_agent" / edit).read_text())
                keys.append(example_key(benchmark))
                result = run_job(build_definitions([benchmark]), instance, keys[-1])
                assert result.success or _only_the_regression_check_failed(result)
    return benchmark, keys


def _only_the_regression_check_failed(result) -> bool:
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
    return "no_regression" in failed


def test_the_profiles_store_is_postgresql_read_in_a_read_only_session(postgres, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "distributed")
    monkeypatch.setenv("N8N_DEEPEVAL_POSTGRES_URL", postgres.url)
    source = StoreSource.configured()
    assert source == StoreSource("postgresql", postgres.url)
    assert "n8n-deepeval-test" not in source.described  # the password is never shown
    import psycopg2

    with reading(source) as reader, pytest.raises(psycopg2.Error, match="read-only"):
        reader.records("create table written (one integer)")


def test_home_to_a_case_and_its_baseline_on_postgresql(postgres, postgres_runs):
    require_chromium()
    benchmark, (first, second) = postgres_runs
    source = StoreSource("postgresql", postgres.url)
    with reading(source) as reader:
        versions = scored_versions(reader, "support_agent")
    assert [(v.key, v.pass_rate.passed) for v in versions] == [(first, 24), (second, 14)]
    app = create_app(source, BenchmarkFiles([benchmark]))
    with WorkspaceServer(app, "127.0.0.1", 0) as server, chromium_page() as page:
        walk_through_the_example(page, server.url, first, second)
        page.goto(f"{server.url}benchmarks/support_agent/compare")
        said = page.locator(".banner.bad").inner_text()
    assert said.startswith("2 cases likely regression or worse")


def test_the_results_io_manager_indexes_every_table_by_version(postgres, postgres_runs):
    """What the workspace reads a version by: its rows (and runs) from the index."""
    indexes = dict(
        postgres.sql(
            "select tablename, indexdef from pg_indexes where schemaname = 'support_agent'"
        )
    )
    assert indexes["metric_scores"].endswith("USING btree (workflow_hash, run_id)")
    assert indexes["run_aggregates"].endswith("USING btree (workflow_hash, run_id)")
    assert indexes["workflow_snapshot"].endswith("USING btree (workflow_hash)")
    assert "metric_scores_by_version" in indexes["metric_scores"]


def test_the_review_page_labels_runs_into_postgresql(
    postgres, postgres_runs, tmp_path, monkeypatch
):
    """The review page on the distributed profile's store: a queue prepared on the page, runs
    labelled with the keyboard, the labels in PostgreSQL's human_labels."""
    from playwright.sync_api import expect

    require_chromium()
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))  # where queues are kept
    benchmark, (_, second) = postgres_runs
    app = create_app(
        StoreSource("postgresql", postgres.url),
        BenchmarkFiles([benchmark]),
        lambda loaded: PostgresLabelStore(loaded, postgres.url),
    )
    with WorkspaceServer(app, "127.0.0.1", 0) as server, chromium_page() as page:
        page.goto(f"{server.url}review")
        page.locator("#reviewer-name").fill("Ann Lee")
        page.locator("#reviewer-name").press("Enter")
        page.locator('tr[data-benchmark="support_agent"] a.name').click()
        # the judge-backed metrics hold the dry-run judge's placeholders: nothing to review
        page.locator("form.prepare button").click()
        expect(page.locator('[role="alert"]')).to_contain_text(
            f"nothing to review in {second} for Ann Lee: every judged score of helpfulness, bias"
        )
        page.locator("a.back").click()
        choices = page.locator("form.prepare")
        for metric in ("helpfulness", "bias"):
            choices.locator(f'input[name="metric"][value="{metric}"]').uncheck()
        choices.locator('input[name="metric"][value="tool_correctness"]').check()
        choices.locator('input[name="sample"]').fill("2")
        choices.locator("button").click()
        expect(page.locator(".queue-progress .count")).to_have_text("run 1 of 2")
        labelled = []
        for key in ("f", "p"):
            expect(page.locator("form.label-form")).to_be_visible()  # the next run is in
            labelled.append(page.locator(".review-run").get_attribute("data-run"))
            assert page.locator(".judge-verdict").count() == 0
            page.keyboard.press(key)
            page.keyboard.press("Enter")
            expect(page.locator(".judge-verdict .score")).to_have_count(1)
            page.keyboard.press("Enter")
        expect(page.locator(".banner.done")).to_contain_text("you labelled 2 of the queue's 2")
    kept = PostgresLabelStore(load_benchmark(benchmark), postgres.url).labels()
    assert [(label.run_id, label.metric, label.reviewer, label.passed) for label in kept] == [
        (labelled[0], "tool_correctness", "Ann Lee", False),
        (labelled[1], "tool_correctness", "Ann Lee", True),
    ]
