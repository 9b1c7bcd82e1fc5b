"""The report's variants section: the frontier chart and the matrix, and the workflow's spend."""

import re

import pytest

from n8n_deepeval_pipeline.report import render_html
from n8n_deepeval_pipeline.summary.workflow_usage import WorkflowUsage
from tests.report.sample import sample_report
from tests.summary.test_variant_matrix import family_matrix

USAGE = WorkflowUsage(
    runs=24, measured_runs=24, prompt_tokens=24_000, completion_tokens=2_400, estimated=False,
    tokens_per_run=1_100, cost_per_run_usd=0.000412, cost_usd=0.009888, unpriced_models=[],
    latency_p50_s=1.24, latency_p95_s=3.5, nodes=[],
)  # fmt: skip


@pytest.fixture(scope="module")
def html():
    report = sample_report(with_baseline=False)
    headline = report.headline.model_copy(update={"workflow": USAGE})
    return render_html(
        report.model_copy(update={"variants": family_matrix(), "headline": headline})
    )


def _section(html, name):
    return html[html.index(f'<section id="{name}">') : html.index("</section>", html.index(name))]


def test_the_workflows_own_spend_is_a_headline_tile(html):
    tile = html[html.index("Workflow's models") :][:600]
    assert "$0.000412" in tile and "1,100 tokens over 24 runs" in tile
    assert "latency p50 1.24 s · p95 3.50 s" in tile


def test_the_frontier_chart_places_priced_versions_and_names_the_others(html):
    section = _section(html, "variants")
    (chart,) = re.findall(r"<svg.*?</svg>", section, re.S)
    assert "Cost per run against pass rate" in chart
    points = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', chart)
    assert len(points) == 2  # base and nano; terse has no price
    (base_x, base_y), (nano_x, nano_y) = points
    assert float(nano_x) < float(base_x)  # nano is cheaper
    assert float(base_y) < float(nano_y)  # base passes more: higher up
    assert "base 83%" in chart and "nano 50%" in chart
    assert "not placed (no price for their models): terse" in chart
    assert chart.count("<polyline") == 1  # the frontier, base and nano joined


def test_the_matrix_has_a_row_per_version_with_win_rates_spend_and_verdicts(html):
    section = _section(html, "variants")
    rows = re.findall(r"<tr[^>]*>\s*<td><strong>(\w+)</strong>(.*?)</tr>", section, re.S)
    assert [name for name, _ in rows] == ["base", "nano", "terse"]
    cells = dict(rows)
    assert cells["base"].count('class="chip">frontier') == 1
    assert "opponent" in cells["base"] and "the base" in cells["base"]
    assert "33.3%" in cells["nano"] and "4/12" in cells["nano"]  # the arena's win rate
    assert 'class="badge regression"' in cells["nano"]
    assert "unpriced" in cells["terse"] and "frontier" not in cells["terse"]
    assert '<a href="#variants">Variants</a>' in html


def test_costs_per_run_keep_three_significant_digits_and_the_axis_ends_on_a_round_value():
    from n8n_deepeval_pipeline.report.variant_charts import nice_top
    from n8n_deepeval_pipeline.summary.workflow_usage import per_run_money

    assert [per_run_money(v) for v in (2.678e-05, 0.0004469, 0.0123, 1.2345, 0.0)] == [
        "$0.0000268",
        "$0.000447",
        "$0.0123",
        "$1.23",
        "$0",
    ]
    assert [nice_top(v) for v in (0.000447, 0.0002, 0.00021, 3.1)] == pytest.approx(
        [0.0005, 0.0002, 0.00025, 5.0]
    )


def test_a_variant_without_results_of_a_head_to_head_metric_is_not_called_its_opponent():
    """A report written before terse was scored showed "opponent" in its arena cell; only
    the version the metric is against (base) is the opponent."""
    matrix = family_matrix()
    terse = matrix.rows[2]
    unscored = [
        cell.model_copy(update={"results": 0, "wins": None}) if cell.against else cell
        for cell in terse.metrics
    ]
    rows = [*matrix.rows[:2], terse.model_copy(update={"metrics": unscored})]
    report = sample_report(with_baseline=False)
    page = render_html(
        report.model_copy(update={"variants": matrix.model_copy(update={"rows": rows})})
    )
    cells = dict(re.findall(r"<tr[^>]*>\s*<td><strong>(\w+)</strong>(.*?)</tr>", page, re.S))
    assert "opponent" in cells["base"] and "opponent" not in cells["terse"]
