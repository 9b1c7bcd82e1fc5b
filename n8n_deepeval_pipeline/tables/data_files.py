"""Bytes, text and JSON lines of the files a benchmark points to (dataset, recorded outputs).

Problems name the line, as an editor counts it, never a byte offset.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.config.errors import DataFileError, FileRole
from n8n_deepeval_pipeline.data_limits import DataLimitError, loads_json


class NotAJsonObjectError(ValueError):
    """A line of a JSONL file is not one JSON object; the message says what is wrong."""


def read_bytes(path: Path, role: FileRole) -> bytes:
    """The file's content; a directory or a missing file is refused by name."""
    if path.is_dir():
        raise DataFileError(path, ["is a directory, not a file"], role)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DataFileError(path, ["file not found"], role) from None
    except OSError as error:
        raise DataFileError(path, [f"cannot read the file: {error.strerror}"], role) from None


def utf8_text(data: bytes, path: Path, role: FileRole) -> str:
    """The text of ``data`` (a byte order mark dropped); another encoding is refused."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        problem = f"line {line}: not UTF-8 text (byte 0x{data[error.start]:02x}): save it as UTF-8"
        raise DataFileError(path, [problem], role) from None


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines with their numbers (only a newline ends a line, as in JSONL)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line


def json_object(line: str) -> dict[str, Any]:
    """One JSONL line's object (nested at most ``data_limits.MAX_DEPTH`` levels, real text)."""
    try:
        value = loads_json(line)
    except json.JSONDecodeError as error:
        raise NotAJsonObjectError(f"not valid JSON: {error.msg} (column {error.colno})") from None
    except DataLimitError as error:
        raise NotAJsonObjectError(str(error)) from None
    if not isinstance(value, dict):
        raise NotAJsonObjectError("must be a JSON object {…}, one record per line")
    return value
