"""The model each language-model node names, as the workflow stores it.

A chat model node keeps its model in ``model`` (a resource locator ``{__rl, mode, value}``
in recent versions, a plain string in older ones) or ``modelName`` (Google Gemini). A
model set by an expression (``={{ … }}``) or left at the node's default is not written
in the workflow: it is unknown here, and its tokens stay unpriced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MODEL_PARAMETERS = ("model", "modelName")


def model_name(node: Mapping[str, Any]) -> str | None:
    """The model a node names, or None (no model parameter, an expression, a default)."""
    parameters = node.get("parameters") or {}
    for name in _MODEL_PARAMETERS:
        value = parameters.get(name)
        if isinstance(value, Mapping) and value.get("__rl") is True:
            value = value.get("value")
        if isinstance(value, str) and value.strip() and not value.startswith("="):
            return value.strip()
    return None


def model_names(workflow: Mapping[str, Any]) -> dict[str, str | None]:
    """Node name → the model it names (None where it names none)."""
    return {str(node.get("name")): model_name(node) for node in workflow.get("nodes") or []}
