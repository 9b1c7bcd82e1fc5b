"""`init`: a commented benchmark read off the workflow, which `validate` passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.console.scaffold import benchmark_name
from n8n_deepeval_pipeline.n8n_api.harness_run import harness_body
from n8n_deepeval_pipeline.n8n_data.expressions import resolve_path
from n8n_deepeval_pipeline.n8n_data.templates import render
from n8n_deepeval_pipeline.workflow.graph import node_type
from n8n_deepeval_pipeline.workflow.harness import MOCKS_FIELD, WEBHOOK_TRIGGER, feeder
from tests.live.n8n_server import load_workflow
from tests.n8n_api.fake_n8n import FakeN8nApi
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT, chat_execution

LANGCHAIN = "@n8n/n8n-nodes-langchain."


def init(tmp_path: Path, workflow: dict[str, Any], *args: str) -> tuple[Any, dict[str, Any]]:
    source = tmp_path / "workflow.json"
    source.write_text(json.dumps(workflow), encoding="utf-8")
    out = tmp_path / "bench" / "benchmark.yaml"
    result = CliRunner().invoke(main, ["init", str(source), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result, yaml.safe_load(out.read_text("utf-8"))


def slugs(document: dict[str, Any]) -> list[str]:
    return [metric["metric"] for metric in document["metrics"]]


def dataset_rows(tmp_path: Path, document: dict[str, Any]) -> list[dict[str, Any]]:
    path = tmp_path / "bench" / document["dataset"]["path"]
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def start_item(document: dict[str, Any], workflow: dict[str, Any], row: dict[str, Any]) -> Any:
    """The item the trigger's stand-in in the harness copy hands the start node for ``row``.

    The request's body is the harness body rendered for the row; the stand-in passes it on
    (without the mocks), a Webhook trigger's under ``body`` beside the request's parts.
    """
    target = WorkflowTarget.model_validate(document["target"])
    context = {"input": row["input"], "row": row, "sessionId": "session-1"}
    body = render(harness_body(target, workflow), context)
    if isinstance(body, dict):
        body.pop(MOCKS_FIELD, None)
    if node_type(feeder(workflow, target.start_node_name)) == WEBHOOK_TRIGGER:
        return {"headers": {}, "params": {}, "query": {}, "body": body}
    return body


def test_a_chat_agent_gets_its_start_and_end_node_and_metrics_by_topology(tmp_path: Path) -> None:
    result, document = init(tmp_path, load_workflow("chat_agent"))
    assert "ok " in result.stdout and "1 rows · 7 metrics" in result.stdout  # validated
    assert document["name"] == "live_chat_agent"
    assert document["workflow"] == "../workflow.json"
    target = {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format",
              "messagesColumn": "messages"}  # fmt: skip
    assert document["target"] == target
    assert slugs(document) == ["pattern_match", "helpfulness", "correctness", "tool_permission",
                               "tool_correctness",
                               "turn_relevancy", "knowledge_retention"]  # fmt: skip
    assert document["metrics"][3]["allowedTools"] == ["Calculator"]
    assert document["dataset"]["columnMapping"] == {"input": "input",
        "expectedOutput": "expectedOutput", "expectedTools": "expectedTools"}  # fmt: skip
    (row,) = dataset_rows(tmp_path, document)
    assert row["rowId"] == "example-1" and len(row["messages"]) == 2
    text = (tmp_path / "bench" / "benchmark.yaml").read_text("utf-8")
    assert "#   agents   AI Agent · tools: Calculator · memory: Simple Memory" in text
    assert "# judge:" in text  # the judge settings, commented


def test_a_webhook_agent_gets_the_fields_its_prompt_reads_sent_back_in_place(
    tmp_path: Path,
) -> None:
    _, document = init(tmp_path, WEBHOOK_AGENT)
    template = document["target"]["input"]
    # The stand-in puts the request's body under body: the template is the body itself.
    assert template == {"question": "{{ input }}", "customer": "{{ row['customer'] }}"}
    (row,) = dataset_rows(tmp_path, document)
    assert render(template, {"input": row["input"], "row": row}) == {
        "question": row["input"],
        "customer": "Replace me: customer",
    }
    item = start_item(document, WEBHOOK_AGENT, row)  # what $json is for the agent
    assert resolve_path(item, ("body", "question")) == row["input"]
    assert resolve_path(item, ("body", "customer")) == "Replace me: customer"
    assert (document["target"]["startNodeName"], document["target"]["endNodeName"]) == (
        "AI Agent", "Reply")  # fmt: skip
    assert slugs(document) == ["pattern_match", "helpfulness", "correctness"]  # no tools, memory


def test_a_chat_agent_reading_another_field_keeps_the_session_and_action_it_is_sent(
    tmp_path: Path,
) -> None:
    workflow = load_workflow("chat_agent")
    agent = next(node for node in workflow["nodes"] if node["name"] == "AI Agent")
    agent["parameters"]["options"]["systemMessage"] = "=Answer in {{ $json.metadata.language }}"
    _, document = init(tmp_path, workflow)
    (row,) = dataset_rows(tmp_path, document)
    item = start_item(document, workflow, row)
    # the memory keys its session by sessionId; the chat trigger always says sendMessage
    assert (item["sessionId"], item["action"]) == ("session-1", "sendMessage")
    assert item["chatInput"] == row["input"]
    assert resolve_path(item, ("metadata", "language")) == row["language"] == "Replace me: language"


def test_retrieval_adds_the_rag_metric_that_needs_no_passages(tmp_path: Path) -> None:
    workflow = json.loads(json.dumps(WEBHOOK_AGENT))
    workflow["nodes"].append({"name": "Docs", "type": LANGCHAIN + "vectorStoreInMemory",
                              "typeVersion": 1.3, "parameters": {"mode": "retrieve-as-tool",
                              "toolDescription": "Search the docs"}})  # fmt: skip
    workflow["connections"]["Docs"] = {
        "ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]
    }
    _, document = init(tmp_path, workflow)
    assert slugs(document)[-1] == "answer_relevancy"
    text = (tmp_path / "bench" / "benchmark.yaml").read_text("utf-8")
    assert "# - metric: faithfulness      # needs a retrievalContext column" in text


def init_from_executions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executions: list[Any], *args: str
) -> tuple[Any, Path]:
    """``init wf --from-executions`` of the chat agent on a fake n8n holding ``executions``."""
    with FakeN8nApi() as n8n:
        n8n.workflows["wf"] = load_workflow("chat_agent")
        n8n.executions = executions
        monkeypatch.setenv("N8N_API_URL", n8n.base_url)
        monkeypatch.setenv("N8N_API_KEY", "test-key")
        out = tmp_path / "bench" / "benchmark.yaml"
        command = ["init", "wf", "--from-executions", *args, "--out", str(out)]
        result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    return result, out


def test_from_executions_writes_the_dataset_beside_and_leaves_out_what_needs_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executions = [chat_execution(1, "s-a", "Hello"), chat_execution(2, "s-a", "6*7?"),
                  chat_execution(3, "s-b", "Hi")]  # fmt: skip
    result, out = init_from_executions(tmp_path, monkeypatch, executions)
    assert "3 executions → 2 rows" in result.stderr
    document = yaml.safe_load(out.read_text("utf-8"))
    assert document["workflow"] == {"id": "wf"}
    assert slugs(document) == ["pattern_match", "helpfulness", "tool_permission",
                               "turn_relevancy", "knowledge_retention"]  # fmt: skip
    assert document["dataset"]["columnMapping"] == {"input": "input"}
    assert [row["messages"] for row in dataset_rows(tmp_path, document)] == [["Hello", "6*7?"],
                                                                             ["Hi"]]  # fmt: skip
    assert "# - metric: correctness       # needs an expectedOutput column" in out.read_text(
        "utf-8"
    )


def test_from_executions_can_redact_what_users_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executions = [chat_execution(1, "s-a", "I am jane.doe@example.com")]
    _, out = init_from_executions(tmp_path, monkeypatch, executions, "--redact")
    (row,) = dataset_rows(tmp_path, yaml.safe_load(out.read_text("utf-8")))
    assert row["input"] == "I am [redacted e-mail]" and row["messages"] == [row["input"]]


def test_from_executions_without_any_writes_the_example_row_and_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, out = init_from_executions(tmp_path, monkeypatch, [])
    assert "0 executions matched (status success): no row drawn" in result.stderr
    assert "ok " in result.stdout and "1 rows" in result.stdout  # validated
    document = yaml.safe_load(out.read_text("utf-8"))
    (row,) = dataset_rows(tmp_path, document)
    assert row["rowId"] == "example-1"
    assert "expectedOutput" in document["dataset"]["columnMapping"]  # the example has answers


def test_init_keeps_an_existing_file_and_needs_an_id_for_executions(tmp_path: Path) -> None:
    init(tmp_path, WEBHOOK_AGENT)
    source, out = tmp_path / "workflow.json", tmp_path / "bench" / "benchmark.yaml"
    again = CliRunner().invoke(main, ["init", str(source), "--out", str(out)])
    assert again.exit_code == 1 and "exists (--force overwrites it)" in again.output
    drawn = ["init", str(source), "--out", str(out), "--force", "--from-executions"]
    assert "give the workflow's id" in CliRunner().invoke(main, drawn).output


def test_benchmark_names_are_lower_snake_case_and_never_reserved() -> None:
    assert benchmark_name("Support Bot (v2)!") == "support_bot_v2"
    assert benchmark_name("42 answers") == "bench_42_answers"
    assert benchmark_name("Select") == "bench_select"
    assert benchmark_name("") == "my_workflow"


def test_code_reading_a_whole_webhook_body_gets_the_body_sent_back_as_it_came(
    tmp_path: Path,
) -> None:
    workflow = load_workflow("agent_echo")  # its Code node reads .json.body
    _, document = init(tmp_path, workflow)
    assert document["target"]["input"] == "{{ row['body'] }}"
    (row,) = dataset_rows(tmp_path, document)
    assert render(document["target"]["input"], {"row": row}) == {"input": "Replace me: the request"}
    assert start_item(document, workflow, row)["body"] == {"input": "Replace me: the request"}


def test_the_commented_online_section_validates_once_uncommented(tmp_path: Path) -> None:
    init(tmp_path, load_workflow("chat_agent"))
    path = tmp_path / "bench" / "benchmark.yaml"
    lines = path.read_text("utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("# online:"))
    assert "(needs workflow: {id: …})" in lines[start]  # the file is not a workflow in n8n
    online = [line.removeprefix("# ").split("  #")[0] for line in lines[start:]]
    kept = [line for line in lines[:start] if not line.startswith("#")]
    kept = ["workflow: {id: wf1}" if line.startswith("workflow:") else line for line in kept]
    path.write_text("\n".join(kept + online) + "\n", encoding="utf-8")
    online_config = load_benchmark(path).online
    assert online_config is not None
    assert online_config.metrics == [
        "helpfulness", "tool_permission", "turn_relevancy", "knowledge_retention"]  # fmt: skip
    assert (online_config.sample_rate, online_config.session_idle_minutes) == (0.1, 30)


def test_the_commented_red_team_validates_once_uncommented(tmp_path: Path) -> None:
    init(tmp_path, load_workflow("chat_agent"))  # an agent with a tool: a red team is offered
    path = tmp_path / "bench" / "benchmark.yaml"
    lines = path.read_text("utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("# redTeam:"))
    end = next(n for n, line in enumerate(lines) if line.startswith("# online:"))
    red_team = [line.removeprefix("# ").split("  #")[0] for line in lines[start:end]]
    kept = [line for line in lines[:start] if not line.startswith("#")]
    path.write_text("\n".join(kept + red_team) + "\n", encoding="utf-8")
    section = load_benchmark(path).red_team
    assert section is not None and section.purpose is None  # read off the workflow
    assert [v.name for v in section.vulnerabilities or []] == ["ExcessiveAgency", "PromptLeakage"]
    assert [(a.name, a.weight) for a in section.attacks or []] == [
        ("PromptInjection", 2), ("LinearJailbreaking", 1)]  # fmt: skip
    assert (section.attacks_per_vulnerability_type, section.fail_on) == (2, 0.0)


def test_nodes_acting_on_real_services_are_mocked_and_the_gate_can_fire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an n8n to run the harness in (never called: the workflow is a file)
    monkeypatch.setenv("N8N_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("N8N_API_KEY", "n8n-api-key-unused")
    workflow = json.loads(json.dumps(WEBHOOK_AGENT))
    workflow["nodes"] += [
        {"name": "Open Ticket", "type": "n8n-nodes-base.httpRequestTool", "typeVersion": 4.2,
         "parameters": {"url": "https://tickets.example.com/api", "method": "POST"}},
        {"name": "Notify", "type": "n8n-nodes-base.slack", "typeVersion": 2.3,
         "parameters": {}, "credentials": {"slackApi": {"id": "1", "name": "Slack"}}},
    ]  # fmt: skip
    workflow["connections"]["Open Ticket"] = {
        "ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]
    }
    workflow["connections"]["AI Agent"] = {
        "main": [[{"node": "Notify", "type": "main", "index": 0}]]
    }
    workflow["connections"]["Notify"] = {"main": [[{"node": "Reply", "type": "main", "index": 0}]]}
    result, document = init(tmp_path, workflow)
    assert document["target"]["mocks"] == {"services": True}
    text = (tmp_path / "bench" / "benchmark.yaml").read_text("utf-8")
    assert '#   unmocked, "Notify" (n8n-nodes-base.slack) calls a service' in text
    assert '#   unmocked, "Open Ticket" (n8n-nodes-base.httpRequestTool) makes HTTP' in text
    # 4 runs per case: the fewest at which a drop can be a regression, compare.failOn's default
    assert document["runsPerRow"] == 4
    checked = CliRunner().invoke(main, ["validate", str(tmp_path / "bench" / "benchmark.yaml")])
    assert (checked.exit_code, checked.stderr) == (0, "")  # no warning: nothing acts, gate fires
    assert "warning" not in result.stderr


def test_a_workflow_acting_on_no_service_gets_no_mocks(tmp_path: Path) -> None:
    _, document = init(tmp_path, WEBHOOK_AGENT)
    assert "mocks" not in document["target"]


@pytest.mark.slow
def test_a_fresh_benchmark_on_the_dry_run_judge_is_not_failed_by_its_placeholders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer's first run: the chat agent's init benchmark, its answers recorded.

    Its judge metrics score placeholders on the dry-run judge (knowledge retention's was
    0.000 for every run of the example row): they decide no run, the checks that need no
    judge do, and the summary says so.
    """
    from n8n_deepeval_pipeline import workflow_hash

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "2")
    workflow = load_workflow("chat_agent")
    _, document = init(tmp_path, workflow)
    assert document["metrics"][0] == {"metric": "pattern_match", "label": "answered",
                                      "pattern": r"(?s)\s*\S.*"}  # fmt: skip
    (row,) = dataset_rows(tmp_path, document)
    step = {"action": {"tool": "Calculator", "toolInput": {"input": "2+2"}}, "observation": "4"}
    turns = [
        {"role": role, "content": content}
        for message in row["messages"]
        for role, content in (("user", message), ("assistant", "Noted: " + message))
    ]
    lines = [
        {"row_id": row["rowId"], "run_index": index, "output": turns[-1]["content"],
         "intermediateSteps": [step], "turns": turns}
        for index in range(document["runsPerRow"])
    ]  # fmt: skip
    recorded = tmp_path / "bench" / "outputs.jsonl"
    recorded.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    document["target"] = {
        "type": "recorded",
        "outputs": "outputs.jsonl",
        "workflowHash": workflow_hash(workflow),
    }
    out = tmp_path / "bench" / "benchmark.yaml"
    out.write_text(yaml.safe_dump(document), encoding="utf-8")
    ran = CliRunner().invoke(main, ["run", str(out), "--json"])
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.stdout)
    assert summary["pass_rate"] == 1.0
    deciding = {metric["metric"] for metric in summary["metrics"] if metric["decides"]}
    assert deciding == {"answered", "tool_permission", "tool_correctness"}
    text = CliRunner().invoke(main, ["run", str(out)]).stdout
    assert (
        "  placeholders decide no run: the pass rate is decided by answered, tool_permission, "
        "tool_correctness (no judge needed)"
    ) in text.splitlines()


def test_online_proposes_conversational_metrics_only_for_a_session_the_workflow_names(
    tmp_path: Path,
) -> None:
    from tests.workflow.test_anatomy import webhook_agent_with_memory

    def online_lines(workflow: dict[str, Any]) -> list[str]:
        init(tmp_path, workflow, "--force")
        text = (tmp_path / "bench" / "benchmark.yaml").read_text("utf-8").splitlines()
        return text[next(n for n, line in enumerate(text) if line.startswith("# online:")) :]

    keyed = webhook_agent_with_memory(
        sessionIdType="customKey", sessionKey="={{ $json.body.sessionId }}"
    )
    lines = online_lines(keyed)
    assert lines[1].startswith("#   metrics: [helpfulness, turn_relevancy, knowledge_retention]")
    assert any(line.startswith("#   sessionIdleMinutes: 30") for line in lines)
    unkeyed = online_lines(webhook_agent_with_memory())  # the input's sessionId: a Webhook has none
    assert unkeyed[1].startswith("#   metrics: [helpfulness]")
    assert not any("sessionIdleMinutes" in line for line in unkeyed)


def test_an_mcp_client_tool_adds_mcp_use_and_says_its_calls_are_mocked(tmp_path: Path) -> None:
    workflow = load_workflow("chat_agent")
    endpoint = {"endpointUrl": "https://mcp.example/mcp"}
    workflow["nodes"].append({"name": "Weather MCP", "type": LANGCHAIN + "mcpClientTool",
                              "typeVersion": 1.4, "position": [0, 0],
                              "parameters": endpoint})  # fmt: skip
    workflow["connections"]["Weather MCP"] = {
        "ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]
    }
    result, document = init(tmp_path, workflow)
    assert "ok " in result.stdout  # validated: the MCP node is mocked, nothing acts for real
    # the agent's memory makes its runs conversations: the multi-turn MCP metrics too
    assert slugs(document)[-3:] == ["mcp_use", "multi_turn_mcp_use", "mcp_task_completion"]
    # an MCP node offers its server's tools, not one of its own name
    assert document["metrics"][3]["allowedTools"] == ["Calculator"]
    text = (tmp_path / "bench" / "benchmark.yaml").read_text("utf-8")
    assert "# mcpServers:" in text and '#   "Weather MCP":' in text and "#     safe: true" in text
    assert "mcpServers" not in document["target"]  # mocked unless the user says otherwise


def test_an_image_node_adds_the_image_metric_for_what_it_does(tmp_path: Path) -> None:
    workflow = json.loads(json.dumps(WEBHOOK_AGENT))
    workflow["nodes"] += [
        {"name": "Draw", "type": LANGCHAIN + "openAi", "typeVersion": 2.3, "position": [0, 0],
         "parameters": {"resource": "image", "prompt": "={{ $json.output }}"}},
        {"name": "Touch up", "type": LANGCHAIN + "googleGemini", "typeVersion": 1.2,
         "position": [0, 0], "parameters": {"resource": "image", "operation": "edit"}},
        {"name": "Describe", "type": LANGCHAIN + "openAi", "typeVersion": 2.3,
         "position": [0, 0], "parameters": {"resource": "image", "operation": "analyze"}},
    ]  # fmt: skip
    _, document = init(tmp_path, workflow)
    assert slugs(document)[-1] == "text_to_image"  # generate (the node's default operation)
    text = (tmp_path / "bench" / "benchmark.yaml").read_text("utf-8")
    assert "images made (Draw); a" in text
    assert "# - metric: image_editing" in text and "images edited (Touch up)" in text
