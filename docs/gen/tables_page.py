"""The stored tables' reference page, written from their row models (``TableRow``)."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

from markdown_text import code, first_paragraph, listed, table

from n8n_deepeval_pipeline.online.scoring import OnlineScore
from n8n_deepeval_pipeline.online.windows import DaySummary
from n8n_deepeval_pipeline.tables.frames import JSON_TEXT, column_kinds
from n8n_deepeval_pipeline.tables.rows import TableRow

# The columns' stored types, as DuckDB and PostgreSQL readers see them.
_KINDS = {
    "string": "text",
    "Int64": "integer",
    "Float64": "number",
    "boolean": "boolean",
    "datetime64[us, UTC]": "timestamp (UTC)",
    JSON_TEXT: "JSON text",
}
ONLINE = (OnlineScore, DaySummary)


def row_models() -> list[type[TableRow]]:
    """Every table's row model: the benchmark's tables, then the online ones."""
    found: list[type[TableRow]] = []
    pending = list(TableRow.__subclasses__())
    while pending:
        model = pending.pop(0)
        found.append(model)
        pending += model.__subclasses__()
    return [model for model in found if model not in ONLINE] + list(ONLINE)


def _values(annotation: Any) -> list[str]:
    """The values a Literal column may hold (none for other columns)."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [value for arg in get_args(annotation) for value in _values(arg)]
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    return []


def _nullable(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


def section(model: type[TableRow]) -> str:
    """One table: what a row is, and a row per column."""
    kinds = column_kinds(model)
    rows = []
    for name, field in model.model_fields.items():
        kind = _KINDS[kinds[name]]
        values = _values(field.annotation)
        if values:
            kind += ": " + listed([code(value) for value in values])
        rows.append(
            (
                code(name),
                kind,
                "yes" if _nullable(field.annotation) or field.annotation is Any else "no",
                field.description or "",
            )
        )
    return "\n".join(
        [
            f"## {model.table}\n",
            first_paragraph(model.__doc__) + f" (`{model.__name__}`)\n",
            table(["column", "type", "null", "what"], rows),
        ]
    )


def page() -> str:
    """The tables' page."""
    intro = (
        "# Tables\n\n"
        "Every table the pipeline stores, with its columns, written from the row models "
        "(`tables/rows.py`, and `online/` for production traffic) when the site is built. "
        "A table is `<benchmark>.<table>` in the results database (DuckDB by default, "
        "PostgreSQL in the `distributed` and `kubernetes` profiles); every row carries "
        "the full `workflow_hash`, and a partition's rows are those whose hash starts "
        "with its 12-hex key. Re-materialising a partition replaces its rows in one "
        "transaction. Lists and objects are stored as JSON text.\n\n"
        "The online tables are partitioned by UTC day instead, and `online_scores` rows "
        "are upserted by `score_id`. The n8n Data Table sink writes `run_aggregates` and "
        "`consistency_stats` with the seed's camelCase names (`runId`, `overallScore`, …) "
        "unless the benchmark renames them.\n"
    )
    return intro + "\n" + "\n".join(section(model) for model in row_models())
