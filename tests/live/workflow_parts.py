"""Nodes and links of the workflows the live tests create in n8n, written short."""

from __future__ import annotations

import uuid
from typing import Any


def node(name: str, kind: str, version: float, parameters: dict[str, Any], **extra: Any) -> Any:
    """A node as n8n's API takes it (a fresh id, placed at the origin)."""
    return {"id": str(uuid.uuid4()), "name": name, "type": kind, "typeVersion": version,
            "position": [0, 0], "parameters": parameters, **extra}  # fmt: skip


def link(target: str, kind: str = "main") -> dict[str, Any]:
    """One connection of ``kind`` into ``target``, as a source's ``connections`` entry."""
    return {kind: [[{"node": target, "type": kind, "index": 0}]]}
