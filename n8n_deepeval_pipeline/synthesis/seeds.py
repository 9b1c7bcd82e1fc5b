"""What a synthesis starts from besides a workflow, read with errors that name the place.

Passages (``--from-contexts``), rows to vary (``--from-dataset``) and documents
(``--from-docs``): a problem names the file, the line or row, and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import DatasetConfig
from n8n_deepeval_pipeline.config.errors import DataFileError, FileRole
from n8n_deepeval_pipeline.n8n_data.json_fields import as_text
from n8n_deepeval_pipeline.synthesis.request import Seed
from n8n_deepeval_pipeline.tables.data_files import numbered_lines, read_bytes, utf8_text
from n8n_deepeval_pipeline.tables.dataset_file import read_table

_CONTEXTS = FileRole("contexts", "--from-contexts")
_DATASET = FileRole("dataset", "--from-dataset")
_DOCS = FileRole("document", "--from-docs")
# The document types DeepEval's chunker loads (its loader mapping).
_DATASET_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown", ".mdx", ".pdf", ".docx")


def read_contexts(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, passages) of each line of a JSONL file: one JSON list of strings a line."""
    text = utf8_text(read_bytes(path, _CONTEXTS), path, _CONTEXTS)
    found: list[tuple[int, list[str]]] = []
    problems: list[str] = []
    for number, line in numbered_lines(text):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not valid JSON: {error.msg} (column {error.colno})")
            continue
        if not isinstance(value, list) or not value:
            problems.append(f'line {number}: must be a non-empty JSON list of passages, ["…", …]')
        elif bad := [index for index, item in enumerate(value) if not _passage(item)]:
            problems.append(
                f"line {number}: passage [{bad[0]}] is not a non-empty string "
                f"({len(bad)} such passage(s) on this line)"
            )
        else:
            found.append((number, [str(item) for item in value]))
    if not found and not problems:
        problems.append("the file has no line of passages")
    if problems:
        raise DataFileError(path, problems, _CONTEXTS)
    return found


def _passage(item: Any) -> bool:
    return isinstance(item, str) and bool(item.strip())


def read_seeds(path: Path, conversational: bool) -> list[Seed]:
    """The rows of a dataset file (JSONL, CSV or Parquet) as goldens to vary.

    A row's text is its ``input`` (``scenario`` for conversational goldens); ``context``
    (a list, or its JSON text) and ``expectedOutput`` (``expectedOutcome``) come along.
    """
    fmt = _DATASET_FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(_DATASET_FORMATS)
        raise DataFileError(path, [f"a dataset is a {known} file"], _DATASET)
    try:
        records = read_table(DatasetConfig(path=path, format=fmt))
    except DataFileError as error:
        raise DataFileError(path, error.problems, _DATASET) from None
    text_column, expected_column = (
        ("scenario", "expectedOutcome") if conversational else ("input", "expectedOutput")
    )
    seeds: list[Seed] = []
    problems: list[str] = []
    for position, record in enumerate(records, start=1):
        where = f"row {position}"
        text = as_text(record.get(text_column))
        if not text or not text.strip():
            problems.append(f"{where}: no {text_column!r} (columns: {', '.join(sorted(record))})")
            continue
        try:
            context = _context(record.get("context"))
        except ValueError as error:
            problems.append(f"{where}: context: {error}")
            continue
        expected = as_text(record.get(expected_column)) or None
        row_id = record.get("rowId") or record.get("id")
        origin = f"{path.name} row {row_id}" if row_id else f"{path.name} {where}"
        seeds.append(Seed(text=text, context=context, expected=expected, origin=origin))
    if problems:
        raise DataFileError(path, problems, _DATASET)
    if not seeds:
        raise DataFileError(path, ["the file has no row"], _DATASET)
    return seeds


def _context(value: Any) -> list[str] | None:
    """A row's passages: a list, the JSON text of one, or one passage as text."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"not a valid JSON list: {error.msg}") from None
    if isinstance(value, list):
        if not all(_passage(item) for item in value):
            raise ValueError("every passage must be a non-empty string")
        return [str(item) for item in value] or None
    if isinstance(value, str):
        return [value]
    raise ValueError(f"must be a list of passages, not {type(value).__name__}")


def check_documents(paths: list[Path]) -> list[str]:
    """The documents' absolute paths; a missing file or a type DeepEval cannot load is refused."""
    problems: dict[Path, list[str]] = {}
    for path in paths:
        if not path.is_file():
            problems.setdefault(path, []).append("file not found")
        elif path.suffix.lower() not in DOCUMENT_SUFFIXES:
            kind = path.suffix or "files without a suffix"
            loads = ", ".join(DOCUMENT_SUFFIXES)
            problems.setdefault(path, []).append(f"DeepEval loads {loads} documents, not {kind}")
    if problems:
        first, found = next(iter(problems.items()))
        others = [f"{path}: {', '.join(text)}" for path, text in list(problems.items())[1:]]
        raise DataFileError(first, found + others, _DOCS)
    return [str(path.resolve()) for path in paths]
