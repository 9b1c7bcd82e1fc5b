r"""What a value from outside may be: nested at most ``MAX_DEPTH`` levels, its text real text.

Rows, webhook answers and benchmark files reach code that recurses (JSON, pydantic,
Jinja2, DuckDB's JSON) and storage that takes only valid UTF-8. A value nested thousands
of levels deep would end a command in a ``RecursionError``, and a lone UTF-16 surrogate
(JSON's ``"\ud800"``) is no character at all: DuckDB refuses the whole table it is in.
Both are checked here, by a walk that does not recurse, and said with the place they
are in (``input[2].text``). Row ids are identifiers, printed and stored: a control
character or a bidirectional override in one is refused (``id_problem``).
"""

from __future__ import annotations

import json
import re
from typing import Any

# Far deeper than any dataset row, answer or benchmark file (a DAG, a JSON schema: ten or
# so) and far below where recursive code meets Python's recursion limit.
MAX_DEPTH = 100
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# C0 and C1 controls, DEL, the bidirectional overrides, embeddings, isolates and marks.
_NOT_IN_AN_ID = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
DEEPER_THAN_ALLOWED = f"nested deeper than {MAX_DEPTH} levels"
REPLACEMENT = "\ufffd"


class DataLimitError(ValueError):
    """A value is nested too deep or holds no real text; the message says where."""


def _at(path: str) -> str:
    return f" at {path}" if path else ""


def text_problem(text: str, path: str = "") -> str | None:
    """What makes ``text`` no real text (a lone surrogate), or None."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = f"\\u{ord(found.group()):04x}"
    return (
        f"{code}{_at(path)} is half of a UTF-16 surrogate pair, not a character: "
        "write the character itself"
    )


def value_problem(value: Any) -> str | None:
    """What makes ``value`` unfit to pass on (too deep, a lone surrogate), or None."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item, path)
            if problem:
                return problem
            continue
        if not isinstance(item, dict | list | tuple):
            continue
        if depth >= MAX_DEPTH:
            return DEEPER_THAN_ALLOWED + _at(path)
        if isinstance(item, dict):
            for key, child in item.items():
                problem = text_problem(key, path) if isinstance(key, str) else None
                if problem:
                    return problem
                stack.append((child, depth + 1, f"{path}.{key}" if path else str(key)))
        else:
            stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(item))
    return None


def loads_json(text: str) -> Any:
    """The JSON value of ``text``; too deep or not real text is a ``DataLimitError``.

    A malformed text is still ``json.JSONDecodeError``, as ``json.loads`` raises it.
    """
    try:
        value = json.loads(text)
    except RecursionError:  # deeper than the parser goes: far past the limit
        raise DataLimitError(DEEPER_THAN_ALLOWED) from None
    problem = value_problem(value)
    if problem is not None:
        raise DataLimitError(problem)
    return value


def id_problem(row_id: str) -> str | None:
    """What makes a row id unfit to print and store (a control character), or None."""
    found = _NOT_IN_AN_ID.search(row_id) or _SURROGATE.search(row_id)
    if found is None:
        return None
    return (
        f"holds the control character U+{ord(found.group()):04X}, which a terminal would "
        "obey: ids are printed and stored, use letters, digits and punctuation"
    )


def real_text(text: str) -> str:
    """``text`` as storage takes it: a lone surrogate becomes U+FFFD (the replacement)."""
    return _SURROGATE.sub(REPLACEMENT, text)
