"""OpenAI's and Gemini's image nodes: which make an image, and where they put it.

In n8n 2.41 ``@n8n/n8n-nodes-langchain.openAi`` and ``…googleGemini`` have an ``image``
resource whose operation generates an image, edits one, or analyzes one (reads it and
answers in text; the default is to generate). A node that makes an image outputs it as
binary data, under ``options.binaryPropertyOutput`` (``data`` by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from n8n_deepeval_pipeline.workflow.graph import LANGCHAIN, node_type

ImageOperation = Literal["generate", "edit"]
_IMAGE_VENDORS = frozenset({LANGCHAIN + "openAi", LANGCHAIN + "googleGemini"})
_MAKING: dict[str, ImageOperation] = {"generate": "generate", "edit": "edit"}


def image_operation(node: Mapping[str, Any]) -> ImageOperation | None:
    """``generate`` or ``edit`` for a node that makes an image; None for any other."""
    parameters = node.get("parameters") or {}
    if node_type(node) not in _IMAGE_VENDORS or parameters.get("resource") != "image":
        return None
    return _MAKING.get(str(parameters.get("operation", "generate")))


def binary_property(node: Mapping[str, Any]) -> str:
    """The binary property an image node puts its image in."""
    options = (node.get("parameters") or {}).get("options") or {}
    name = options.get("binaryPropertyOutput") if isinstance(options, Mapping) else None
    return str(name) if isinstance(name, str) and name else "data"
