"""An agent with an MCP Client Tool, benchmarked on a real n8n against a loopback MCP server.

Real n8n nodes: Webhook → AI Agent (OpenAI Chat Model, MCP Client Tool "Weather MCP").
The MCP server is the official mcp SDK's own (``weather_mcp_server``), counting the tool
calls it runs; the language model is a loopback fake (FakeOpenAI) that calls the tool the
question names. Mocked (the default), the server is listed but sees no tool call, while
the runs record the agent's calls under the server's tool names and MCP Use scores them
(on a loopback judge); with the benchmark's consent (``mcpServers: {safe: true}``) every
run's call reaches the server, read back from the executions (Return Intermediate Steps
off).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, prompt_text
from tests.live.fake_llm import FakeOpenAI
from tests.live.mcp_server import weather_mcp_server
from tests.live.n8n_server import N8nServer
from tests.live.workflow_parts import LC, link, node, webhook_agent

pytestmark = [pytest.mark.live, pytest.mark.slow]
ROWS = {"w75": "75", "w13": "13"}


def weather_agent(credential: str, endpoint: str, steps: bool) -> dict[str, Any]:
    """The user's workflow; ``steps``: the agent's Return Intermediate Steps."""
    workflow = webhook_agent("live mcp agent", credential, returnIntermediateSteps=steps)
    workflow["nodes"].append(
        node("Weather MCP", LC + "mcpClientTool", 1.4,
             {"endpointUrl": endpoint, "serverTransport": "httpStreamable",
              "authentication": "none", "include": "all", "options": {}})
    )  # fmt: skip
    workflow["connections"]["Weather MCP"] = link("AI Agent", "ai_tool")
    return workflow


@pytest.fixture(scope="module")
def weather(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    """The MCP server, the fake model, the judge and both agents in n8n (unpublished)."""
    with weather_mcp_server() as server, FakeOpenAI() as llm:
        judge = LoopbackJudge(latency_s=0.0).start()
        try:
            credential = n8n.openai_credential("Fake OpenAI", llm.base_url)
            ids = {
                steps: n8n.create_workflow(weather_agent(credential, server.url, steps), False)
                for steps in (True, False)
            }
            yield {"ids": ids, "server": server, "llm": llm, "judge": judge}
        finally:
            judge.stop()


def write_benchmark(tmp_path: Path, name: str, workflow_id: str, judge: str, **target: Any) -> Path:
    lines = ["id,question,weather"] + [
        f"{row},Please use weather mcp get weather for city {city},Cloudy in {city} (mocked)"
        for row, city in ROWS.items()
    ]
    (tmp_path / "cities.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    document = {
        "name": name,
        "workflow": {"id": workflow_id},
        "dataset": {"path": "cities.csv", "columnMapping": {"input": "question"}},
        "target": {"type": "n8n_workflow", "startNodeName": "AI Agent",
                   "endNodeName": "AI Agent", **target},
        "judge": {"provider": "openai-compatible", "model": "loopback", "baseUrl": judge},
        "runsPerRow": 2,
        "metrics": [{"metric": "mcp_use"}],
        "compare": {"failOn": "likely_regression"},  # reachable with 2 runs per case
    }  # fmt: skip
    path = tmp_path / f"{name}.benchmark.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    return path


def stored(database: Path, name: str) -> dict[str, dict[str, Any]]:
    """``row:run`` → the run's output, steps, MCP servers, and its MCP Use score."""
    with duckdb.connect(str(database), read_only=True) as connection:
        rows = connection.execute(
            f"select o.run_id, o.actual_output, o.intermediate_steps, o.mcp_servers, "
            f"s.score, s.error from {name}.agent_outputs o "
            f"join {name}.metric_scores s using (run_id) where s.metric = 'mcp_use'"
        ).fetchall()
    return {
        run_id.split(":", 1)[1]: {
            "output": output,
            "steps": json.loads(steps) if steps else None,
            "servers": json.loads(servers) if servers else None,
            "score": score,
            "error": error,
        }
        for run_id, output, steps, servers, score, error in rows
    }


def mcp_prompts(judge: LoopbackJudge, since: int) -> list[str]:
    """The judge's MCP Use prompts after the first ``since`` requests."""
    prompts = [prompt_text(body.get("messages", [])) for body in judge.bodies[since:]]
    return [prompt for prompt in prompts if "MCP Primitives Available" in prompt]


def test_mocked_the_server_sees_no_tool_call_and_the_benchmark_records_and_scores_them(
    weather: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    server, judge = weather["server"], weather["judge"]
    server.tool_calls.clear()
    server.listings.clear()
    mocks = {"nodes": {"Weather MCP": {"column": "weather"}}}
    path = write_benchmark(tmp_path, "live_mcp_mocked", weather["ids"][True], judge.base_url,
                           mocks=mocks)  # fmt: skip
    validated = CliRunner().invoke(main, ["validate", str(path)])
    assert (validated.exit_code, validated.stderr) == (0, "")  # mocked: nothing acts for real
    asked = len(judge.bodies)
    result = CliRunner().invoke(main, ["run", str(path)])
    print(result.stdout, "server tool calls:", server.tool_calls, "listings:", server.listings)
    assert result.exit_code == 0, result.output
    assert server.tool_calls == []  # never called: only listed, for its tools' names and schemas
    assert "list_tools" in server.listings
    runs = stored(cli_home, "live_mcp_mocked")
    assert sorted(runs) == sorted(f"{row}:{index}" for row in ROWS for index in (0, 1))
    for key, run in runs.items():
        city = ROWS[key.split(":")[0]]
        (step,) = run["steps"]
        assert step["mocked"] is True
        assert step["action"]["tool"] == "Weather_MCP_get_weather"  # as the real node names it
        assert step["action"]["toolInput"] == {"city": city}
        assert run["output"] == f"The answer is Cloudy in {city} (mocked)."
        (listed,) = run["servers"]
        assert listed["name"] == "Weather MCP"
        assert [tool["name"] for tool in listed["tools"]] == ["get_weather", "get_forecast"]
        assert [r["uri"] for r in listed["resources"]] == ["weather://cities"]
        assert run["error"] is None and 0.0 <= run["score"] <= 1.0
    prompts = mcp_prompts(judge, asked)
    assert len(prompts) == 2 * len(runs)  # primitives, then arguments, per run
    for city in ROWS.values():
        called = [p for p in prompts if f"args={{'city': '{city}'}}" in p]
        assert len(called) == 4 and all(f"Cloudy in {city} (mocked)" in p for p in called)
    assert all("get_forecast" in p and "weather://cities" in p for p in prompts)


def test_with_the_benchmarks_consent_every_call_reaches_the_server(
    weather: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    server, judge = weather["server"], weather["judge"]
    server.tool_calls.clear()
    path = write_benchmark(tmp_path, "live_mcp_safe", weather["ids"][False], judge.base_url,
                           mcpServers={"Weather MCP": {"safe": True}})  # fmt: skip
    validated = CliRunner().invoke(main, ["validate", str(path)])
    assert validated.exit_code == 0
    assert 'acts on a real service: "Weather MCP"' in validated.stderr
    result = CliRunner().invoke(main, ["run", str(path)])
    print(result.stdout, "server tool calls:", server.tool_calls)
    assert result.exit_code == 0, result.output
    called = Counter((name, arguments["city"]) for name, arguments in server.tool_calls)
    assert called == {("get_weather", city): 2 for city in ROWS.values()}  # one a run, 2 a row
    runs = stored(cli_home, "live_mcp_safe")
    assert len(runs) == 2 * len(ROWS)
    for key, run in runs.items():
        city = ROWS[key.split(":")[0]]
        # Return Intermediate Steps off: the call is read from the node's run, by the tool
        # the agent named in its input
        (step,) = run["steps"]
        assert step["action"]["tool"] == "Weather_MCP_get_weather"
        assert "mocked" not in step
        assert f"Sunny in {city}, 21C" in step["observation"]
        assert f"Sunny in {city}, 21C" in run["output"]
        assert run["error"] is None and 0.0 <= run["score"] <= 1.0
