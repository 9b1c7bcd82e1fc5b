"""The harness copy of a workflow: n8n's config evals, run from the start to the end node.

An eval names a ``startNodeName`` (the first node the trigger feeds, never the trigger)
and an ``endNodeName``. The copy keeps the nodes on the main path from the start node to
the end node and every sub-node wired into them (models, tools, memories, parsers);
the node that fed the start node is replaced by a Webhook → Code pair where the Code node
carries the old node's *name* and outputs what that trigger outputs (a Webhook trigger
``{headers, params, query, body}``, a Chat Trigger ``{sessionId, action, chatInput}``, …),
so expressions such as ``$json.body.chatInput`` or
``$('When chat message received').item.json.chatInput`` resolve as in production;
everything after the end node is cut, so the webhook answers with the end node's output
(an end node that makes an image, OpenAI's or Gemini's, answers with the image itself).
A Respond to Webhook node that ends the copy answers as in production (the stand-in
webhook waits for it); one before the end is a pass-through of the same name, since n8n
refuses to run a Respond to Webhook its webhook does not wait for, and the copy's answer
is the end node's. Nodes named in ``replacements`` (mocks) are swapped in by name; a node
replaced by several (an MCP Client Tool's stand-in per tool) gives each its links out.
Credentials stay referenced by id: nothing here reads them.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from n8n_deepeval_pipeline.workflow.graph import node_type
from n8n_deepeval_pipeline.workflow.image_nodes import binary_property, image_operation

WEBHOOK_TRIGGER = "n8n-nodes-base.webhook"
_TRIGGER_TYPES = frozenset({WEBHOOK_TRIGGER, "n8n-nodes-base.start"})
HARNESS_WEBHOOK = "n8n-deepeval harness webhook"
# The request body's field that carries per-row mock responses; never passed to the workflow.
MOCKS_FIELD = "__n8nDeepevalMocks"
# The trigger's stand-in passes the request body on (without the mocks), as the trigger
# would its output; a Webhook trigger's output wraps the body with the request's parts.
_BODY = f"const {{ {MOCKS_FIELD}: _mocks, ...body }} = request.body ?? {{}};"
_STAND_IN_CODE = f"const request = $input.first().json;\n{_BODY}\nreturn [{{ json: body }}];"
_WEBHOOK_STAND_IN_CODE = (
    f"const request = $input.first().json;\n{_BODY}\n"
    "return [{ json: { headers: request.headers, params: request.params, "
    "query: request.query, body } }];"
)
_CHAT_TRIGGER = "@n8n/n8n-nodes-langchain.chatTrigger"
_FORM_TRIGGER = "n8n-nodes-base.formTrigger"
_EXECUTE_WORKFLOW_TRIGGER = "n8n-nodes-base.executeWorkflowTrigger"
_RESPOND_TO_WEBHOOK = "n8n-nodes-base.respondToWebhook"


def is_trigger(node: dict[str, Any]) -> bool:
    """Whether the node starts executions (chat, webhook, form, schedule, app triggers)."""
    node_type = str(node.get("type", ""))
    return node_type in _TRIGGER_TYPES or node_type.lower().endswith("trigger")


def _main_links(workflow: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(source, target, target input index) of every main connection."""
    links = []
    for source, outputs in (workflow.get("connections") or {}).items():
        for branch in (outputs or {}).get("main") or []:
            for link in branch or []:
                links.append((source, link["node"], int(link.get("index", 0))))
    return links


def _sub_node_links(workflow: dict[str, Any]) -> list[tuple[str, str]]:
    """(sub-node, parent) of every non-main connection (ai_languageModel, ai_tool, …)."""
    links: list[tuple[str, str]] = []
    for source, outputs in (workflow.get("connections") or {}).items():
        for kind, branches in (outputs or {}).items():
            if kind == "main":
                continue
            for branch in branches or []:
                links.extend((source, link["node"]) for link in branch or [])
    return links


def _reachable(start: str, end: str, links: list[tuple[str, str, int]]) -> set[str]:
    """Nodes on a main path from ``start`` that stop at ``end`` (nothing after it)."""
    after = defaultdict(list)
    for source, target, _ in links:
        after[source].append(target)
    seen, frontier = {start}, [start]
    while frontier:
        node = frontier.pop()
        if node == end:
            continue
        for target in after[node]:
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def check_start_and_end(workflow: dict[str, Any], start: str, end: str) -> list[str]:
    """What is wrong with the pair, in the config evals' plain words (empty when fine)."""
    nodes = {node["name"]: node for node in workflow.get("nodes") or []}
    problems = [
        f'{role} node "{name}" does not exist in the workflow'
        for role, name in (("start", start), ("end", end))
        if name not in nodes
    ]
    if problems:
        return problems
    links = _main_links(workflow)
    if is_trigger(nodes[start]):
        problems.append(f'start node "{start}" is a trigger: name the first node the trigger feeds')
    elif not any(target == start for _, target, _ in links):
        problems.append(f'start node "{start}" has no incoming connection')
    if end not in _reachable(start, end, links):
        problems.append(f'end node "{end}" cannot be reached from start node "{start}"')
    return problems


def feeder(workflow: dict[str, Any], start: str) -> dict[str, Any]:
    """The node that feeds the start node (the trigger the stand-in replaces)."""
    name = next(source for source, target, _ in _main_links(workflow) if target == start)
    return next(node for node in workflow["nodes"] if node["name"] == name)


def kept_nodes(workflow: dict[str, Any], start: str, end: str) -> set[str]:
    """The names of the nodes the copy keeps: the path and every sub-node wired into it."""
    kept = _reachable(start, end, _main_links(workflow))
    return kept | _sub_nodes_of(kept, _sub_node_links(workflow))


def default_input(trigger: Mapping[str, Any]) -> Any:
    """The input template for a row that gives what this trigger outputs.

    None: the webhook target's default body (a Webhook trigger's stand-in puts it under
    ``body``, as n8n does the request's).
    """
    kind, parameters = node_type(trigger), trigger.get("parameters") or {}
    if kind == _CHAT_TRIGGER:
        return {"sessionId": "{{ sessionId }}", "action": "sendMessage", "chatInput": "{{ input }}"}
    if kind == _FORM_TRIGGER:
        labels = [
            f.get("fieldLabel") for f in (parameters.get("formFields") or {}).get("values", [])
        ]
        return {**_from_columns(labels), "formMode": "production"}
    if kind == _EXECUTE_WORKFLOW_TRIGGER and parameters.get("inputSource") != "passthrough":
        names = [
            value.get("name")
            for value in (parameters.get("workflowInputs") or {}).get("values", [])
        ]
        return _from_columns(names) or None
    return None


def _from_columns(names: list[Any]) -> dict[str, str]:
    """Each name from the row's column of that name (null when the row has none)."""
    return {str(name): f"{{{{ row.get({json.dumps(str(name))}) }}}}" for name in names if name}


Replacement = dict[str, Any] | list[dict[str, Any]]


def harness_copy(
    workflow: dict[str, Any],
    start: str,
    end: str,
    path: str,
    webhook_id: str,
    replacements: Mapping[str, Replacement] | None = None,
) -> dict[str, Any]:
    """The copy the pipeline runs (call ``check_start_and_end`` first).

    ``replacements`` are nodes swapped in for the kept nodes of the same name (mocks): one
    node of that name, or a list of nodes that stand in for it together.
    """
    links = _main_links(workflow)
    trigger = feeder(workflow, start)
    index = next(i for source, target, i in links if target == start and source == trigger["name"])
    kept = kept_nodes(workflow, start, end)
    swapped = replacements or {}
    nodes = [
        _answering(copy.deepcopy(stand_in), end)
        for node in workflow["nodes"]
        if node["name"] in kept
        for stand_in in _stand_ins(swapped.get(node["name"], node))
    ]
    position = next(n.get("position", [0, 0]) for n in workflow["nodes"] if n["name"] == start)
    responds = any(n["name"] == end and node_type(n) == _RESPOND_TO_WEBHOOK for n in nodes)
    ending = next(n for n in nodes if n["name"] == end)
    nodes += _stand_in(trigger, path, webhook_id, position, responds, _image_answer(ending))
    return {
        "name": workflow.get("name", "workflow"),
        "nodes": nodes,
        "connections": _renamed_sources(
            _kept_connections(workflow, kept, end, trigger["name"], start, index), swapped
        ),
        "settings": {"executionOrder": "v1"},
    }


def _stand_ins(replacement: Replacement) -> list[dict[str, Any]]:
    return replacement if isinstance(replacement, list) else [replacement]


def _renamed_sources(
    connections: dict[str, Any], swapped: Mapping[str, Replacement]
) -> dict[str, Any]:
    """A node replaced by several: each of them has the links out the node had."""
    renamed = dict(connections)
    for name, replacement in swapped.items():
        if isinstance(replacement, list) and name in renamed:
            outputs = renamed.pop(name)
            renamed.update({node["name"]: copy.deepcopy(outputs) for node in replacement})
    return renamed


def _sub_nodes_of(parents: set[str], links: list[tuple[str, str]]) -> set[str]:
    found: set[str] = set()
    frontier = set(parents)
    while frontier:
        children = {child for child, parent in links if parent in frontier} - found - parents
        found |= children
        frontier = children
    return found


def _answering(node: dict[str, Any], end: str) -> dict[str, Any]:
    """A Respond to Webhook before the end node as a pass-through of the same name."""
    if node_type(node) != _RESPOND_TO_WEBHOOK or node["name"] == end:
        return node
    position = node.get("position", [0, 0])
    return {"name": node["name"], "type": "n8n-nodes-base.noOp", "typeVersion": 1,
            "position": position, "parameters": {}}  # fmt: skip


def _image_answer(end: dict[str, Any]) -> dict[str, str]:
    """The webhook's answer when the end node makes an image: that image, as binary data."""
    if image_operation(end) is None:
        return {}
    return {"responseData": "firstEntryBinary", "responseBinaryPropertyName": binary_property(end)}


def _stand_in(
    trigger: dict[str, Any],
    path: str,
    webhook_id: str,
    position: list[Any],
    responds: bool,
    answer: dict[str, str],
) -> list[dict[str, Any]]:
    """The webhook and the trigger's stand-in; ``responds``: the end node answers the call.

    ``answer``: what the webhook answers with, when not the end node's first item's JSON.
    """
    x, y = [*position, 0, 0][:2]
    mode = "responseNode" if responds else "lastNode"
    webhook = {
        "name": HARNESS_WEBHOOK,
        "type": "n8n-nodes-base.webhook",
        "typeVersion": 2,
        "position": [x - 440, y],
        "webhookId": webhook_id,
        "parameters": {
            "httpMethod": "POST",
            "path": path,
            "responseMode": mode,
            **answer,
            "options": {},
        },
    }
    code = _WEBHOOK_STAND_IN_CODE if node_type(trigger) == WEBHOOK_TRIGGER else _STAND_IN_CODE
    stand_in = {
        "name": trigger["name"],
        "type": "n8n-nodes-base.code",
        "typeVersion": 2,
        "position": [x - 220, y],
        "parameters": {"jsCode": code},
    }
    return [webhook, stand_in]


def _kept_connections(
    workflow: dict[str, Any], kept: set[str], end: str, feeder: str, start: str, index: int
) -> dict[str, Any]:
    connections: dict[str, Any] = {}
    for source, outputs in (workflow.get("connections") or {}).items():
        if source not in kept:
            continue
        trimmed = {
            kind: [[link for link in branch or [] if link["node"] in kept] for branch in branches]
            for kind, branches in (outputs or {}).items()
            if not (kind == "main" and source == end)  # everything after the end node is cut
        }
        if trimmed:
            connections[source] = trimmed
    main = [[{"node": start, "type": "main", "index": index}]]
    connections[HARNESS_WEBHOOK] = {"main": [[{"node": feeder, "type": "main", "index": 0}]]}
    connections[feeder] = {"main": main}
    return connections
