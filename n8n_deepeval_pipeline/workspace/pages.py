"""The workspace's pages: one entry each in ``PAGES`` (its path, template and view).

A view gets the request with an open, read-only store (``PageRequest``) and returns what
its template shows; the app renders it inside the common layout, whose navigation lists
the pages that name a ``nav`` label (the top bar) or a ``tab`` label (a benchmark's tabs).
A new page is one entry here and one template. The forms pages post are in ``ACTIONS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.red_team.rows import BreachRate
from n8n_deepeval_pipeline.report.charts import interval_chart
from n8n_deepeval_pipeline.report.red_team import attack_turns, red_team_report
from n8n_deepeval_pipeline.report.variant_charts import frontier_chart
from n8n_deepeval_pipeline.report.verdicts import GUIDANCE
from n8n_deepeval_pipeline.tables.rows import WorkflowCheck
from n8n_deepeval_pipeline.workspace import review, review_actions
from n8n_deepeval_pipeline.workspace.case import WHOLE, case_shown
from n8n_deepeval_pipeline.workspace.grid import GridQuery, version_grid
from n8n_deepeval_pipeline.workspace.overview import latest_version, overview
from n8n_deepeval_pipeline.workspace.page_request import Action, Page, PageNotFound, PageRequest
from n8n_deepeval_pipeline.workspace.red_team import attack, attacks, breach_history
from n8n_deepeval_pipeline.workspace.side_by_side import moved, side_by_side
from n8n_deepeval_pipeline.workspace.store import model_rows
from n8n_deepeval_pipeline.workspace.variants import families, variants_matrix
from n8n_deepeval_pipeline.workspace.verdict import version_verdicts
from n8n_deepeval_pipeline.workspace.versions import find_version, version_costs

VERSIONS_PER_PAGE = 50


def home(page: PageRequest) -> Mapping[str, Any]:
    """Every benchmark: its latest version, pass rate, gate, failed workflow checks."""
    benchmarks, problems = overview(page.reader, page.files)
    return {"benchmarks": benchmarks, "problems": problems, "store": page.source.described}


def _page_number(page: PageRequest, pages: int) -> int:
    """The ``page`` query parameter within 1..pages (default the last)."""
    asked = page.query("page")
    if asked is None or not asked.isdigit():
        return pages
    return min(max(int(asked), 1), pages)


def benchmark(page: PageRequest) -> Mapping[str, Any]:
    """The benchmark's versions in the order they ran, a page of them at a time."""
    versions = page.versions
    pages = max(1, -(-len(versions) // VERSIONS_PER_PAGE))
    number = _page_number(page, pages)
    shown = versions[(number - 1) * VERSIONS_PER_PAGE : number * VERSIONS_PER_PAGE]
    keys = [version.key for version in shown]
    chart = (
        interval_chart(
            [(version.label, version.pass_rate) for version in shown],
            "Run pass rate of each version in the order they ran, with 95% intervals",
        )
        if shown
        else None
    )
    latest = latest_version(versions)
    return {
        "versions": shown,
        "all_versions": versions,
        "page_number": number,
        "first": (number - 1) * VERSIONS_PER_PAGE,
        "pages": pages,
        "verdicts": page.verdicts(keys),
        "costs": version_costs(page.reader, page.benchmark.name, shown),
        "baselines": page.baselines,
        "chart": chart,
        "default_pair": (page.baselines.get(latest.key) if latest else None, latest),
    }


def _grid_query(page: PageRequest) -> GridQuery:
    params = page.request.query_params
    try:
        return GridQuery.model_validate(
            {
                "show": params.get("show") or "all",
                "metric": page.query("metric"),
                "search": page.query("q"),
                "sort": params.get("sort") or "attention",
                "descending": params.get("order") == "desc",
                "page": page.query("page") or 1,
            }
        )
    except ValidationError:
        return GridQuery()


def version(page: PageRequest) -> Mapping[str, Any]:
    """A version's cases × runs grid, its gate, errors by kind and placeholders."""
    shown = page.version()
    verdict = page.verdicts([shown.key])[shown.key]
    cases = (
        {case.row_id: case.verdict for case in verdict.comparison.cases}
        if verdict.comparison
        else {}
    )
    report = settings.reports_dir() / page.benchmark.name / shown.key / "report.html"
    checks = model_rows(
        page.reader, WorkflowCheck, page.benchmark.name, "workflow_hash = ?", [shown.workflow_hash]
    )
    return {
        "version": shown,
        "verdict": verdict,
        "baseline": page.baselines.get(shown.key),
        "grid": version_grid(
            page.reader,
            page.benchmark.name,
            shown,
            _grid_query(page),
            page.benchmark.metric_order,
            cases,
        ),
        "report": report.exists(),
        "checks": checks,
    }


def case(page: PageRequest) -> Mapping[str, Any]:
    """One case of a version beside the same row's runs in the baseline (or ``against``)."""
    shown = page.version()
    against = page.query("against")
    baseline_key = against or page.baselines.get(shown.key)
    baseline = page.version(baseline_key) if baseline_key else None
    row_id = str(page.request.path_params["row_id"])
    found = case_shown(
        page.reader, page.benchmark.name, shown, row_id, baseline, page.benchmark.metric_order
    )
    if found is None:
        raise PageNotFound(f"{page.benchmark.name} {shown.key}: no case {row_id!r}")
    verdict = page.verdicts([shown.key])[shown.key]
    comparison = verdict.comparison if not against else None
    case_verdict = next(
        (c for c in (comparison.cases if comparison else ()) if c.row_id == row_id), None
    )
    return {"case": found, "verdict": case_verdict, "guidance": GUIDANCE, "against": against}


def compare(page: PageRequest) -> Mapping[str, Any]:
    """Two versions side by side (default: the latest against its baseline)."""
    latest = latest_version(page.versions)
    if latest is None:
        raise PageNotFound(f"{page.benchmark.name}: no version scored yet")
    candidate = page.version(page.query("candidate") or latest.key)
    baseline_key = page.query("baseline") or page.baselines.get(candidate.key)
    if baseline_key is None:
        return {"candidate": candidate, "baseline": None, "comparison": None}
    baseline = page.version(baseline_key)
    comparison = side_by_side(
        page.reader,
        page.benchmark.name,
        baseline,
        candidate,
        page.benchmark.fail_on,
        page.not_deciding,
    )
    # The banner's gate and exit code: the outcome's, as `compare` gives them for this pair.
    outcome = version_verdicts(
        page.reader,
        page.benchmark.name,
        page.benchmark,
        page.versions,
        {candidate.key: baseline.key},
        page.not_deciding,
    )[candidate.key].outcome
    result = comparison.result
    chart = interval_chart(
        [
            (f"baseline {baseline.label}", result.baseline_overall),
            (f"candidate {candidate.label}", result.candidate_overall),
        ],
        "Pass rate over the cases both versions have, with 95% intervals",
    )
    return {
        "candidate": candidate,
        "baseline": baseline,
        "comparison": comparison,
        "outcome": outcome,
        "moved": moved(comparison),
        "chart": chart,
        "guidance": GUIDANCE,
    }


def variants(page: PageRequest) -> Mapping[str, Any]:
    """A workflow version and its variants: the matrix and the cost/pass-rate frontier."""
    bases = families(page.versions)
    asked = page.query("base")
    base = page.version(asked) if asked else (bases[-1] if bases else None)
    if base is not None and base.base_hash is not None:  # a variant named: its workflow's
        base = find_version(page.versions, base.base_hash)
    matrix = (
        variants_matrix(
            page.reader,
            page.benchmark.name,
            page.benchmark,
            base,
            page.versions,
            page.not_deciding,
        )
        if base
        else None
    )
    return {
        "bases": bases,
        "base": base,
        "matrix": matrix,
        "frontier": frontier_chart(matrix) if matrix else None,
    }


def red_team(page: PageRequest) -> Mapping[str, Any]:
    """Breach rates per vulnerability and attack across versions; one version's attacks."""
    history = breach_history(page.reader, page.benchmark.name, page.versions)
    asked = page.query("version")
    played = list(history.versions)
    chosen = page.version(asked) if asked else (played[-1] if played else None)
    section = None
    results = []
    if chosen is not None:
        results = attacks(page.reader, page.benchmark.name, chosen)
        rates = model_rows(
            page.reader,
            BreachRate,
            page.benchmark.name,
            "workflow_hash = ?",
            [chosen.workflow_hash],
        )
        before = next((row.baseline_hash for row in rates if row.baseline_hash), None)
        baseline = find_version(page.versions, before) if before else None
        section = red_team_report(
            rates,
            results,
            attacks(page.reader, page.benchmark.name, baseline) if baseline else None,
            page.benchmark.fail_on,
        )
    return {"history": history, "chosen": chosen, "section": section, "results": results}


def attack_page(page: PageRequest) -> Mapping[str, Any]:
    """One attack played on a version: its conversation, tool calls, breach and reason."""
    shown = page.version()
    result_id = str(page.request.path_params["result_id"])
    found = attack(page.reader, page.benchmark.name, shown, result_id)
    if found is None:
        raise PageNotFound(f"{page.benchmark.name} {shown.key}: no attack {result_id!r}")
    return {"version": shown, "result": found, "turns": attack_turns(found, WHOLE, WHOLE)}


_BENCHMARK = "/benchmarks/{benchmark}"
_VERSION = _BENCHMARK + "/versions/{version}"
_REVIEW = _BENCHMARK + "/review"

PAGES: tuple[Page, ...] = (
    Page("/", "home", "home.html.j2", home, nav="Benchmarks"),
    Page(_BENCHMARK, "benchmark", "benchmark.html.j2", benchmark, tab="Versions"),
    Page(_BENCHMARK + "/compare", "compare", "compare.html.j2", compare, tab="Compare"),
    Page(_BENCHMARK + "/variants", "variants", "variants.html.j2", variants, tab="Variants"),
    Page(_BENCHMARK + "/red-team", "red_team", "red_team.html.j2", red_team, tab="Red team"),
    Page(_VERSION, "version", "version.html.j2", version),
    Page(_VERSION + "/cases/{row_id:path}", "case", "case.html.j2", case),
    Page(_VERSION + "/attacks/{result_id:path}", "attack", "attack.html.j2", attack_page),
    # The review queue: the runs a person labels, one at a time, the judge's verdicts
    # withheld until they have (workspace.review).
    Page("/review", "review_home", "review_home.html.j2", review.home, nav="Review"),
    Page(_REVIEW, "review", "review.html.j2", review.queue, tab="Review"),
    Page(_REVIEW + "/runs/{run_id:path}", "review_run", "review.html.j2", review.run),
)

# The forms the pages post: they write people's labels and review queues, never results.
ACTIONS: tuple[Action, ...] = (
    Action("/review/reviewer", "review_reviewer", review_actions.set_reviewer),
    Action(_REVIEW + "/prepare", "review_prepare", review_actions.prepare),
    Action(_REVIEW + "/label", "review_label", review_actions.label),
    Action(_REVIEW + "/skip", "review_skip", review_actions.skip),
    Action(_REVIEW + "/undo", "review_undo", review_actions.undo),
)
