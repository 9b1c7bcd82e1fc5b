"""n8n item fields arrive as structures, or as their JSON text (CSV columns, Data Tables)."""

from __future__ import annotations

import json
from typing import Any


def structured(value: Any, what: str, error: type[ValueError]) -> Any:
    """None for an absent value, the parsed JSON for text, the value itself otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as problem:
            raise error(f"{what} is not valid JSON: {problem.msg}") from None
    return value


def as_text(value: Any) -> str | None:
    """Text stays text; any other JSON value becomes its JSON text (an output, a label)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
