"""A workflow's MCP Client Tool nodes: the server each points at, and its mocked stand-ins.

An MCP Client Tool node (``@n8n/n8n-nodes-langchain.mcpClientTool``) gives the agent every
tool its server lists, or those its ``include`` option selects, each named
``<node>_<tool>``. In the harness copy such a node is mocked unless the benchmark says its
server is safe to call: it is replaced by one Code Tool per tool it offers, each named as
n8n names that tool and offering the server's own description and input schema, so the
agent sees the same tools and the calls show in its steps under the same names; the server
is never called. Each stand-in answers the node's mock (fixed, a column's, the judge's);
an answer that is an object keyed by tool names (or one item that is) answers each tool
its own entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer, McpTransport
from n8n_deepeval_pipeline.workflow.graph import LANGCHAIN, WorkflowGraph, node_type

MCP_CLIENT_TOOL = LANGCHAIN + "mcpClientTool"
_TRANSPORTS: dict[str, McpTransport] = {"httpStreamable": "streamable-http", "sse": "sse"}


@dataclass(frozen=True)
class McpNode:
    """An MCP Client Tool node's connection and tool filter, as its parameters say."""

    name: str
    endpoint: str
    transport: McpTransport
    authentication: str
    include: str  # all, selected, except
    include_tools: tuple[str, ...]
    exclude_tools: tuple[str, ...]

    def offered(self, server: McpServer) -> McpServer:
        """The server with only the tools the node gives the agent (n8n's getSelectedTools)."""
        tools = server.tools
        if self.include == "selected" and self.include_tools:
            tools = [tool for tool in tools if tool["name"] in self.include_tools]
        elif self.include == "except":
            tools = [tool for tool in tools if tool["name"] not in self.exclude_tools]
        return server.model_copy(update={"tools": tools})


def is_mcp_client(node: Mapping[str, Any]) -> bool:
    """Whether the node is an MCP Client Tool."""
    return node_type(node) == MCP_CLIENT_TOOL


def mcp_node(node: Mapping[str, Any]) -> McpNode:
    """The node's settings, with n8n's defaults for each version (1: SSE only)."""
    parameters = node.get("parameters") or {}
    version = float(node.get("typeVersion") or 1)
    if version == 1:
        endpoint, transport = parameters.get("sseEndpoint", ""), "sse"
    else:
        endpoint = parameters.get("endpointUrl", "")
        default = "sse" if version == 1.1 else "httpStreamable"
        transport = str(parameters.get("serverTransport", default))
    return McpNode(
        name=str(node["name"]),
        endpoint=str(endpoint),
        transport=_TRANSPORTS.get(transport, "streamable-http"),
        authentication=str(parameters.get("authentication", "none")),
        include=str(parameters.get("include", "all")),
        include_tools=tuple(_names(parameters.get("includeTools"))),
        exclude_tools=tuple(_names(parameters.get("excludeTools"))),
    )


def _names(value: Any) -> list[str]:
    return [str(name) for name in value] if isinstance(value, list) else []


def mcp_nodes(workflow: Mapping[str, Any], among: set[str] | None = None) -> list[McpNode]:
    """The workflow's MCP Client Tool nodes (those ``among`` the names given), by name."""
    graph = WorkflowGraph(workflow)
    return [
        mcp_node(graph.nodes[name])
        for name in graph.names(is_mcp_client)
        if among is None or name in among
    ]


def mcp_stand_ins(
    node: Mapping[str, Any], server: McpServer, value_code: str
) -> list[dict[str, Any]]:
    """A Code Tool per tool the node offers; ``value_code`` puts the node's mock in ``value``."""
    offered = mcp_node(node).offered(server)
    tools = offered.tool_names()
    return [
        {
            "id": f"{node.get('id', node['name'])}:{tool['name']}",
            "name": offered.agent_name(str(tool["name"])),
            "type": LANGCHAIN + "toolCode",
            "typeVersion": 1.3,
            "position": node.get("position", [0, 0]),
            "parameters": {
                "description": str(tool.get("description") or ""),
                "language": "javaScript",
                "jsCode": _tool_code(value_code, str(tool["name"]), tools),
                "specifyInputSchema": True,
                "schemaType": "manual",
                "inputSchema": json.dumps(tool.get("inputSchema") or {"type": "object"}),
            },
        }
        for tool in offered.tools
    ]


def _tool_code(value_code: str, tool: str, tools: list[str]) -> str:
    """JavaScript that answers ``tool``: the node's answer, or its entry for the tool."""
    return (
        value_code + "\n"
        f"const tools = {json.dumps(tools, ensure_ascii=False)};\n"
        "let parsed = value;\n"
        "if (typeof value === 'string') { try { parsed = JSON.parse(value); } catch {} }\n"
        "const byTool = Array.isArray(parsed) && parsed.length === 1 ? parsed[0] : parsed;\n"
        "const keys = byTool !== null && typeof byTool === 'object' && !Array.isArray(byTool)"
        " ? Object.keys(byTool) : [];\n"
        "const answer = keys.length > 0 && keys.every((key) => tools.includes(key))"
        f" ? (byTool[{json.dumps(tool, ensure_ascii=False)}] ?? null) : value;\n"
        "return typeof answer === 'string' ? answer : JSON.stringify(answer ?? null);"
    )
