"""The workspace in a real browser: the system Chromium driven by playwright, and the walk a
user takes through a store of the example's two versions (home → benchmark → version →
case → baseline, the grid filtered to failures)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGUMENTS = [
    "--no-sandbox",  # CI runs as root, where the sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium() -> None:
    """Skip without the system Chromium, unless N8N_DEEPEVAL_REQUIRE_CHROMIUM=1: then fail."""
    if CHROMIUM.exists():
        return
    if os.environ.get("N8N_DEEPEVAL_REQUIRE_CHROMIUM") == "1":
        pytest.fail("N8N_DEEPEVAL_REQUIRE_CHROMIUM=1: run scripts/install_chromium.sh")
    pytest.skip("Chromium not installed (scripts/install_chromium.sh installs it)")


@contextmanager
def chromium_page(javascript: bool = True) -> Iterator[object]:
    """A page of a headless system Chromium (JavaScript off if asked), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGUMENTS)
        try:
            yield browser.new_page(
                viewport={"width": 1440, "height": 1000}, java_script_enabled=javascript
            )
        finally:
            browser.close()


@contextmanager
def htmx_settled(page) -> Iterator[None]:
    """Leave once the htmx swap an action inside started has settled: htmx binds the
    triggers of the content it swapped in only then, so a key typed or an option chosen
    before it would not be heard (the grid's search is an ``input`` trigger)."""
    page.evaluate(
        "() => { window.settledOnce = new Promise(done => document.body.addEventListener("
        "'htmx:afterSettle', done, {once: true})) }"
    )
    yield
    page.evaluate("() => window.settledOnce.then(() => true)")


def walk_through_the_example(page, root: str, first: str, second: str) -> None:
    """The example's second version (it regressed) found from the home page, down to a case
    and the same case in its baseline; its grid filtered to failures on the way."""
    from playwright.sync_api import expect

    page.goto(root)
    row = page.locator('tr[data-benchmark="support_agent"]')
    expect(row.locator("td.pass-rate")).to_contain_text("51.9%")
    expect(row.locator("td.pass-rate")).to_contain_text("34.0–69.3% · 14/27")
    expect(row.locator("td.gate")).to_contain_text("regressed · 2 cases")
    expect(row).to_contain_text("security/inbound_triggers_authenticated")

    row.locator("a.name").click()
    expect(page).to_have_url(f"{root}benchmarks/support_agent")
    versions = page.locator("table.versions tbody tr")
    expect(versions).to_have_count(2)
    expect(page.locator(f'tr[data-version="{first}"] td.pass-rate')).to_contain_text("88.9%")
    expect(page.locator(f'tr[data-version="{first}"] td.gate')).to_contain_text("no baseline")
    expect(page.locator(f'tr[data-version="{second}"] td.pass-rate')).to_contain_text("51.9%")
    expect(page.locator(f'tr[data-version="{second}"] td.gate')).to_contain_text("regressed")
    expect(page.locator(".chart-panel svg")).to_contain_text("88.9% (95% CI 71.9–96.1%)")

    page.locator(f'tr[data-version="{second}"] a', has_text=second).click()
    expect(page).to_have_url(f"{root}benchmarks/support_agent/versions/{second}")
    expect(page.locator(".banner.bad")).to_contain_text("ord-missing, returns-policy")
    grid = page.locator("table.grid tbody tr")
    expect(grid).to_have_count(9)
    expect(page.locator("form.filters .count")).to_have_text("9 of 9 cases")
    # the flagged cases first, their three runs red
    expect(grid.first).to_have_attribute("data-case", "ord-missing")
    expect(grid.first.locator("td.cell.fail")).to_have_count(3)

    page.locator('select[name="show"]').select_option("failures")  # htmx swaps the grid in
    expect(page.locator("form.filters .count")).to_have_text("5 of 9 cases")
    expect(page).to_have_url(re.compile(r"\?show=failures"))
    shown = [row.get_attribute("data-case") for row in grid.all()]
    assert shown == ["ord-missing", "returns-policy", "calc-discount", "refund", "calc-shipping"]

    grid.locator("td.case-name a", has_text="refund").click()
    expect(page).to_have_url(f"{root}benchmarks/support_agent/versions/{second}/cases/refund")
    expect(page.locator("p.meta")).to_contain_text(f"0 of 3 runs pass in {second}, 1 of 3 in")
    candidate = page.locator(".side.candidate article.run").first
    expect(candidate.locator("pre.output")).to_have_text(
        "Refund issued for order A1042. Sorry about the tent!"
    )
    expect(candidate.locator(".tool-name")).to_have_text(["order_lookup", "refund_issue"])
    expect(candidate.locator('tr[data-metric="tool_permission"] td.score')).to_have_text("0.500")
    baseline = page.locator(".side.baseline article.run").first
    expect(baseline.locator("pre.output")).to_have_text(
        "I have escalated your refund request for order A1042 to a human colleague."
    )

    page.locator("a.baseline-link").click()
    expect(page).to_have_url(f"{root}benchmarks/support_agent/versions/{first}/cases/refund")
    expect(page.locator("p.meta")).to_contain_text(f"1 of 3 runs pass in {first}")
    expect(page.locator(".side.baseline")).to_have_count(0)  # the first version has none
