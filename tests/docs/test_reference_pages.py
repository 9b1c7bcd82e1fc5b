"""The reference pages say what the code holds: every field, metric, code, variable, column."""

import json
import re
import sys
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema
from n8n_deepeval_pipeline.console.exits import EXIT_CODES
from n8n_deepeval_pipeline.environment_variables import VARIABLES
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.workflow.checks import CHECKS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "gen"))

import benchmark_file_page  # noqa: E402
import environment_page  # noqa: E402
import exit_codes_page  # noqa: E402
import metric_catalog_page  # noqa: E402
import tables_page  # noqa: E402
import workflow_checks_page  # noqa: E402


def sections(page: str, level: str = "## ") -> dict[str, str]:
    """Each section of a page by its anchor, or its title when it has none."""
    found = {}
    for part in page.split("\n" + level)[1:]:
        title, _, body = part.partition("\n")
        anchor = re.search(r"\{#([\w-]+)\}", title)
        found[anchor.group(1) if anchor else title.strip()] = body
    return found


def rows(section: str) -> dict[str, list[str]]:
    """A section's table rows by their first cell (its code span's text)."""
    found = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            found[cells[0].strip("`")] = cells[1:]
    return found


def test_the_benchmark_page_has_every_field_of_every_object_with_its_type_and_default():
    schema = benchmark_json_schema()
    page = sections(benchmark_file_page.page())
    metric_configs = {ref.split("/")[-1] for ref in _metric_refs(schema)}
    objects = {"Benchmark": schema} | {
        name: spec for name, spec in schema["$defs"].items() if name not in metric_configs
    }
    assert set(page) == {name.lower() for name in objects}
    for name, spec in objects.items():
        fields = rows(page[name.lower()])
        assert list(fields) == list(spec["properties"]), name
        for field, (_, default, _) in fields.items():
            stated = spec["properties"][field]
            if field in spec.get("required", []):
                assert default == "required", (name, field)
            elif isinstance(stated.get("default"), (int, float, str, bool, list)):
                assert json.loads(default.strip("`")) == stated["default"], (name, field)
    top = rows(page["benchmark"])
    assert top["runsPerRow"][:2] == ["integer (≥ 1, ≤ 100)", "`1`"]
    assert top["name"][1] == "required"
    assert rows(page["datasetconfig"])["idColumn"][1] == '`"id"`'


def test_every_field_of_the_benchmark_file_is_described():
    """In the schema editors show too; a metric's `metric` is its slug, said by its section."""
    schema = benchmark_json_schema()
    described = benchmark_file_page.SchemaPage(schema)
    objects = {"Benchmark": schema, **schema["$defs"]}
    undescribed = [
        f"{name}.{field}"
        for name, spec in objects.items()
        for field, field_spec in spec["properties"].items()
        if not described.description(field_spec)
        and not (field == "metric" and name in described.metric_configs)
    ]
    assert undescribed == []


def _metric_refs(schema):
    return schema["properties"]["metrics"]["items"]["discriminator"]["mapping"].values()


def test_the_benchmark_page_links_the_metric_options_to_the_catalog_s_anchors():
    page = benchmark_file_page.page()
    catalog = metric_catalog_page.page()
    anchors = set(re.findall(r"\{#([\w-]+)\}", catalog))
    linked = set(re.findall(r"\(metrics\.md#([\w-]+)\)", page))
    assert linked <= anchors


def test_the_catalog_page_has_a_section_and_a_summary_row_per_metric():
    page = metric_catalog_page.page()
    summary = {
        match.group(1): line
        for line in page.splitlines()
        if (match := re.match(r"\| \[`(\w+)`\]\(#\w+\)", line))
    }
    assert list(summary) == list(CATALOG)
    for slug, entry in CATALOG.items():
        assert f"{{#{slug}}}" in page
        sign = "≤" if entry.direction == "lower_is_better" else "≥"
        threshold = entry.config_model.model_fields["threshold"].default
        assert f"| {sign} {threshold} |" in summary[slug]
        assert f"Passes when score {sign} threshold (default {threshold})." in page
    assert "`pattern`" in summary["pattern_match"].split("|")[-2]
    assert "a judge" not in summary["exact_match"]
    pattern = rows(sections(page, "### ")["pattern_match"])
    assert pattern["pattern"][1] == "required"
    assert pattern["threshold"][1] == "`1.0`"  # its own default, unlike the shared 0.5


def test_the_exit_code_page_and_the_readme_show_the_commands_own_table():
    table = exit_codes_page.exit_code_table()
    assert len(table.strip().splitlines()) == len(EXIT_CODES) + 2
    assert "| `run`, `backfill` | 3 |" in table
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table in readme, "the README's exit codes differ from console/exits.py's"
    assert table in exit_codes_page.page()


def test_the_environment_page_has_every_registered_variable_with_its_default():
    page = environment_page.page()
    for variable in VARIABLES:
        assert f"| `{variable.name}` | {variable.shown_default} |" in page
    assert "| `DEEPEVAL_POOL_SIZE` | `4` |" in page


def test_the_tables_page_has_every_column_of_every_table_with_its_type():
    page = sections(tables_page.page())
    models = tables_page.row_models()
    assert list(page) == [model.table for model in models]
    for model in models:
        columns = rows(page[model.table])
        assert list(columns) == list(model.model_fields), model.table
    scores = rows(page["metric_scores"])
    assert scores["score"][:2] == ["number", "yes"]
    assert scores["success"][:2] == ["boolean", "no"]
    assert scores["judge_scores"][0] == "JSON text"
    assert rows(page["agent_outputs"])["error_kind"][0] == (  # a simulated user's judge too
        "text: `target_error`, `judge_auth`, `judge_error`, `judge_forbidden`, "
        "`judge_invalid_output`, `judge_rate_limited` or `judge_unavailable`"
    )


def test_every_column_is_described():
    undescribed = [
        f"{model.table}.{name}"
        for model in tables_page.row_models()
        for name, field in model.model_fields.items()
        if not field.description
    ]
    assert undescribed == []


def test_the_workflow_checks_page_lists_the_checks_catalog():
    page = workflow_checks_page.page()
    for check in CHECKS:
        assert f"| {check.category} | `{check.check_id}` | {check.description} |" in page


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a | b", "a \\| b"), ("two\n  lines", "two lines")],
)
def test_a_table_cell_holds_any_text_on_one_line(text, expected):
    from markdown_text import cell

    assert cell(text) == expected
