"""MCP calls read from an agent's steps: n8n's tool names, the arguments, the results."""

import json

from n8n_deepeval_pipeline.n8n_data.agent_steps import parse_intermediate_steps, tool_calls
from n8n_deepeval_pipeline.n8n_data.mcp_calls import (
    McpServer,
    call_result,
    mcp_calls,
    mcp_tool_name,
    result_text,
)

SERVER = McpServer(
    name="Weather MCP",
    tools=[{"name": "get_weather", "inputSchema": {"type": "object"}}, {"name": "get_forecast"}],
)


def test_tools_are_named_as_n8n_names_them():
    assert mcp_tool_name("Weather MCP", "get_weather") == "Weather_MCP_get_weather"
    # each character that is not a letter or digit is one underscore (no runs collapsed)
    assert mcp_tool_name("My  MCP-1", "t") == "My__MCP_1_t"
    # too long: the node's part is cut so that the tool's name fits in 64 characters
    long = mcp_tool_name("N" * 80, "lookup_order")
    assert len(long) == 64 and long.endswith("_lookup_order") and long.startswith("NNN")


def _step(tool, tool_input, observation):
    return {"action": {"tool": tool, "toolInput": tool_input}, "observation": observation}


def test_the_steps_mcp_calls_are_read_with_the_servers_names_and_n8ns_tool_key_left_out():
    items = [{"response": [{"type": "text", "text": "Sunny"}], "structuredContent": {"r": 1}}]
    steps = [
        _step("Calculator", {"input": "1+1"}, "2"),  # not an MCP tool
        _step(
            "Weather_MCP_get_weather",
            {"city": "Paris", "tool": "Weather_MCP_get_weather"},
            json.dumps(items),
        ),
        _step("get_forecast", {"city": "Paris", "days": 2}, "Rain"),  # a recording's bare name
    ]
    calls = mcp_calls(tool_calls(parse_intermediate_steps(steps)), [SERVER])
    assert [(c.server, c.tool, c.arguments) for c in calls] == [
        ("Weather MCP", "get_weather", {"city": "Paris"}),
        ("Weather MCP", "get_forecast", {"city": "Paris", "days": 2}),
    ]
    assert calls[0].content == [{"type": "text", "text": "Sunny"}]
    assert calls[0].structured_content == {"r": 1}
    assert (calls[1].content, result_text(calls[1])) == ([{"type": "text", "text": "Rain"}], "Rain")


def test_a_mocked_tools_text_and_odd_answers_are_one_text_block():
    assert call_result('[{"response":"{\\"mocked\\":true}"}]') == (
        [{"type": "text", "text": '{"mocked":true}'}],
        None,
    )
    assert call_result({"temperature": 21}) == (
        [{"type": "text", "text": '{"temperature": 21}'}],
        None,
    )
    assert call_result("not json") == ([{"type": "text", "text": "not json"}], None)
