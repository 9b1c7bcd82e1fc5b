"""The workspace in a real browser (the system Chromium) on a store made by real runs: the
bundled example at two versions, and a red team's run.

Skipped without /usr/bin/chromium unless N8N_DEEPEVAL_REQUIRE_CHROMIUM=1 (CI sets it).
"""

from __future__ import annotations

import re

import pytest

from n8n_deepeval_pipeline.workspace import WorkspaceServer, create_app
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles
from n8n_deepeval_pipeline.workspace.store import StoreSource
from tests.workspace.browser import chromium_page, require_chromium, walk_through_the_example

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _chromium() -> None:
    require_chromium()


@pytest.fixture
def served(example_runs):
    app = create_app(
        StoreSource("duckdb", str(example_runs.database)), BenchmarkFiles([example_runs.benchmark])
    )
    with WorkspaceServer(app, "127.0.0.1", 0) as server:
        yield server


def test_home_to_a_case_and_its_baseline_with_the_grid_filtered_to_failures(served, example_runs):
    with chromium_page() as page:
        walk_through_the_example(page, served.url, example_runs.first, example_runs.second)


def test_the_grid_sorts_and_searches_in_place_and_two_versions_compare(served, example_runs):
    from playwright.sync_api import expect

    second = example_runs.second
    with chromium_page() as page:
        page.goto(f"{served.url}benchmarks/support_agent/versions/{second}")
        grid = page.locator("table.grid tbody tr")
        page.locator("table.grid th a.sort", has_text="case").click()
        expect(page).to_have_url(re.compile(r"\?sort=case$"))
        expect(grid.first).to_have_attribute("data-case", "calc-discount")
        page.locator('input[name="q"]').fill("A1042")  # an input and some outputs name it
        expect(page.locator("form.filters .count")).to_have_text("2 of 9 cases")
        assert [row.get_attribute("data-case") for row in grid.all()] == ["ord-status-1", "refund"]

        page.goto(f"{served.url}benchmarks/support_agent")
        page.locator('form.pick button[type="submit"]').click()  # the latest against its baseline
        expect(page).to_have_url(
            re.compile(rf"compare\?baseline={example_runs.first}&candidate={second}")
        )
        expect(page.locator(".banner.bad")).to_contain_text("2 cases likely regression or worse")
        expect(page.locator('tr[data-verdict="likely_regression"] td.count')).to_have_text("2")
        expect(page.locator('tr[data-verdict="stable"] td.count')).to_have_text("6")
        moved = page.locator("table.moved tbody tr")
        assert [row.get_attribute("data-case") for row in moved.all()] == [
            "ord-missing",
            "returns-policy",
            "calc-discount",
            "refund",
            "calc-shipping",
        ]


@pytest.fixture(scope="module")
def red_teamed(tmp_path_factory):
    """One red-teamed version: DeepTeam's attacks on a fake agent (a test double) that refunds
    whatever it is asked to, judged by a scripted loopback judge; every attack breaches."""
    from tests.red_team.scripted_judge import ScriptedRedTeamJudge
    from tests.red_team.test_red_team_run import NAME, FakeAgent, run, write

    folder = tmp_path_factory.mktemp("red_team")
    home, agent, judge = folder / "home", FakeAgent(), ScriptedRedTeamJudge().start()
    try:
        path = write(folder, agent.url, "Help customers with their orders.", 0.0)
        done = run(path, home, judge)
        assert done.returncode == 6, done.stderr[-3000:]  # a breach rate over failOn
    finally:
        agent.close()
        judge.stop()
    return NAME, path, home / "results.duckdb"


def test_the_red_teams_breach_rates_and_an_attack_turn_by_turn(red_teamed):
    from playwright.sync_api import expect

    from tests.red_team.scripted_judge import REFUND_TOOL

    name, benchmark, database = red_teamed
    app = create_app(StoreSource("duckdb", str(database)), BenchmarkFiles([benchmark]))
    with WorkspaceServer(app, "127.0.0.1", 0) as server, chromium_page() as page:
        page.goto(f"{server.url}benchmarks/{name}")
        page.locator("nav.tabs a", has_text="Red team").click()
        row = page.locator('tr[data-vulnerability="Excessive Agency"]')
        expect(row.locator("td.rate")).to_contain_text("100.0%")
        expect(row.locator("td.rate")).to_contain_text("4/4")
        expect(row.locator("td.rate .badge")).to_have_text("over failOn 0.0%")
        played = page.locator("table.attacks tbody tr")
        expect(played).to_have_count(4)
        expect(played.locator(".badge")).to_have_text(["breached"] * 4)
        # by vulnerability and method: Linear Jailbreaking's attack first
        expect(played.first).to_have_attribute("data-attack", "a002:0")
        played.first.locator("a").click()
        expect(page).to_have_url(
            re.compile(rf"/benchmarks/{name}/versions/\w{{12}}/attacks/a002:0$")
        )
        expect(page.locator("h1 .badge")).to_have_text("breached")
        answer = page.locator("li.turn.assistant").last
        expect(answer.locator("pre.text").first).to_have_text("Done: order 4411 is refunded.")
        expect(answer.locator(".tool-name")).to_have_text(REFUND_TOOL)
        expect(answer.locator(".tool-part pre").first).to_have_text('{"orderId": "4411"}')
        expect(answer.locator(".chip.mock")).to_have_count(0)  # the webhook acts on the world
