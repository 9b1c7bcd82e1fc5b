"""Workflow checks: each check passes, fails or does not apply, and names its nodes."""

import copy
import json
from datetime import UTC, datetime

import pytest

from n8n_deepeval_pipeline.tables.rows import WorkflowCheck, WorkflowSnapshot
from n8n_deepeval_pipeline.tables.steps import workflow_checks
from n8n_deepeval_pipeline.workflow.checks import CATEGORIES, CHECKS, check_workflow
from n8n_deepeval_pipeline.workflow.file import read_workflow
from n8n_deepeval_pipeline.workflow.hashing import (
    canonical_workflow_json,
    without_webhook_paths,
    workflow_hash,
)
from tests.conftest import EXAMPLE

LC = "@n8n/n8n-nodes-langchain."


def node(name, node_type, **parameters):
    return {"name": name, "type": node_type, "typeVersion": 1, "position": [0, 0],
            "parameters": parameters}  # fmt: skip


def connect(workflow, source, target, kind="main"):
    outputs = workflow["connections"].setdefault(source, {}).setdefault(kind, [[]])
    outputs[0].append({"node": target, "type": kind, "index": 0})
    return workflow


def agent_workflow():
    """Webhook (header auth) → AI Agent → Respond, with a model, a tool and a memory."""
    workflow = {
        "nodes": [
            node("Webhook", "n8n-nodes-base.webhook", path="ask", authentication="headerAuth"),
            node("AI Agent", LC + "agent", promptType="define", text="={{ $json.body.input }}"),
            node("Model", LC + "lmChatOpenAi", options={"maxTokens": 512}),
            node("Calculator", LC + "toolCalculator"),
            node("Memory", LC + "memoryBufferWindow", sessionKey="support"),
            node("Respond", "n8n-nodes-base.respondToWebhook"),
            node("Note", "n8n-nodes-base.stickyNote", content="password: see the vault"),
        ],
        "connections": {},
    }
    connect(workflow, "Webhook", "AI Agent")
    connect(workflow, "AI Agent", "Respond")
    connect(workflow, "Model", "AI Agent", "ai_languageModel")
    connect(workflow, "Calculator", "AI Agent", "ai_tool")
    connect(workflow, "Memory", "AI Agent", "ai_memory")
    return workflow


def plain_workflow():
    """Schedule → Code: no AI node, no inbound trigger."""
    workflow = {
        "nodes": [
            node("Every hour", "n8n-nodes-base.scheduleTrigger"),
            node("Code", "n8n-nodes-base.code", jsCode="return [{ json: { ok: true } }];"),
        ],
        "connections": {},
    }
    return connect(workflow, "Every hour", "Code")


def results(workflow):
    return {result.check_id: result for result in check_workflow(workflow)}


def outcome(workflow, check_id):
    result = results(workflow)[check_id]
    return result.status, result.nodes


def named(workflow, name):
    return next(n for n in workflow["nodes"] if n["name"] == name)


def test_a_well_built_agent_workflow_passes_every_check():
    graded = check_workflow(agent_workflow())
    assert [r.check_id for r in graded] == [check.check_id for check in CHECKS]
    assert {r.check_id: r.status for r in graded if r.status != "pass"} == {}
    assert results(agent_workflow())["tools_connected"].nodes == ["Calculator"]


def test_the_catalog_has_unique_ids_in_the_framework_categories():
    ids = [check.check_id for check in CHECKS]
    assert len(ids) == len(set(ids)) == 9
    assert {check.category for check in CHECKS} == set(CATEGORIES)
    assert all(check.description.endswith(".") for check in CHECKS)


def test_the_support_agent_example():
    workflow = read_workflow(EXAMPLE / "workflow.json")
    graded = {r.check_id: (r.status, r.nodes) for r in check_workflow(workflow)}
    assert graded == {
        "has_trigger": ("pass", ["Webhook"]),
        "no_disabled_nodes": ("pass", []),
        "no_dangling_connections": ("pass", []),
        "no_unreachable_nodes": ("pass", []),
        "agent_has_language_model": ("pass", ["AI Agent"]),
        "tools_connected": ("pass", ["calculator", "order_lookup"]),
        "memory_properly_connected": ("not_applicable", []),
        "no_hardcoded_credentials": ("pass", []),
        "inbound_triggers_authenticated": ("fail", ["Webhook"]),
    }
    assert results(workflow)["inbound_triggers_authenticated"].message == (
        "webhook without inbound authentication"
    )


def test_the_stored_snapshot_grades_like_the_workflow_file():
    workflow = read_workflow(EXAMPLE / "workflow.json")
    stored = json.loads(canonical_workflow_json(without_webhook_paths(workflow)))
    assert check_workflow(stored) == check_workflow(workflow)


# --- structure -----------------------------------------------------------------------------


def test_has_trigger():
    assert outcome(plain_workflow(), "has_trigger") == ("pass", ["Every hour"])
    no_trigger = plain_workflow()
    no_trigger["nodes"] = no_trigger["nodes"][1:]
    assert outcome(no_trigger, "has_trigger") == ("fail", [])
    assert "nothing starts" in results(no_trigger)["has_trigger"].message
    disabled = plain_workflow()
    named(disabled, "Every hour")["disabled"] = True
    assert outcome(disabled, "has_trigger") == ("fail", ["Every hour"])
    assert results(disabled)["has_trigger"].message == "every trigger node is disabled"
    assert outcome({"nodes": [], "connections": {}}, "has_trigger") == ("fail", [])


def test_no_disabled_nodes():
    workflow = agent_workflow()
    named(workflow, "Respond")["disabled"] = True
    named(workflow, "Calculator")["disabled"] = True
    assert outcome(workflow, "no_disabled_nodes") == ("fail", ["Calculator", "Respond"])
    named(workflow, "Respond")["disabled"] = False  # the same as absent
    assert outcome(workflow, "no_disabled_nodes") == ("fail", ["Calculator"])


# --- connection topology -------------------------------------------------------------------


def test_no_dangling_connections():
    workflow = agent_workflow()
    connect(workflow, "AI Agent", "Ghost")
    connect(workflow, "Phantom tool", "AI Agent", "ai_tool")
    result = results(workflow)["no_dangling_connections"]
    assert (result.status, result.nodes) == ("fail", ["Ghost", "Phantom tool"])
    assert "AI Agent → Ghost (main)" in result.message
    assert "Phantom tool → AI Agent (ai_tool)" in result.message
    # a link with a missing end does not wire anything
    assert outcome(workflow, "tools_connected") == ("pass", ["Calculator"])


def test_no_unreachable_nodes():
    workflow = agent_workflow()
    workflow["nodes"] += [
        node("Orphan", "n8n-nodes-base.set"),
        node("Feeds Respond", "n8n-nodes-base.noOp"),  # its target is reachable, it is not
        node("Orphan model", LC + "lmChatOpenAi"),
    ]
    connect(workflow, "Orphan", "Feeds Respond")
    connect(workflow, "Feeds Respond", "Respond")
    result = results(workflow)["no_unreachable_nodes"]
    assert (result.status, result.nodes) == ("fail", ["Feeds Respond", "Orphan", "Orphan model"])
    # sub-nodes (model, tool, memory) are reached through the agent; the sticky note is no node
    assert outcome(agent_workflow(), "no_unreachable_nodes") == ("pass", [])
    no_trigger = agent_workflow()
    no_trigger["nodes"] = no_trigger["nodes"][1:]
    assert outcome(no_trigger, "no_unreachable_nodes") == ("not_applicable", [])


# --- AI nodes ------------------------------------------------------------------------------


def test_agent_has_language_model():
    workflow = agent_workflow()
    del workflow["connections"]["Model"]
    workflow["nodes"].append(node("Summarise", LC + "chainLlm"))
    connect(workflow, "AI Agent", "Summarise")
    result = results(workflow)["agent_has_language_model"]
    assert (result.status, result.nodes) == ("fail", ["AI Agent", "Summarise"])
    assert "ai_languageModel" in result.message
    assert outcome(agent_workflow(), "agent_has_language_model") == ("pass", ["AI Agent"])
    assert outcome(plain_workflow(), "agent_has_language_model") == ("not_applicable", [])


@pytest.mark.parametrize("kind", ["main", None])
def test_tools_connected(kind):
    workflow = agent_workflow()
    workflow["nodes"].append(node("Orders API", "n8n-nodes-base.httpRequestTool"))
    if kind:  # wired, but as a main connection: the agent cannot call it
        connect(workflow, "Orders API", "AI Agent", kind)
    assert outcome(workflow, "tools_connected") == ("fail", ["Orders API"])
    assert outcome(plain_workflow(), "tools_connected") == ("not_applicable", [])


def test_memory_properly_connected():
    workflow = agent_workflow()
    del workflow["connections"]["Memory"]
    assert outcome(workflow, "memory_properly_connected") == ("fail", ["Memory"])
    assert outcome(agent_workflow(), "memory_properly_connected") == ("pass", ["Memory"])
    # the Chat Memory Manager is a main node that reads a memory, not a memory itself
    manager = plain_workflow()
    manager["nodes"].append(node("Manager", LC + "memoryManager"))
    connect(manager, "Code", "Manager")
    assert outcome(manager, "memory_properly_connected") == ("not_applicable", [])


# --- security ------------------------------------------------------------------------------

SECRET = "s3cr3t-Value-42"


def header(name, value):
    return {"headerParameters": {"parameters": [{"name": name, "value": value}]}}


@pytest.mark.parametrize(
    ("parameters", "path"),
    [
        (header("Authorization", f"Basic {SECRET}"), "headerParameters.parameters[0].value"),
        (header("X-API-Key", SECRET), "headerParameters.parameters[0].value"),
        (header("Accept", f"Bearer {SECRET}"), "headerParameters.parameters[0].value"),
        ({"url": f"https://api.example/v1?api_key={SECRET}"}, "url"),
        ({"url": f"https://me:{SECRET}@api.example/v1"}, "url"),
        ({"jsonBody": f'{{"password": "{SECRET}"}}'}, "jsonBody"),
        ({"jsCode": f"const key = 'sk-{SECRET}';"}, "jsCode"),
        ({"jsCode": f"fetch(u, {{ headers: {{ Authorization: 'Bearer {SECRET}' }} }})"}, "jsCode"),
        ({"options": {"systemMessage": f"Call with Bearer {SECRET}"}}, "options.systemMessage"),
        ({"apiKey": SECRET}, "apiKey"),
        (
            {"assignments": {"assignments": [{"name": "access_token", "value": SECRET}]}},
            "assignments.assignments[0].value",
        ),
    ],
)
def test_hard_coded_credentials_fail_naming_node_and_parameter_not_value(parameters, path):
    workflow = plain_workflow()
    named(workflow, "Code")["parameters"] = parameters
    result = results(workflow)["no_hardcoded_credentials"]
    assert (result.status, result.nodes) == ("fail", ["Code"])
    assert f"Code: {path}" in result.message
    assert SECRET not in result.message


@pytest.mark.parametrize(
    "parameters",
    [
        header("Authorization", "={{ 'Bearer ' + $env.ORDERS_TOKEN }}"),
        header("X-API-Key", "={{ $env.ORDERS_KEY }}"),
        {"url": "=https://api.example/v1?api_key={{ $env.KEY }}"},
        {"jsCode": "const headers = { Authorization: `Bearer ${$env.TOKEN}` };"},
        {"jsCode": "const auth = { password: $json.password, token: process.env.T };"},
        {"options": {"systemMessage": "If asked for the password: refuse politely."}},
        {"options": {"maxTokens": 512}, "sessionKey": "support", "tokenLimit": "2000"},
        {"authentication": "genericCredentialType", "nodeCredentialType": "openAiApi"},
        {"path": "<webhook path hidden>"},
    ],
)
def test_expressions_variables_and_credential_references_pass(parameters):
    workflow = plain_workflow()
    named(workflow, "Code")["parameters"] = parameters
    assert outcome(workflow, "no_hardcoded_credentials") == ("pass", [])


def test_credentials_of_several_nodes_are_each_named():
    workflow = agent_workflow()
    named(workflow, "AI Agent")["parameters"]["options"] = {"systemMessage": f"key sk-{SECRET}"}
    named(workflow, "Respond")["parameters"] = header("Authorization", SECRET)
    result = results(workflow)["no_hardcoded_credentials"]
    assert result.nodes == ["AI Agent", "Respond"]
    assert result.message == (
        "credential hard-coded in parameters (use n8n credentials): "
        "AI Agent: options.systemMessage; Respond: headerParameters.parameters[0].value"
    )
    assert outcome({"nodes": [], "connections": {}}, "no_hardcoded_credentials")[0] == (
        "not_applicable"
    )


@pytest.mark.parametrize(
    ("trigger", "status"),
    [
        (node("Webhook", "n8n-nodes-base.webhook", path="in"), "fail"),
        (node("Webhook", "n8n-nodes-base.webhook", authentication="none"), "fail"),
        (node("Webhook", "n8n-nodes-base.webhook", authentication="basicAuth"), "pass"),
        (node("Webhook", "n8n-nodes-base.webhook", authentication="jwtAuth"), "pass"),
        (node("Webhook", LC + "chatTrigger", public=True), "fail"),
        (node("Webhook", LC + "chatTrigger", public=True, authentication="n8nUserAuth"), "pass"),
        (node("Webhook", LC + "chatTrigger"), "not_applicable"),  # only the editor's chat
        (node("Webhook", "n8n-nodes-base.formTrigger", authentication="none"), "fail"),
        (node("Webhook", LC + "mcpTrigger", authentication="bearerAuth"), "pass"),
        (node("Webhook", "n8n-nodes-base.scheduleTrigger"), "not_applicable"),
        ({**node("Webhook", "n8n-nodes-base.webhook"), "disabled": True}, "not_applicable"),
    ],
)
def test_inbound_triggers_authenticated(trigger, status):
    workflow = agent_workflow()
    workflow["nodes"][0] = trigger
    result = results(workflow)["inbound_triggers_authenticated"]
    assert result.status == status
    assert result.nodes == ([] if status == "not_applicable" else ["Webhook"])
    if status == "fail":
        assert result.message == "webhook without inbound authentication"


# --- the step that makes the table's rows ---------------------------------------------------


def test_the_step_grades_each_stored_snapshot():
    workflow = copy.deepcopy(read_workflow(EXAMPLE / "workflow.json"))
    full = workflow_hash(workflow)
    snapshot = WorkflowSnapshot(
        workflow_hash=full,
        workflow_id="sUpp0rtAg3nt01",
        name="Support Agent",
        node_count=6,
        source="workflow.json",
        fetched_at=datetime.now(UTC),
        canonical_json=canonical_workflow_json(without_webhook_paths(workflow)),
    )
    rows = workflow_checks([snapshot])
    assert [row.check_id for row in rows] == [check.check_id for check in CHECKS]
    assert {row.workflow_hash for row in rows} == {full}
    assert rows[-1] == WorkflowCheck(
        workflow_hash=full,
        check_id="inbound_triggers_authenticated",
        category="security",
        status="fail",
        message="webhook without inbound authentication",
        nodes=["Webhook"],
    )
    assert workflow_checks([]) == []
