"""Table rows ⇄ DataFrames, as the DuckDB IO manager stores them.

Column types come from the row model, not from pandas' guess, so a column that happens
to be empty in one partition (or a partition with no rows at all) still has the right
type in DuckDB. Fields holding lists, objects or any JSON value are stored as JSON text.
Every table is stored through ``to_frame``: it is where the configured secrets are taken
out of what is stored (a token a webhook echoed in its answer, a key in an error), and a
lone surrogate in a text (a workflow's answer, a judge's reason) becomes U+FFFD.
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin

import pandas as pd

from n8n_deepeval_pipeline.data_limits import real_text
from n8n_deepeval_pipeline.redaction import configured_secrets, redact_values
from n8n_deepeval_pipeline.tables.rows import Row, TableRow

_DTYPES: dict[Any, str] = {
    str: "string",
    int: "Int64",
    float: "Float64",
    bool: "boolean",
    datetime: "datetime64[us, UTC]",
}
JSON_TEXT = "json"  # a column of JSON text (stored as a string)


def _column_kind(annotation: Any) -> str:
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) is Literal:
        return "string"
    if annotation is Any or get_origin(annotation) in (list, dict):
        return JSON_TEXT
    return _DTYPES[annotation]


def column_kinds(model: type[TableRow]) -> dict[str, str]:
    """Column name → pandas dtype (or ``json``), in the model's field order."""
    return {name: _column_kind(field.annotation) for name, field in model.model_fields.items()}


def _to_json(value: Any) -> str | None:
    return (
        None
        if value is None
        else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    )


def storable(value: Any, secrets: list[str]) -> Any:
    """``value`` as it is stored: no configured secret in its text (nested too).

    Nor a lone surrogate: DuckDB takes only UTF-8, and one would refuse the whole table.
    """
    if isinstance(value, str):
        return real_text(redact_values(value, secrets))
    if isinstance(value, dict):
        return {key: storable(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item, secrets) for item in value]
    return value


def to_frame(model: type[Row], rows: list[Row]) -> pd.DataFrame:
    """A DataFrame with one column per field, typed by the model, its text ``storable``."""
    kinds = column_kinds(model)
    json_columns = [name for name, kind in kinds.items() if kind == JSON_TEXT]
    secrets = configured_secrets()
    records = []
    for row in rows:
        record = storable(row.model_dump(), secrets)
        for name in json_columns:
            record[name] = _to_json(record[name])
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=list(kinds))
    dtypes = {name: "string" if kind == JSON_TEXT else kind for name, kind in kinds.items()}
    return frame.astype(dtypes)


class OutdatedTableError(ValueError):
    """A stored table that lacks a column its rows cannot do without."""


def _added_since(model: type[Row], columns: Collection[str], rows: bool) -> dict[str, None]:
    """Nullable columns added since the table was written: they read as NULL.

    ``columns``: the stored table's; ``rows``: whether it has any to read.
    """
    absent = [name for name in model.model_fields if name not in columns]
    required = [name for name in absent if not _nullable(model.model_fields[name].annotation)]
    if required and rows:
        raise OutdatedTableError(
            f"the stored {model.__name__} table has no column {', '.join(required)}: it was "
            "written by an older version of n8n-deepeval-pipeline; materialise this version "
            "again, or move the DuckDB file aside (N8N_DEEPEVAL_DUCKDB picks another)"
        )
    return dict.fromkeys(absent)


def _nullable(annotation: Any) -> bool:
    return annotation is Any or type(None) in get_args(annotation)


def from_frame(model: type[Row], frame: pd.DataFrame) -> list[Row]:
    """Rows of a stored table, validated back into their model."""
    return from_records(model, frame.to_dict(orient="records"), list(frame.columns))


def from_records(
    model: type[Row], records: Iterable[Mapping[Any, Any]], columns: Collection[str]
) -> list[Row]:
    """Rows of a stored table read as column → value records (``columns``: the table's)."""
    records = list(records)
    json_columns = {name for name, kind in column_kinds(model).items() if kind == JSON_TEXT}
    added = _added_since(model, columns, bool(records))
    rows = []
    for record in records:
        values = {**added, **{str(k): None if _is_missing(v) else v for k, v in record.items()}}
        for name in json_columns & values.keys():
            text = values[name]
            if text is not None:
                values[name] = json.loads(text)
        rows.append(model.model_validate(values))
    return rows


def _is_missing(value: Any) -> bool:
    """NaN, NA and NaT as DuckDB hands back NULLs in numeric and time columns."""
    return (
        value is None
        or value is pd.NA
        or value is pd.NaT
        or (isinstance(value, float) and math.isnan(value))
    )
