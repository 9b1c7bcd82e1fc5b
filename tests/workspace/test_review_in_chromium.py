"""The review queue in a real browser (the system Chromium), opened by `n8n-deepeval review`
as a user opens it, on a store made by a real run of the bundled example scored by the
loopback judge (a deterministic test double: its scores are real numbers, not placeholders).

A reviewer says their name, labels runs with the keyboard and with clicks, sees the judge's
score only once a run is labelled, skips one run and takes back one label; then the labels
are read back from human_labels, and `n8n-deepeval calibration --json` counts them.

Skipped without /usr/bin/chromium unless N8N_DEEPEVAL_REQUIRE_CHROMIUM=1 (CI sets it).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.calibration.review_items import ReviewItem
from n8n_deepeval_pipeline.calibration.review_queue import QueueFile, queue_path
from n8n_deepeval_pipeline.orchestration.resources.human_labels import DuckDbLabelStore
from n8n_deepeval_pipeline.report.formatting import figure
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import EXAMPLE
from tests.workspace.browser import chromium_page, require_chromium
from tests.workspace.conftest import cli

pytestmark = pytest.mark.slow
REVIEWER = "Ann Lee"
STARTED_S = 300  # for `review` to sample, start the workspace and print the page's address


@pytest.fixture(scope="module", autouse=True)
def _chromium() -> None:
    require_chromium()


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, Path]:
    """The example run once, its judge-backed metrics scored by the loopback judge."""
    folder = tmp_path_factory.mktemp("judged")
    shutil.copytree(EXAMPLE, folder / "support_agent")
    benchmark, home = folder / "support_agent" / "benchmark.yaml", folder / "home"
    judge = LoopbackJudge(latency_s=0.0).start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "openai-compatible")
            patch.setenv("N8N_DEEPEVAL_JUDGE_MODEL", "gpt-4o-mini")
            patch.setenv("N8N_DEEPEVAL_JUDGE_BASE_URL", f"{judge.base_url}/v1")
            done = cli(home, "run", str(benchmark))
    finally:
        judge.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    return benchmark, home


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def review_command(benchmark: Path, home: Path, *options: str) -> Iterator[str]:
    """`n8n-deepeval review` serving the workspace; the review page's address it prints.

    Stopped with SIGTERM afterwards, as Ctrl-C stops it: it exits 0.
    """
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "N8N_DEEPEVAL_REPORTS_PORT": str(_free_port()),
    }
    env.pop("N8N_DEEPEVAL_WORKSPACE_URL", None)
    command = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "review", str(benchmark)]
    with (home / "review.log").open("w") as log:
        process = subprocess.Popen(
            [*command, *options, "--no-browser"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()])
    reader.start()
    try:
        while True:
            try:
                line = lines.get(timeout=STARTED_S)
            except queue.Empty:
                pytest.fail(f"review printed no page:\n{(home / 'review.log').read_text()}")
            found = re.match(r"review page: (\S+) \(served by this command\)", line)
            if found:
                break
        yield found[1]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, (home / "review.log").read_text()[-3000:]
        reader.join(timeout=10)


def judge_hidden(page, item: ReviewItem) -> None:
    """Nothing of the judge's verdicts is in the page: not shown, not hidden either."""
    from playwright.sync_api import expect

    expect(page.locator(".review-run")).to_have_attribute("data-run", item.run_id)
    expect(page.locator("form.label-form")).to_be_visible()
    assert page.locator(".judge-verdict").count() == 0
    html = page.content()
    assert not [verdict.reason for verdict in item.judge if verdict.reason in html]


def judge_beside(page, item: ReviewItem, mine: dict[str, str]) -> None:
    """The run's page once labelled: each metric's label beside the judge's score and reason."""
    from playwright.sync_api import expect

    expect(page).to_have_url(re.compile(r"/review/runs/"))
    for verdict in item.judge:
        row = page.locator(f'table.verdicts tr[data-metric="{verdict.metric}"]')
        expect(row.locator(".judge-verdict .score")).to_have_text(figure(verdict.score))
        expect(row.locator(".judge-verdict .reason")).to_have_text(verdict.reason or "")
        expect(row.locator(".yours .badge")).to_have_text(mine[verdict.metric])


def test_a_reviewer_labels_runs_in_the_browser_and_the_labels_are_kept(judged):
    from playwright.sync_api import expect

    benchmark, home = judged
    started = datetime.now(UTC)
    options = ("--sample", "12", "--reviewer", REVIEWER)
    with review_command(benchmark, home, *options) as url, chromium_page() as page:
        assert url.endswith("/benchmarks/support_agent/review?reviewer=Ann%20Lee")
        path = queue_path(home, "support_agent", REVIEWER)
        items = QueueFile.model_validate_json(path.read_text()).items
        assert len(items) >= 5 and any(len(item.metrics) == 2 for item in items)
        page.goto(url)
        name = page.locator("#reviewer-name")
        expect(name).to_have_value(REVIEWER)  # the name the link was made for, to confirm
        name.press("Enter")
        expect(page.locator(".reviewer-name")).to_have_text(REVIEWER)
        count = page.locator(".queue-progress .count")
        expect(count).to_have_text(f"run 1 of {len(items)}")

        # The first run with the keyboard: 4 rates the first metric, p passes it and moves
        # on, f fails the second; Enter gives the labels, then goes to the next run.
        first = items[0]
        judge_hidden(page, first)
        keys = ["4", "p", "f"][: 1 + len(first.metrics)]
        for key in keys:
            page.keyboard.press(key)
        page.keyboard.press("Enter")
        given = dict(zip([m.metric for m in first.metrics], ["pass", "fail"], strict=False))
        judge_beside(page, first, given)
        page.keyboard.press("Enter")

        # The second with the mouse: fail each metric, rate the first 2 and say why.
        second = items[1]
        judge_hidden(page, second)
        expect(count).to_have_text(f"run 2 of {len(items)}")
        for fieldset in page.locator("fieldset.metric").all():
            fieldset.locator("label.choice.fail").click()
        page.locator("fieldset.metric").first.locator("label.rate", has_text="2").click()
        page.locator("fieldset.metric textarea").first.fill("too vague about the refund")
        page.locator("button.give").click()
        judge_beside(page, second, {m.metric: "fail" for m in second.metrics})
        page.locator("a.next").click()

        # The third is skipped; the fourth labelled, taken back (its judge hidden again),
        # and labelled again.
        judge_hidden(page, items[2])
        page.keyboard.press("s")
        fourth = items[3]
        judge_hidden(page, fourth)
        expect(page.locator(".queue-progress")).to_contain_text("1 skipped")
        for _ in fourth.metrics:
            page.keyboard.press("f")
        page.keyboard.press("Enter")
        judge_beside(page, fourth, {m.metric: "fail" for m in fourth.metrics})
        page.keyboard.press("u")
        judge_hidden(page, fourth)
        for fieldset in page.locator("fieldset.metric").all():
            fieldset.locator("label.choice.pass").click()
        page.locator("button.give").click()
        judge_beside(page, fourth, {m.metric: "pass" for m in fourth.metrics})
        page.keyboard.press("Enter")
        judge_hidden(page, items[4])
        expect(page.locator(".queue-progress")).to_contain_text("3 labelled · 1 skipped")
    finished = datetime.now(UTC)

    store = DuckDbLabelStore(load_benchmark(benchmark), home / "results.duckdb")
    kept = {(label.run_id, label.metric): label for label in store.labels()}
    assert {label.reviewer for label in kept.values()} == {REVIEWER}
    assert {label.source for label in kept.values()} == {"review"}
    assert all(started <= label.labelled_at <= finished for label in kept.values())
    expected = {}
    for index, metric in enumerate(first.metrics):
        expected[(first.run_id, metric.metric)] = (index == 0, 4 if index == 0 else None, None)
    for index, metric in enumerate(second.metrics):
        said = "too vague about the refund" if index == 0 else None
        expected[(second.run_id, metric.metric)] = (False, 2 if index == 0 else None, said)
    for metric in fourth.metrics:
        expected[(fourth.run_id, metric.metric)] = (True, None, None)
    assert {key: (it.passed, it.rating, it.comment) for key, it in kept.items()} == expected

    measured = cli(home, "calibration", str(benchmark), "--json")
    assert measured.returncode == 0, measured.stderr[-2000:]
    calibration = json.loads(measured.stdout)
    assert (calibration["labels"], calibration["reviewers"]) == (len(expected), [REVIEWER])
    per_metric = {m["metric"]: m["labels"] for m in calibration["metrics"]}
    assert per_metric == {
        metric: sum(1 for _, labelled in expected if labelled == metric)
        for metric in {labelled for _, labelled in expected}
    }


def test_without_javascript_the_forms_still_label(judged):
    """The same page with JavaScript off: the forms post, and each answer is a page."""
    from playwright.sync_api import expect

    benchmark, home = judged
    options = ("--sample", "4", "--reviewer", "Bob")
    with review_command(benchmark, home, *options) as url, chromium_page(javascript=False) as page:
        items = QueueFile.model_validate_json(
            queue_path(home, "support_agent", "Bob").read_text()
        ).items
        page.goto(url)
        page.locator("#reviewer-name").press("Enter")
        judge_hidden(page, items[0])
        for fieldset in page.locator("fieldset.metric").all():
            fieldset.locator("label.choice.pass").click()
        page.locator("button.give").click()
        judge_beside(page, items[0], {m.metric: "pass" for m in items[0].metrics})
        page.locator("form.undo button").click()
        judge_hidden(page, items[0])
        page.locator("form.skip button").click()
        judge_hidden(page, items[1])
        expect(page.locator(".queue-progress")).to_contain_text("0 labelled · 1 skipped")
    store = DuckDbLabelStore(load_benchmark(benchmark), home / "results.duckdb")
    assert [label for label in store.labels() if label.reviewer == "Bob"] == []
