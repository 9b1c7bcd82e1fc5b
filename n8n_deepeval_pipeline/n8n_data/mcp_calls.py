"""MCP servers an n8n agent reached through MCP Client Tool nodes, and its calls to them.

n8n 2.41 offers an agent each tool of the server an MCP Client Tool node points at, named
``<node name>_<tool>`` (every character of the node's name that is not a letter or a digit
becomes ``_``; ``buildMcpToolName``), described and typed as the server lists it. A call
shows in the agent's steps under that name, with the arguments the model wrote (plus a
``tool`` key n8n adds, the prefixed name again), and the node's output items as the
observation: ``[{"response": [<MCP content>], "structuredContent": {...}}]``. A mocked
node's stand-ins answer text instead: ``[{"response": "<text>"}]``.

A server is kept as MCP's own wire form (the tools, resources and prompts it lists, camel
case as the protocol writes them), so a recording is what the server said; the worker
turns it into the ``mcp`` SDK's types for DeepEval. This module needs neither.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from n8n_deepeval_pipeline.n8n_data.agent_steps import ToolCallData

# n8n's buildMcpToolName: each character that is not a letter or digit, one ``_`` each.
_NOT_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9]")
_MAX_TOOL_NAME = 64
McpTransport = Literal["streamable-http", "sse"]


class McpServer(BaseModel):
    """One MCP server as an agent had it: the node that reached it and what it offers."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    name: str = Field(min_length=1, description="The MCP Client Tool node's name.")
    transport: McpTransport | None = None
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="The tools it lists: name, description, inputSchema."
    )
    resources: list[dict[str, Any]] = Field(default_factory=list)
    prompts: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("tools", "resources", "prompts")
    @classmethod
    def _named(cls, primitives: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, primitive in enumerate(primitives):
            if not isinstance(primitive.get("name"), str) or not primitive["name"]:
                raise ValueError(f"entry {index} has no name (MCP lists each by its name)")
        return primitives

    def tool_names(self) -> list[str]:
        """The names of the tools the server lists."""
        return [str(tool["name"]) for tool in self.tools]

    def agent_name(self, tool: str) -> str:
        """The name the agent knows ``tool`` by."""
        return mcp_tool_name(self.name, tool)


def mcp_tool_name(node_name: str, tool: str) -> str:
    """The function name n8n 2.41 gives an MCP tool of a node (``buildMcpToolName``)."""
    full = f"{_NOT_ALPHANUMERIC.sub('_', node_name)}_{tool}"
    if len(full) <= _MAX_TOOL_NAME:
        return full
    room = _MAX_TOOL_NAME - len(tool) - 1
    return f"{_NOT_ALPHANUMERIC.sub('_', node_name)[:room]}_{tool}" if room > 0 else tool


class McpCall(BaseModel):
    """One call of an MCP tool: which server and tool, the arguments, the result.

    ``content`` and ``structured_content`` are the result as MCP's ``CallToolResult``
    carries them (``content`` a list of content blocks).
    """

    server: str
    tool: str
    arguments: dict[str, Any]
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False


def server_of(name: str, servers: list[McpServer]) -> tuple[McpServer, str] | None:
    """The server and MCP tool a called tool name stands for, or None (not an MCP tool).

    The prefixed name the agent used, or the bare tool name (a recording that wrote it so).
    """
    for server in servers:
        for tool in server.tool_names():
            if name in (server.agent_name(tool), tool):
                return server, tool
    return None


def mcp_calls(calls: list[ToolCallData], servers: list[McpServer]) -> list[McpCall]:
    """The calls among ``calls`` that went to an MCP server, in order."""
    found = []
    for call in calls:
        match = server_of(call.name, servers)
        if match is None:
            continue
        server, tool = match
        content, structured = call_result(call.output)
        found.append(
            McpCall(
                server=server.name,
                tool=tool,
                arguments=_arguments(call.input_parameters, call.name),
                content=content,
                structured_content=structured,
            )
        )
    return found


def _arguments(parameters: dict[str, Any], called_as: str) -> dict[str, Any]:
    """The arguments the server got: n8n adds the prefixed tool name as ``tool``."""
    return {
        key: value
        for key, value in parameters.items()
        if not (key == "tool" and value == called_as)
    }


def call_result(observation: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """What the tool answered as MCP content blocks and structured content.

    The node's items (``[{response: [...blocks], structuredContent}]``), a mock's text
    (``[{response: "text"}]``), or any other answer, which is one text block.
    """
    items = _items(observation)
    if items is not None and len(items) == 1 and "response" in items[0]:
        response = items[0]["response"]
        structured = items[0].get("structuredContent")
        structured = structured if isinstance(structured, dict) else None
        if isinstance(response, list) and all(_is_block(block) for block in response):
            return response, structured
        return [_text_block(response)], structured
    return [_text_block(observation)], None


def _items(observation: Any) -> list[dict[str, Any]] | None:
    value = observation
    if isinstance(observation, str):
        try:
            value = json.loads(observation)
        except json.JSONDecodeError:
            return None
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value
    return None


def _is_block(block: Any) -> bool:
    return isinstance(block, dict) and isinstance(block.get("type"), str)


def _text_block(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return {"type": "text", "text": text}


def result_text(call: McpCall) -> str:
    """What the tool answered, as the text DeepEval's multi-turn MCP metrics show."""
    texts = [str(block.get("text", "")) for block in call.content if block.get("type") == "text"]
    if texts:
        return "\n".join(texts)
    return json.dumps(call.content, ensure_ascii=False)
