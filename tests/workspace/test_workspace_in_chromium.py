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
from tests.workspace.browser import (
    chromium_page,
    htmx_settled,
    require_chromium,
    walk_through_the_example,
)

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
        with htmx_settled(page):
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
        expect(page.locator(".banner.bad")).to_contain_text(
            f"compare --baseline {example_runs.first} --candidate {second} exits 1."
        )
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


@pytest.fixture
def served_generated(generated):
    with WorkspaceServer(create_app(generated.source, generated.files), "127.0.0.1", 0) as server:
        yield server


def test_the_grids_metric_filter_and_descending_order_and_a_picked_pair_compare(
    served_generated,
):
    """Controls the example's walk leaves alone: the metric filter, a sort's second click, the
    compare picker set to a pair of its own, and the compare page's swap."""
    from playwright.sync_api import expect

    from tests.workspace.conftest import BENCHMARK, V1, V2

    root, first, second = served_generated.url, V1[:12], V2[:12]
    with chromium_page() as page:
        page.goto(f"{root}benchmarks/{BENCHMARK}/versions/{second}")
        grid = page.locator("table.grid tbody tr")
        count = page.locator("form.filters .count")
        expect(count).to_have_text("3 of 3 cases")
        with htmx_settled(page):
            page.locator("table.grid th a.sort", has_text="case").click()
        expect(page).to_have_url(re.compile(r"\?sort=case$"))
        expect(grid.first).to_have_attribute("data-case", "refund")
        ascending = [row.get_attribute("data-case") for row in grid.all()]
        assert ascending == ["refund", "status", "total"]
        with htmx_settled(page):
            page.locator("table.grid th a.sort", has_text="case").click()  # again: descending
        expect(page).to_have_url(re.compile(r"\?sort=case&order=desc$"))
        expect(grid.first).to_have_attribute("data-case", "total")
        assert [row.get_attribute("data-case") for row in grid.all()] == ascending[::-1]
        expect(page.locator("table.grid th a.sort.here")).to_have_text("case ▾")

        page.locator('select[name="metric"]').select_option("helpfulness")
        expect(page).to_have_url(re.compile(r"metric=helpfulness"))
        expect(count).to_have_text("1 of 3 cases")  # refund's helpfulness failed each run
        expect(grid).to_have_count(1)
        expect(grid.first).to_have_attribute("data-case", "refund")
        expect(page.locator("th.metric.chosen")).to_contain_text("helpfulness")
        expect(grid.first.locator("td.metric.bad")).to_have_attribute(
            "title", "helpfulness: 0 of 3 passed"
        )

        # the picker set to a pair other than the latest against its baseline
        page.goto(f"{root}benchmarks/{BENCHMARK}")
        page.locator('form.pick select[name="baseline"]').select_option(second)
        page.locator('form.pick select[name="candidate"]').select_option(first)
        page.locator('form.pick button[type="submit"]').click()
        expect(page).to_have_url(re.compile(rf"compare\?baseline={second}&candidate={first}$"))
        expect(page.locator(".banner.good")).to_have_text("No case is regression or worse.")
        expect(page.locator('tr[data-verdict="worth_watching"] td.count')).to_have_text("1")
        expect(page.locator('tr[data-verdict="stable"] td.count')).to_have_text("2")
        expect(page.locator('tr[data-case="refund"] td.num').nth(2)).to_have_text("+100.0 pts")

        page.locator("p.meta a", has_text="swap").click()
        expect(page).to_have_url(re.compile(rf"compare\?baseline={first}&candidate={second}$"))
        # refund's drop is a likely regression, under compare.failOn's default: regression
        expect(page.locator(".banner.good")).to_have_text("No case is regression or worse.")
        expect(page.locator('tr[data-verdict="likely_regression"] td.count')).to_have_text("1")
        expect(page.locator('tr[data-case="refund"] td.num').nth(2)).to_have_text("−100.0 pts")
        expect(page.locator('tr[data-case="total"] td.num').nth(2)).to_have_text("+33.3 pts")


def test_the_variants_frontier_and_the_red_teams_versions(served_generated):
    """The variants page's frontier chart and matrix, and the red team's history switched to
    an earlier version by its column's link."""
    from playwright.sync_api import expect

    from tests.workspace.conftest import BENCHMARK, V1, V2

    root, first, second = served_generated.url, V1[:12], V2[:12]
    with chromium_page() as page:
        page.goto(f"{root}benchmarks/{BENCHMARK}")
        page.locator("nav.tabs a", has_text="Variants").click()
        expect(page.locator('select[name="base"] option:checked')).to_contain_text(second)
        frontier = page.locator("#variants svg.chart")
        expect(frontier.locator("g > text")).to_have_text(["base 67%", "nano 67%"])
        expect(frontier.locator("g > title")).to_have_text(
            ["base: $0.000210 per run", "nano: $0.000210 per run"]
        )
        matrix = page.locator("#variants table tbody tr")
        expect(matrix).to_have_count(2)
        expect(matrix.nth(1).locator("td").nth(1)).to_contain_text("66.7% 6/9")
        expect(matrix.nth(1).locator("td").last).to_have_text("stable\u00a03")

        page.locator("nav.tabs a", has_text="Red team").click()
        history = page.locator('tr[data-vulnerability="bola"] td.rate')
        expect(history).to_have_count(2)  # one column a version, in the order they ran
        expect(history.first).to_contain_text("25.0%")
        expect(history.last).to_contain_text("75.0%")
        expect(history.last.locator(".badge")).to_have_text("over failOn 25.0%")
        expect(page.locator("h2 a")).to_have_text(second)  # the latest played, by default
        page.locator("table.breach-history thead a", has_text=first).click()
        expect(page).to_have_url(re.compile(rf"red-team\?version={first}$"))
        expect(page.locator("h2 a")).to_have_text(first)
        played = page.locator("table.attacks tbody tr")
        expect(played.locator(".badge")).to_have_text(["held", "held", "breached", "held"])
