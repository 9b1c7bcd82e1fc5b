"""MCP servers and calls in DeepEval's terms: ``MCPServer``, ``MCPToolCall``, MCP turns.

The servers' tools, resources and prompts become the ``mcp`` SDK's own types (what
``ClientSession.list_tools()`` returns, as DeepEval's documentation passes them), a call's
result its ``CallToolResult``. In a conversation, the MCP calls of an answer go on an
assistant turn of their own before it, as ``ToolCall``s of type MCP: DeepEval's
multi-turn MCP metrics read a task as the user's message, then the turns that follow
(each MCP turn its calls, each other turn its text), and judge only tasks of more than
two turns. (They read an ``MCPToolCall``'s result as ``result.structuredContent``, a name
the installed ``mcp`` SDK 2.x no longer has; a ``ToolCall`` of type MCP carries its
result as text.)
"""

from __future__ import annotations

from collections.abc import Callable

from deepeval.test_case import MCPServer, MCPToolCall, ToolCall, Turn
from deepeval.test_case.llm_test_case import ToolCallType

from n8n_deepeval_pipeline.n8n_data.agent_steps import ToolCallData
from n8n_deepeval_pipeline.n8n_data.conversation import TurnData
from n8n_deepeval_pipeline.n8n_data.mcp_calls import (
    McpCall,
    McpServer,
    mcp_calls,
    result_text,
    server_of,
)


def deepeval_servers(servers: list[McpServer]) -> list[MCPServer]:
    """The servers as DeepEval's ``MCPServer``, their primitives as the SDK's types."""
    from mcp.types import Prompt, Resource, Tool

    return [
        MCPServer(
            server_name=server.name,
            transport=server.transport,
            available_tools=[Tool.model_validate(tool) for tool in server.tools] or None,
            available_resources=[Resource.model_validate(r) for r in server.resources] or None,
            available_prompts=[Prompt.model_validate(p) for p in server.prompts] or None,
        )
        for server in servers
    ]


def mcp_tool_call(call: McpCall) -> MCPToolCall:
    """One MCP call as DeepEval's ``MCPToolCall``, with the SDK's ``CallToolResult``."""
    from mcp.types import CallToolResult

    result = {"content": call.content, "isError": call.is_error}
    if call.structured_content is not None:
        result["structuredContent"] = call.structured_content
    return MCPToolCall(
        name=call.tool, args=call.arguments, result=CallToolResult.model_validate(result)
    )


def _as_mcp_tool(call: McpCall) -> ToolCall:
    return ToolCall(
        name=call.tool,
        type=ToolCallType.MCP,
        input_parameters=call.arguments,
        output=result_text(call),
    )


def mcp_turn_content(calls: list[McpCall]) -> str:
    """What an MCP turn says (DeepEval's MCP metrics read its calls, not this text)."""
    return "; ".join(f"calls {call.tool} on {call.server}" for call in calls)


def mcp_turns(
    turns: list[TurnData], servers: list[McpServer], turn: Callable[[TurnData], Turn]
) -> list[Turn]:
    """The conversation's turns, each answer's MCP calls on a turn of their own before it.

    ``turn`` builds DeepEval's ``Turn`` from a ``TurnData`` (the builder's own).
    """
    built: list[Turn] = []
    for data in turns:
        calls = mcp_calls(data.tools_called or [], servers) if data.role == "assistant" else []
        if calls:
            built.append(
                Turn(
                    role="assistant",
                    content=mcp_turn_content(calls),
                    tools_called=[_as_mcp_tool(call) for call in calls],
                )
            )
            others = _not_mcp(data.tools_called or [], servers)
            data = data.model_copy(update={"tools_called": others or None})
        built.append(turn(data))
    return built


def _not_mcp(calls: list[ToolCallData], servers: list[McpServer]) -> list[ToolCallData]:
    return [call for call in calls if server_of(call.name, servers) is None]
