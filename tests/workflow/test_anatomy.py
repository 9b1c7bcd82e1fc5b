"""What init and dataset from-executions read off a workflow: start, end, reads, sub-nodes."""

from n8n_deepeval_pipeline.workflow.anatomy import FieldRead, anatomy
from tests.live.n8n_server import load_workflow
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT


def node(name, type_, **parameters):
    return {"name": name, "type": type_, "typeVersion": 1, "parameters": parameters}


def link(source, target, kind="main"):
    return {source: {kind: [[{"node": target, "type": kind, "index": 0}]]}}


def test_a_chat_agent_reads_chat_input_and_has_tools_and_memory():
    shape = anatomy(load_workflow("chat_agent"))
    assert (shape.trigger, shape.start, shape.end) == ("When chat message received", "AI Agent",
                                                       "Format")  # fmt: skip
    assert shape.is_chat and shape.agents == ["AI Agent"]
    assert shape.reads == [FieldRead(("chatInput",), "input")]  # promptType auto
    assert [tool.name for tool in shape.tools] == ["Calculator"]
    assert shape.memories == ["Simple Memory"] and shape.retrievers == []


def test_a_webhook_agent_reads_the_fields_its_prompt_and_options_name():
    shape = anatomy(WEBHOOK_AGENT)
    assert not shape.is_chat and (shape.start, shape.end) == ("AI Agent", "Reply")
    assert shape.reads == [FieldRead(("body", "question"), "input"),
                           FieldRead(("body", "customer"), "customer")]  # fmt: skip


def test_the_end_is_the_agent_when_a_branch_follows_it_and_retrievers_are_found():
    langchain = "@n8n/n8n-nodes-langchain."
    workflow = {
        "nodes": [
            node("Form", "n8n-nodes-base.formTrigger"),
            node("Clean", "n8n-nodes-base.set", value="={{ $('Form').item.json.topic }}"),
            node("Agent", langchain + "agent", promptType="define", text="={{ $json.q }}"),
            node("Store", langchain + "vectorStoreInMemory", mode="retrieve-as-tool"),
            node("If", "n8n-nodes-base.if"),
            node("A", "n8n-nodes-base.noOp"),
            node("B", "n8n-nodes-base.noOp"),
        ],
        "connections": {
            **link("Form", "Clean"), **link("Clean", "Agent"), **link("Store", "Agent", "ai_tool"),
            **link("Agent", "If"),
            "If": {"main": [[{"node": "A", "type": "main", "index": 0}],
                            [{"node": "B", "type": "main", "index": 0}]]},
        },
    }  # fmt: skip
    shape = anatomy(workflow)
    assert (shape.trigger, shape.start, shape.end) == ("Form", "Clean", "Agent")
    # Clean reads topic by the trigger's name; the agent's $json.q is Clean's, not the trigger's.
    assert shape.reads == [FieldRead(("topic",), "input")]
    assert shape.retrievers == ["Store"]


def test_the_agents_system_messages_are_read_as_written():
    langchain = "@n8n/n8n-nodes-langchain."
    workflow = {
        "nodes": [
            node("Chat", langchain + "chatTrigger"),
            node("Agent", langchain + "agent",
                 options={"systemMessage": "=Help {{ $json.customer }} with orders. "}),
            node("Helper", langchain + "agentTool", options={}),
        ],
        "connections": {**link("Chat", "Agent"), **link("Helper", "Agent", "ai_tool")},
    }  # fmt: skip
    shape = anatomy(workflow)
    assert shape.agents == ["Agent", "Helper"]
    assert shape.instructions == ["Help {{ $json.customer }} with orders."]  # Helper sets none


LANGCHAIN = "@n8n/n8n-nodes-langchain."


def webhook_agent_with_memory(**memory_parameters):
    memory = node("Simple Memory", LANGCHAIN + "memoryBufferWindow", **memory_parameters)
    memory["typeVersion"] = 1.3
    return {
        "nodes": [*WEBHOOK_AGENT["nodes"], memory],
        "connections": {
            **WEBHOOK_AGENT["connections"], **link("Simple Memory", "AI Agent", "ai_memory"),
        },
    }  # fmt: skip


def test_a_webhook_agents_sessions_are_read_off_its_memory_nodes_key():
    for key in (
        "={{ $json.body.sessionId }}",
        "={{ $('Webhook').item.json.body.sessionId }}",
        "={{ $json['body'].sessionId }}",
    ):
        workflow = webhook_agent_with_memory(sessionIdType="customKey", sessionKey=key)
        assert anatomy(workflow).session == ("body", "sessionId"), key
    assert anatomy(load_workflow("chat_agent")).session == ("sessionId",)  # the Chat Trigger's


def test_a_webhook_agent_without_a_session_to_read_says_why():
    cases = {
        "no memory": (
            WEBHOOK_AGENT,
            "its agent has no memory node, so its executions are not conversations",
        ),
        "from input": (
            webhook_agent_with_memory(),  # the default: "Connected Chat Trigger Node"
            'memory "Simple Memory" takes the session from the input\'s sessionId, which '
            "the trigger Webhook (n8n-nodes-base.webhook) does not send",
        ),
        "computed": (
            webhook_agent_with_memory(
                sessionIdType="customKey", sessionKey="={{ $json.body.user + '-chat' }}"
            ),
            "memory \"Simple Memory\" keys sessions by ={{ $json.body.user + '-chat' }}, which "
            "is not one field of the trigger's item ($json.body.sessionId, or "
            "$('Webhook').item.json.body.sessionId)",
        ),
    }
    for name, (workflow, why) in cases.items():
        shape = anatomy(workflow)
        assert (shape.session, shape.no_session) == (None, why), name
