"""The ``dataset_rows`` table from a file (CSV, JSONL, Parquet) or Data Table records.

Mirrors the seed's DeepEval Trigger: filters keep rows whose column equals the value,
then the row cap applies, then every kept row must carry an id. In a simulated benchmark
every row is a conversational golden: the golden's fields that ``columnMapping`` leaves
out are read from columns of their own names, and a row without a scenario is refused.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from n8n_deepeval_pipeline.benchmark.config import DatasetConfig, MappedField
from n8n_deepeval_pipeline.benchmark.simulation import GOLDEN_FIELDS
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError, DataFileError, FileRole
from n8n_deepeval_pipeline.data_limits import DataLimitError, id_problem, loads_json, value_problem
from n8n_deepeval_pipeline.n8n_data.conversation import ConversationShapeError, parse_conversation
from n8n_deepeval_pipeline.n8n_data.json_fields import as_text
from n8n_deepeval_pipeline.tables.data_files import (
    NotAJsonObjectError,
    json_object,
    numbered_lines,
    read_bytes,
    utf8_text,
)
from n8n_deepeval_pipeline.tables.rows import DatasetRow

_LIST_FIELDS = ("context", "retrievalContext", "expectedTools", "inputImages")
_JSON_FIELDS = ("turns",)
# Row model field of each mapped field (the seed's camelCase names → snake_case columns).
_COLUMN_OF: dict[MappedField, str] = {
    "input": "input",
    "expectedOutput": "expected_output",
    "context": "context",
    "retrievalContext": "retrieval_context",
    "expectedTools": "expected_tools",
    "label": "label",
    "turns": "turns",
    "chatbotRole": "chatbot_role",
    "expectedOutcome": "expected_outcome",
    "scenario": "scenario",
    "userDescription": "user_description",
    "inputImages": "input_images",
}


def read_table(config: DatasetConfig) -> list[dict[str, Any]]:
    """All records of the dataset file, values as JSON-friendly Python objects."""
    path = config.path
    if path is None:
        raise BenchmarkConfigError(Path("dataset"), ["dataset.path: no file to read"])
    role = _role(config)
    data = read_bytes(path, role)
    if not data.strip():
        raise DataFileError(path, ["the file is empty"], role)
    fmt = config.resolved_format
    # Decoded here, not by pandas: a wrong encoding is then named by line, not byte offset.
    text = "" if fmt == "parquet" else utf8_text(data, path, role)
    if fmt == "jsonl":
        return _jsonl_records(text, path, role)
    try:
        if fmt == "csv":
            frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        else:
            frame = pd.read_parquet(io.BytesIO(data))
    except (ValueError, OSError) as error:
        raise DataFileError(path, [f"cannot read as {fmt}: {error}"], role) from None
    return [_plain(record) for record in frame.to_dict(orient="records")]


def _jsonl_records(text: str, path: Path, role: FileRole) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    for number, line in numbered_lines(text):
        try:
            records.append(_plain(json_object(line)))
        except NotAJsonObjectError as error:
            problems.append(f"line {number}: {error}")
    if problems:
        raise DataFileError(path, problems, role)
    return records


def _plain(record: dict[Any, Any]) -> dict[str, Any]:
    """Drop pandas' NaN placeholders and numpy scalars."""
    plain: dict[str, Any] = {}
    for key, value in record.items():
        if hasattr(value, "tolist"):
            value = value.tolist()
        if isinstance(value, float) and math.isnan(value):
            value = None
        plain[str(key)] = value
    return plain


def _matches(record: dict[str, Any], filters: dict[str, Any]) -> bool:
    return all(
        _comparable(record.get(column)) == _comparable(value) for column, value in filters.items()
    )


def _comparable(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def _as_list(value: Any, field: str) -> list[str] | None:
    """A list field from a list (JSONL, Parquet) or from text (CSV).

    Text is read as a JSON array, as comma-separated names for expectedTools, or else
    as one passage.
    """
    if value is None or value == "":
        return None
    if isinstance(value, list):
        return [str(item) for item in value]
    text = str(value).strip()
    if text.startswith("["):
        try:
            parsed = loads_json(text)  # too deep: DataLimitError, said for its row
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list):
            return [str(item) for item in parsed]
    if field == "expectedTools":
        return [name.strip() for name in text.split(",") if name.strip()]
    return [text]


def _as_json(value: Any) -> Any:
    """Structured values stay as they are; text (from CSV) is parsed as JSON when it is."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return loads_json(value)  # too deep: DataLimitError, said for its row
        except json.JSONDecodeError:
            return value
    return None if value == "" else value


def map_row(
    record: dict[str, Any], config: DatasetConfig, mapping: dict[MappedField, str] | None = None
) -> dict[str, Any]:
    """The row model's fields from source columns, per ``columnMapping`` (or ``mapping``).

    A column whose JSON text nests too deep is a ``DataLimitError`` naming the column.
    """
    mapped: dict[str, Any] = {}
    for field, column in (config.column_mapping if mapping is None else mapping).items():
        value = record.get(column)
        try:
            if field in _LIST_FIELDS:
                value = _as_list(value, field)
            elif field in _JSON_FIELDS:
                value = _as_json(value)
            else:
                value = as_text(value)
        except DataLimitError as error:
            raise DataLimitError(f"{column}: {error}") from None
        mapped[_COLUMN_OF[field]] = value
    return mapped


def load_dataset_rows(
    config: DatasetConfig,
    workflow_hash: str,
    records: list[dict[str, Any]] | None = None,
    conversational: bool = False,
) -> list[DatasetRow]:
    """Rows after filters and the row cap, each with a unique id.

    ``records`` are a Data Table's rows as n8n returned them; without them the file is read.
    ``conversational``: every row is a conversational golden (the benchmark simulates users).
    """
    records = read_table(config) if records is None else [_plain(r) for r in records]
    _check_values(config, records)
    columns = set().union(*(record.keys() for record in records)) if records else set()
    _check_columns(config, columns)
    kept = [
        (position, record)
        for position, record in enumerate(records, start=1)
        if _matches(record, config.filters)
    ]
    if config.row_limit is not None:
        kept = kept[: config.row_limit]
    mapping = _golden_mapping(config, columns) if conversational else config.column_mapping
    rows = _with_ids(kept, config, workflow_hash, mapping)
    if conversational:
        _check_goldens(rows, config, mapping)
    return rows


def _golden_mapping(config: DatasetConfig, columns: set[str]) -> dict[MappedField, str]:
    """``columnMapping``, plus the golden's fields it leaves out read by their own names."""
    mapping = dict(config.column_mapping)
    for field in GOLDEN_FIELDS:
        if field not in mapping and field in columns:
            mapping[field] = field
    return mapping


def _check_goldens(
    rows: list[DatasetRow], config: DatasetConfig, mapping: dict[MappedField, str]
) -> None:
    """Every row has the scenario a simulated user plays (DeepEval requires one).

    And its opening turns, if any, read as a conversation, as the simulation reads them.
    """
    column = mapping.get("scenario", "scenario")
    problems = [
        f"row {row.position} (id {row.row_id!r}): a conversational golden needs a scenario "
        f"(column {column!r} is {'empty' if column in row.raw else 'missing'}; "
        "dataset.columnMapping.scenario names another column)"
        for row in rows
        if not (row.scenario or "").strip()
    ]
    for row in rows:
        try:
            parse_conversation(row.turns)
        except ConversationShapeError as error:
            problems.append(
                f"row {row.position} (id {row.row_id!r}): the opening turns (column "
                f"{mapping.get('turns', 'turns')!r}) cannot be read: {error}"
            )
    if problems:
        raise DataFileError(_where(config), problems, _role(config))


def _check_values(config: DatasetConfig, records: list[dict[str, Any]]) -> None:
    """Every record nested at most ``data_limits.MAX_DEPTH`` levels, its text real text."""
    problems = [
        f"row {position}: {problem}"
        for position, record in enumerate(records, start=1)
        if (problem := value_problem(record)) is not None
    ]
    if problems:
        raise DataFileError(_where(config), problems, _role(config))


def _check_columns(config: DatasetConfig, columns: set[str]) -> None:
    available = ", ".join(sorted(columns)) or "(none)"
    problems = [
        f"dataset.columnMapping.{field}: column {column!r} is not in the file "
        f"(columns: {available})"
        for field, column in config.column_mapping.items()
        if column not in columns
    ]
    problems += [
        f"dataset.filters.{column}: column {column!r} is not in the file (columns: {available})"
        for column in config.filters
        if column not in columns
    ]
    if config.id_column not in columns:
        problems.append(
            f"dataset.idColumn: column {config.id_column!r} is not in the file "
            f"(columns: {available})"
        )
    if problems:
        raise DataFileError(_where(config), problems, _role(config))


def _where(config: DatasetConfig) -> Path:
    return config.path or Path(config.source)


def _role(config: DatasetConfig) -> FileRole:
    return FileRole("dataset", "dataset.path" if config.path else "dataset.dataTable")


def _with_ids(
    kept: list[tuple[int, dict[str, Any]]],
    config: DatasetConfig,
    workflow_hash: str,
    mapping: dict[MappedField, str],
) -> list[DatasetRow]:
    rows: list[DatasetRow] = []
    seen: dict[str, int] = {}
    problems: list[str] = []
    for position, record in kept:
        row_id = _comparable(record.get(config.id_column)).strip()
        if not row_id:
            problems.append(f"row {position}: no id in column {config.id_column!r}")
            continue
        if row_id in seen:
            problems.append(f"row {position}: id {row_id!r} repeats row {seen[row_id]}")
            continue
        unfit = id_problem(row_id)
        if unfit is not None:
            problems.append(f"row {position}: id {row_id!r} in column {config.id_column!r} {unfit}")
            continue
        seen[row_id] = position
        try:
            fields = map_row(record, config, mapping)
        except DataLimitError as error:
            problems.append(f"row {position} (id {row_id!r}): column {error}")
            continue
        rows.append(
            DatasetRow(
                workflow_hash=workflow_hash,
                row_id=row_id,
                position=position,
                raw=record,
                **fields,
            )
        )
    if problems:
        raise DataFileError(_where(config), problems, _role(config))
    return rows
