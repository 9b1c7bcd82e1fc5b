"""An MCP Client Tool's server: listed through MCP, mocked unless the benchmark says it is safe."""

import pytest
from pydantic import ValidationError

from n8n_deepeval_pipeline.benchmark.n8n_target import McpServerSettings, WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.harness_run import harness_mocks, harness_problems, mock_answers
from n8n_deepeval_pipeline.n8n_api.mcp_servers import (
    McpServerUnreadableError,
    mcp_servers,
    read_server,
)
from n8n_deepeval_pipeline.workflow.mcp_nodes import mcp_node
from n8n_deepeval_pipeline.workflow.mocks import SERVICES_RESPONSE, MockAnswer
from tests.live.mcp_server import weather_mcp_server
from tests.workflow.test_mcp_nodes import SERVER, weather_agent

RECORDED = {"tools": SERVER.tools, "resources": [{"uri": "kb://a", "name": "a"}]}


def target(**options):
    return WorkflowTarget.model_validate(
        {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "AI Agent", **options}
    )


@pytest.fixture(scope="module")
def server():
    with weather_mcp_server() as running:
        yield running


def test_a_server_is_listed_through_mcp_without_a_tool_call(server):
    server.tool_calls.clear()
    node = mcp_node({"name": "Weather MCP", "typeVersion": 1.4,
                     "parameters": {"endpointUrl": server.url}})  # fmt: skip
    listed = read_server(node)
    assert (listed.name, listed.transport) == ("Weather MCP", "streamable-http")
    assert listed.tool_names() == ["get_weather", "get_forecast"]
    weather = listed.tools[0]
    assert weather["description"] == "Current weather for a city."
    assert weather["inputSchema"]["properties"]["city"]["type"] == "string"
    assert listed.resources == [
        {"name": "cities", "uri": "weather://cities", "description": "Cities it knows.",
         "mimeType": "text/plain"}
    ]  # fmt: skip
    assert [p["name"] for p in listed.prompts] == ["trip_advice"]
    assert server.tool_calls == []


def test_the_tools_kept_are_those_the_node_offers(server):
    workflow = weather_agent(endpointUrl=server.url, include="selected",
                             includeTools=["get_forecast"])  # fmt: skip
    mocks = harness_mocks(target(), workflow)
    assert mocks.servers["Weather MCP"].tool_names() == ["get_forecast"]
    assert mocks.mocked_tools == {"Weather_MCP_get_forecast"}
    assert [n["name"] for n in mocks.replacements["Weather MCP"]] == ["Weather_MCP_get_forecast"]


def test_a_server_the_benchmark_describes_is_not_asked():
    (node,) = [mcp_node(n) for n in weather_agent()["nodes"] if n["name"] == "Weather MCP"]
    servers = mcp_servers([node], {"Weather MCP": McpServerSettings.model_validate(RECORDED)})
    assert servers["Weather MCP"].tool_names() == ["get_weather", "get_forecast", "set_alert"]
    assert servers["Weather MCP"].resources == RECORDED["resources"]


@pytest.mark.parametrize(
    ("parameters", "why"),
    [
        ({"authentication": "bearerAuth"}, "its server needs bearerAuth, which n8n holds"),
        ({"endpointUrl": "={{ $vars.mcp }}"}, "its endpoint is an expression n8n evaluates"),
        ({"endpointUrl": "http://127.0.0.1:9/mcp"}, "could not be listed"),
    ],
)
def test_a_server_that_cannot_be_listed_says_to_describe_it_in_the_benchmark(parameters, why):
    node = mcp_node({"name": "Weather MCP", "typeVersion": 1.4,
                     "parameters": {"endpointUrl": "http://x/mcp", **parameters}})  # fmt: skip
    with pytest.raises(McpServerUnreadableError) as raised:
        read_server(node, timeout_s=5)
    assert why in str(raised.value)
    assert str(raised.value).endswith(
        'write what its server offers in target.mcpServers["Weather MCP"] '
        "(tools, and resources and prompts if any)"
    )


def test_an_mcp_client_is_mocked_unless_its_server_is_called_safe():
    workflow = weather_agent()
    assert mock_answers(target(), workflow) == {"Weather MCP": MockAnswer(SERVICES_RESPONSE)}
    column = target(mocks={"nodes": {"Weather MCP": {"column": "weather"}}})
    assert mock_answers(column, workflow)["Weather MCP"].per_row
    safe = target(mcpServers={"Weather MCP": {"safe": True}})
    assert mock_answers(safe, workflow) == {}


def test_mcp_servers_must_name_an_mcp_client_and_cannot_be_both_safe_and_mocked():
    named = target(mcpServers={"Weather": {"safe": True}})
    assert harness_problems(named, weather_agent()) == [
        'mcpServers: "Weather" is not an MCP Client Tool node that runs between "AI Agent" '
        'and "AI Agent"'
    ]
    with pytest.raises(ValidationError, match='"Weather MCP" is safe to call and mocked'):
        target(
            mcpServers={"Weather MCP": {"safe": True}},
            mocks={"nodes": {"Weather MCP": {"response": "x"}}},
        )
    with pytest.raises(ValidationError, match="entry 0 has no name"):
        target(mcpServers={"Weather MCP": {"tools": [{"description": "nameless"}]}})
