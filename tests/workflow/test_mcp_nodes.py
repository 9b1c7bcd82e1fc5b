"""MCP Client Tool nodes in the harness copy: the server each reaches, a stand-in per tool."""

import json
import shutil
import subprocess

import pytest

from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.workflow.harness import harness_copy
from n8n_deepeval_pipeline.workflow.mcp_nodes import mcp_node, mcp_nodes
from n8n_deepeval_pipeline.workflow.mocks import MockAnswer, mock_request, mocked_nodes
from tests.workflow.test_harness import link, node

LC = "@n8n/n8n-nodes-langchain."
WEATHER = {"endpointUrl": "http://mcp.example/mcp", "serverTransport": "httpStreamable"}
SERVER = McpServer(
    name="Weather MCP",
    tools=[
        {"name": "get_weather", "description": "Current weather.",
         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"name": "get_forecast", "description": "The forecast."},
        {"name": "set_alert", "description": "Creates an alert."},
    ],
)  # fmt: skip


def weather_agent(**parameters):
    return {
        "nodes": [
            node("Webhook", "n8n-nodes-base.webhook"),
            node("AI Agent", LC + "agent"),
            node(
                "Weather MCP",
                LC + "mcpClientTool",
                typeVersion=1.4,
                parameters={**WEATHER, **parameters},
            ),
        ],
        "connections": {"Webhook": link("AI Agent"), "Weather MCP": link("AI Agent", "ai_tool")},
    }


def test_each_version_of_the_node_names_its_server_as_n8n_reads_it():
    v1 = mcp_node({"name": "A", "typeVersion": 1, "parameters": {"sseEndpoint": "http://a/sse"}})
    assert (v1.endpoint, v1.transport) == ("http://a/sse", "sse")
    v11 = mcp_node({"name": "B", "typeVersion": 1.1, "parameters": {"endpointUrl": "http://b"}})
    assert v11.transport == "sse"  # 1.1's default
    v14 = mcp_node({"name": "C", "typeVersion": 1.4, "parameters": {"endpointUrl": "http://c"}})
    assert (v14.transport, v14.authentication, v14.include) == ("streamable-http", "none", "all")
    assert [n.name for n in mcp_nodes(weather_agent())] == ["Weather MCP"]


@pytest.mark.parametrize(
    ("parameters", "offered"),
    [
        ({}, ["get_weather", "get_forecast", "set_alert"]),
        ({"include": "selected", "includeTools": ["get_weather"]}, ["get_weather"]),
        ({"include": "except", "excludeTools": ["set_alert"]}, ["get_weather", "get_forecast"]),
    ],
)
def test_the_agent_is_offered_the_tools_the_node_includes(parameters, offered):
    workflow = weather_agent(**parameters)
    (found,) = mcp_nodes(workflow)
    assert found.offered(SERVER).tool_names() == offered
    (stand_ins,) = mocked_nodes(
        workflow, {"Weather MCP": MockAnswer("ok")}, {"Weather MCP": SERVER}
    ).values()
    assert [n["name"] for n in stand_ins] == [f"Weather_MCP_{tool}" for tool in offered]


def test_a_mocked_mcp_node_is_a_code_tool_per_tool_with_the_servers_schema_in_the_copy():
    workflow = weather_agent()
    replacements = mocked_nodes(
        workflow, {"Weather MCP": MockAnswer("fine")}, {"Weather MCP": SERVER}
    )
    weather, forecast, _ = replacements["Weather MCP"]
    assert weather["type"] == LC + "toolCode"
    assert weather["parameters"]["description"] == "Current weather."
    assert json.loads(weather["parameters"]["inputSchema"]) == SERVER.tools[0]["inputSchema"]
    assert json.loads(forecast["parameters"]["inputSchema"]) == {"type": "object"}
    copy = harness_copy(workflow, "AI Agent", "AI Agent", "p", "w", replacements)
    names = [n["name"] for n in copy["nodes"]]
    assert "Weather MCP" not in names
    for tool in ("get_weather", "get_forecast", "set_alert"):
        # each stand-in is one of the agent's tools, as the node was
        assert copy["connections"][f"Weather_MCP_{tool}"] == link("AI Agent", "ai_tool")


def test_a_stand_in_may_not_take_another_nodes_name():
    workflow = weather_agent()
    workflow["nodes"].append(node("Weather_MCP_get_weather", "n8n-nodes-base.noOp"))
    with pytest.raises(ValueError, match="takes the name of another node"):
        mocked_nodes(workflow, {"Weather MCP": MockAnswer("x")}, {"Weather MCP": SERVER})


def test_a_mocked_mcp_node_without_its_servers_tools_is_refused():
    with pytest.raises(ValueError, match="its MCP server's tools are not known"):
        mocked_nodes(weather_agent(), {"Weather MCP": MockAnswer("x")}, {})


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="runs the stand-ins' JavaScript with node")
@pytest.mark.parametrize(
    ("response", "answers"),
    [
        ("plain text", ["plain text", "plain text"]),
        ({"get_weather": "Sunny", "get_forecast": {"rain": True}}, ["Sunny", '{"rain":true}']),
        ([{"get_weather": "Sunny"}], ["Sunny", "null"]),  # the judge's one item, by tool
        ({"city": "Paris"}, ['{"city":"Paris"}', '{"city":"Paris"}']),  # not keyed by tool
    ],
)
def test_each_stand_in_answers_the_mock_or_its_own_entry(response, answers):
    server = SERVER.model_copy(update={"tools": SERVER.tools[:2]})
    stand_ins = mocked_nodes(weather_agent(), {"Weather MCP": MockAnswer(response)},
                             {"Weather MCP": server})["Weather MCP"]  # fmt: skip
    said = [
        subprocess.run(
            [NODE, "-e", f"console.log((() => {{ {n['parameters']['jsCode']} }})())"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.strip()
        for n in stand_ins
    ]  # fmt: skip
    assert said == answers


def test_the_judge_writing_an_mcp_nodes_mock_is_told_each_tool_of_its_server():
    request = mock_request(weather_agent(), "Weather MCP", SERVER)
    assert request["type"] == LC + "mcpClientTool"
    assert [tool["name"] for tool in request["mcp_tools"]] == [
        "get_weather", "get_forecast", "set_alert"
    ]  # fmt: skip
    assert request["mcp_tools"][0]["arguments"] == SERVER.tools[0]["inputSchema"]
    assert "a field per tool" in request["answer"]
    assert "tool" not in request  # not the node's own (empty) description
