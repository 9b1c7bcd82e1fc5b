"""Mocks in the harness copy: nodes that would act on the world answer from the benchmark.

As in n8n's evaluation framework, what a workflow does outside is mocked and its logic
runs for real on the mocked answers. A mocked tool sub-node becomes a Code Tool with the
same name, description and input schema, so the agent is offered the same tool; a mocked
main-path node becomes a Code node of the same name, so ``$('Name').item.json…`` still
resolves. A mock answers a fixed response, or the one the request carries for its row
(under ``MOCKS_FIELD`` of the harness webhook's body): a dataset column's, or one the
judge wrote for the row from ``mock_request``, what the node is without its secrets.

``service_nodes`` names what acts on a real service: a node that carries credentials or
makes HTTP requests, except what a benchmark measures: the sub-nodes wired in as a
language model, memory, embeddings, reranker, output parser or retriever (by the link,
whatever package the node comes from), and vector stores that only read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.redaction import REDACTED, redact
from n8n_deepeval_pipeline.workflow.agent_tools import tool_description
from n8n_deepeval_pipeline.workflow.checks import is_secret_name
from n8n_deepeval_pipeline.workflow.graph import (
    LANGCHAIN,
    WorkflowGraph,
    is_tool,
    node_type,
    short_type,
)
from n8n_deepeval_pipeline.workflow.harness import (
    HARNESS_WEBHOOK,
    MOCKS_FIELD,
    Replacement,
    kept_nodes,
)
from n8n_deepeval_pipeline.workflow.mcp_nodes import is_mcp_client, mcp_stand_ins

# What a node mocked by ``mocks: services`` answers when the benchmark names no response.
SERVICES_RESPONSE: dict[str, Any] = {"mocked": True}
_HTTP_TYPES = frozenset({"httpRequest", "httpRequestTool", "toolHttpRequest", "mcpClientTool"})
# Sub-nodes the benchmark measures rather than mocks, by the kind of link they are wired in
# with: a community model (n8n-nodes-deepseek.lmChatDeepSeek) is a model all the same.
_MEASURED_LINKS = frozenset(
    {
        "ai_languageModel",
        "ai_memory",
        "ai_embedding",
        "ai_reranker",
        "ai_outputParser",
        "ai_retriever",
    }
)
_READ_ONLY_MODES = frozenset({"load", "retrieve", "retrieve-as-tool"})
# $fromAI('key', 'description', 'type'): the parameters n8n offers the agent for a tool.
_FROM_AI = re.compile(
    r"""\$fromAI\(\s*(['"`])(?P<key>.+?)\1"""
    r"""(?:\s*,\s*(['"`])(?P<description>.*?)\3)?(?:\s*,\s*(['"`])(?P<type>\w+)\5)?"""
)
_JSON_TYPES = {"string": "string", "number": "number", "boolean": "boolean", "json": "object"}


@dataclass(frozen=True)
class MockAnswer:
    """What a mocked node answers: ``response``, or the row's (``per_row``)."""

    response: Any = None
    per_row: bool = False


@dataclass(frozen=True)
class ServiceNode:
    """A node of the copy that acts on a real service, and why, in plain words."""

    name: str
    why: str

    def __str__(self) -> str:
        return f'"{self.name}" {self.why}'


def _is_measured(node: Mapping[str, Any], graph: WorkflowGraph) -> bool:
    if node_type(node).startswith(LANGCHAIN + "vectorStore"):
        mode = (node.get("parameters") or {}).get("mode", "retrieve")
        return mode in _READ_ONLY_MODES
    name = node.get("name")
    return any(link.kind in _MEASURED_LINKS for link in graph.links if link.source == name)


def _why(node: Mapping[str, Any], graph: WorkflowGraph) -> str | None:
    """How the node acts on a service, or None when it does not (or is measured)."""
    credentials = sorted(node.get("credentials") or {})
    if _is_measured(node, graph) or not (credentials or short_type(node) in _HTTP_TYPES):
        return None
    how = "makes HTTP requests" if short_type(node) in _HTTP_TYPES else "calls a service"
    with_what = f" with the credential {', '.join(credentials)}" if credentials else ""
    parents = sorted(link.target for link in graph.links if link.source == node.get("name"))
    role = f", as a tool of {', '.join(parents)}" if is_tool(node) and parents else ""
    return f"({node_type(node)}) {how}{with_what}{role}, on every run"


def service_nodes(
    workflow: dict[str, Any], start: str, end: str, mocked: set[str] | None = None
) -> list[ServiceNode]:
    """The copy's nodes that act on a real service and are not in ``mocked``, by name."""
    graph = WorkflowGraph(workflow)
    found = []
    for name in sorted(kept_nodes(workflow, start, end) - (mocked or set())):
        why = _why(graph.nodes[name], graph) if name in graph.nodes else None
        if why is not None:
            found.append(ServiceNode(name, why))
    return found


def check_mocks(workflow: dict[str, Any], start: str, end: str, names: list[str]) -> list[str]:
    """What is wrong with the mocked node names, in plain words (empty when fine)."""
    kept, graph = kept_nodes(workflow, start, end), WorkflowGraph(workflow)
    mockable = _main_path(graph) | _tools(graph)
    return [
        f'mock "{name}": no node of that name runs between "{start}" and "{end}"'
        if name not in kept
        else f'mock "{name}": only main-path nodes and tools can be mocked, not a '
        f"{short_type(graph.nodes[name])} sub-node (it is what the benchmark measures)"
        for name in names
        if name not in kept or name not in mockable
    ]


def _tools(graph: WorkflowGraph) -> set[str]:
    """Nodes wired into an agent as its tools (``ai_tool``), whatever their type."""
    return graph.linked("ai_tool", into=False)


def _main_path(graph: WorkflowGraph) -> set[str]:
    """Nodes with a main connection in or out."""
    return {
        name for link in graph.links if link.kind == "main" for name in (link.source, link.target)
    }


def mocked_nodes(
    workflow: dict[str, Any],
    answers: Mapping[str, MockAnswer],
    servers: Mapping[str, McpServer] | None = None,
) -> dict[str, Replacement]:
    """The stand-in of each mocked node, by name (call ``check_mocks`` first).

    An MCP Client Tool node stands in as a Code Tool per tool of its server (``servers``,
    by node name: what the server lists, or what the benchmark recorded of it).
    """
    graph = WorkflowGraph(workflow)
    tools = _tools(graph)
    stand_ins: dict[str, Replacement] = {}
    for name, answer in answers.items():
        node = graph.nodes[name]
        if is_mcp_client(node):
            server = (servers or {}).get(name)
            if server is None:
                raise ValueError(f'mock "{name}": its MCP server\'s tools are not known')
            tools_of_node = mcp_stand_ins(node, server, _value_code(name, answer))
            stand_ins[name] = tools_of_node
            taken = [n["name"] for n in tools_of_node if n["name"] in graph.all_names - {name}]
            if taken:
                raise ValueError(
                    f'mock "{name}": its tool {taken[0]} takes the name of another node of the '
                    "workflow; rename that node"
                )
        else:
            stand_ins[name] = (_mock_tool if name in tools else _mock_node)(node, answer)
    return stand_ins


def _value_code(name: str, answer: MockAnswer) -> str:
    """JavaScript that puts the mock's answer into ``value``."""
    if answer.per_row:
        field = f"{json.dumps(MOCKS_FIELD)}]?.[{json.dumps(name)}"
        return f"const value = $({json.dumps(HARNESS_WEBHOOK)}).first().json.body?.[{field}];"
    return f"const value = {json.dumps(answer.response, ensure_ascii=False)};"


def _mock_node(node: dict[str, Any], answer: MockAnswer) -> dict[str, Any]:
    # JSON text (a dataset cell) is read as JSON; an object is one item, a list is items.
    code = (
        _value_code(str(node["name"]), answer) + "\n"
        "let parsed = value;\n"
        "if (typeof value === 'string') { try { parsed = JSON.parse(value); } catch {} }\n"
        "const list = Array.isArray(parsed) ? parsed : [parsed];\n"
        "return list.map((json) => ({ json: json !== null && typeof json === 'object' "
        "? json : { response: json } }));"
    )
    return _replacing(node, "n8n-nodes-base.code", 2, {"jsCode": code})


def _mock_tool(node: dict[str, Any], answer: MockAnswer) -> dict[str, Any]:
    # A Code Tool must return text; the agent sees it as the tool's answer.
    code = (
        _value_code(str(node["name"]), answer) + "\n"
        "return typeof value === 'string' ? value : JSON.stringify(value ?? null);"
    )
    parameters = {"description": tool_description(node), "language": "javaScript", "jsCode": code}
    return _replacing(node, LANGCHAIN + "toolCode", 1.3, {**parameters, **_input_schema(node)})


def _input_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """The Code Tool parameters that offer the agent the tool's own arguments."""
    parameters = node.get("parameters") or {}
    if node_type(node) == LANGCHAIN + "toolCode" and parameters.get("specifyInputSchema"):
        keys = ("specifyInputSchema", "schemaType", "inputSchema", "jsonSchemaExample")
        return {key: parameters[key] for key in keys if key in parameters}
    found = {m["key"]: m for m in _FROM_AI.finditer(json.dumps(parameters))}
    if not found:
        return {}  # a tool without declared arguments takes one text input, as n8n's do
    properties = {
        key: {"type": _JSON_TYPES.get(m["type"] or "string", "string"),
              "description": m["description"] or ""}
        for key, m in found.items()
    }  # fmt: skip
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    return {"specifyInputSchema": True, "schemaType": "manual", "inputSchema": json.dumps(schema)}


def _replacing(
    node: dict[str, Any], kind: str, version: float, parameters: dict[str, Any]
) -> dict[str, Any]:
    """A node of another type in the mocked node's place: same name, id and position."""
    kept: dict[str, Any] = {key: node[key] for key in ("id", "name", "position") if key in node}
    return {**kept, "type": kind, "typeVersion": version, "parameters": parameters}


def mock_request(
    workflow: dict[str, Any], name: str, server: McpServer | None = None
) -> dict[str, Any]:
    """What the judge is told of a node it writes a response for: never a secret.

    Its type and parameters (credential-named fields and ``{name, value}`` entries, and
    credential-shaped text, redacted; the node's credentials are never read), and for a
    tool what the agent is offered: its description and arguments; for an MCP Client Tool
    (``server``: what its server offers) each tool of the server, answered one field each.
    """
    graph = WorkflowGraph(workflow)
    node = graph.nodes[name]
    request: dict[str, Any] = {
        "node": name,
        "type": node_type(node),
        "parameters": without_secrets(node.get("parameters") or {}),
    }
    if server is not None:
        request["mcp_tools"] = [
            {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "arguments": tool.get("inputSchema", {}),
            }
            for tool in server.tools
        ]
        request["answer"] = (
            "one item with a field per tool, named as the tool: what that tool answers"
        )
    elif name in _tools(graph):
        schema = _input_schema(node).get("inputSchema")
        request["tool"] = {
            "description": tool_description(node),
            "arguments": json.loads(schema) if schema else "one text input",
        }
    return request


def without_secrets(value: Any) -> Any:
    """Parameters with every credential taken out, by the name of its field or its shape."""
    if isinstance(value, Mapping):
        secret_entry = is_secret_name(value.get("name"))
        return {
            key: REDACTED
            if (is_secret_name(key) or (secret_entry and key == "value"))
            and isinstance(item, str | int | float)
            else without_secrets(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [without_secrets(item) for item in value]
    return redact(value) if isinstance(value, str) else value
