"""The workflowHash of n8n-nodes-deepeval: SHA-256 of a canonical JSON of the workflow graph.

Only what changes behaviour is hashed: node name, type, typeVersion, disabled and
parameters, and the connections. Layout, ids, credentials, settings, tags and pinData
are left out, so moving a node or rotating a credential keeps the same hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from n8n_deepeval_pipeline.workflow.canonical_json import stringify

_KEPT_NODE_FIELDS = ("name", "type", "typeVersion")
VERSION_KEY_LENGTH = 12
"""Hex digits of a version key: git-style, short enough for plots and lists, 48 bits."""


class WorkflowShapeError(ValueError):
    """The JSON is not an n8n workflow (export file or API response)."""


def extract_workflow(document: Any) -> Mapping[str, Any]:
    """Find the workflow in an export file, a one-item export list or an API response."""
    if isinstance(document, list):
        if len(document) != 1:
            raise WorkflowShapeError(
                f"expected one workflow, found a list of {len(document)}; export a single workflow"
            )
        document = document[0]
    if isinstance(document, Mapping) and "nodes" not in document:
        inner = document.get("data")
        if isinstance(inner, Mapping) and "nodes" in inner:
            document = inner
    if not isinstance(document, Mapping) or not isinstance(document.get("nodes"), list):
        raise WorkflowShapeError("no 'nodes' list: this is not an n8n workflow export")
    connections = document.get("connections", {})
    if not isinstance(connections, Mapping):
        raise WorkflowShapeError("'connections' must be an object")
    return document


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def _canonical_node(node: Mapping[str, Any]) -> dict[str, Any]:
    canonical = {field: node[field] for field in _KEPT_NODE_FIELDS if field in node}
    if node.get("disabled") is True:
        canonical["disabled"] = True
    canonical["parameters"] = _sorted_keys(node.get("parameters") or {})
    return canonical


def canonical_workflow(workflow: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical graph that is hashed: sorted nodes with kept fields, sorted connections."""
    workflow = extract_workflow(workflow)
    nodes = [node for node in workflow["nodes"] if isinstance(node, Mapping)]
    ordered = sorted(nodes, key=lambda node: str(node.get("name", "")))
    return {
        "nodes": [_canonical_node(node) for node in ordered],
        "connections": _sorted_keys(workflow.get("connections") or {}),
    }


def canonical_workflow_json(workflow: Mapping[str, Any]) -> str:
    """The canonical graph as compact JSON text, exactly what is hashed."""
    return stringify(canonical_workflow(workflow))


def workflow_hash(workflow: Mapping[str, Any]) -> str:
    """Lower-case hex SHA-256 of the canonical graph's UTF-8 JSON."""
    return hashlib.sha256(canonical_workflow_json(workflow).encode("utf-8")).hexdigest()


REDACTED_PATH = "<webhook path hidden>"


def version_key(workflow_hash: str) -> str:
    """The short name of a workflow version (its partition key): the hash's first 12 hex."""
    return workflow_hash[:VERSION_KEY_LENGTH]


def without_webhook_paths(workflow: Mapping[str, Any]) -> dict[str, Any]:
    """The workflow with every trigger's webhook path hidden (a path can be a URL's secret).

    What the snapshot stores; the hash is always taken from the workflow as it is.
    """
    nodes = []
    for node in workflow.get("nodes") or []:
        parameters = node.get("parameters") or {}
        if "webhookId" in node and "path" in parameters:
            node = {**node, "parameters": {**parameters, "path": REDACTED_PATH}}
        nodes.append(node)
    return {**workflow, "nodes": nodes}
