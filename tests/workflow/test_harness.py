"""The harness copy: start/end checks in plain words, and the graph the pipeline runs."""

import pytest

from n8n_deepeval_pipeline.workflow.harness import (
    HARNESS_WEBHOOK,
    MOCKS_FIELD,
    check_start_and_end,
    default_input,
    harness_copy,
)


def node(name, node_type, **extra):
    return {"name": name, "type": node_type, "typeVersion": 1, "position": [0, 0],
            "parameters": {}, **extra}  # fmt: skip


def link(target, kind="main"):
    return {kind: [[{"node": target, "type": kind, "index": 0}]]}


TRIGGER = "When chat message received"
CHAT_AGENT = {
    "name": "Support agent",
    "nodes": [
        node(TRIGGER, "@n8n/n8n-nodes-langchain.chatTrigger", webhookId="w-1"),
        node("AI Agent", "@n8n/n8n-nodes-langchain.agent"),
        node("OpenAI Chat Model", "@n8n/n8n-nodes-langchain.lmChatOpenAi",
             credentials={"openAiApi": {"id": "cred-7", "name": "OpenAI"}}),
        node("Calculator", "@n8n/n8n-nodes-langchain.toolCalculator"),
        node("Simple Memory", "@n8n/n8n-nodes-langchain.memoryBufferWindow"),
        node("Format", "n8n-nodes-base.set"),
        node("Send to Slack", "n8n-nodes-base.slack"),
        node("Unrelated", "n8n-nodes-base.noOp"),
    ],
    "connections": {
        TRIGGER: link("AI Agent"),
        "OpenAI Chat Model": link("AI Agent", "ai_languageModel"),
        "Calculator": link("AI Agent", "ai_tool"),
        "Simple Memory": link("AI Agent", "ai_memory"),
        "AI Agent": link("Format"),
        "Format": link("Send to Slack"),
    },
}  # fmt: skip


def test_start_and_end_are_checked_in_plain_words():
    assert check_start_and_end(CHAT_AGENT, "AI Agent", "Format") == []
    assert check_start_and_end(CHAT_AGENT, TRIGGER, "Format") == [
        f'start node "{TRIGGER}" is a trigger: name the first node the trigger feeds'
    ]
    assert check_start_and_end(CHAT_AGENT, "Agent", "Formatter") == [
        'start node "Agent" does not exist in the workflow',
        'end node "Formatter" does not exist in the workflow',
    ]
    assert check_start_and_end(CHAT_AGENT, "Unrelated", "Format") == [
        'start node "Unrelated" has no incoming connection',
        'end node "Format" cannot be reached from start node "Unrelated"',
    ]
    assert check_start_and_end(CHAT_AGENT, "Format", "AI Agent") == [
        'end node "AI Agent" cannot be reached from start node "Format"'
    ]


def test_the_copy_keeps_the_path_and_its_sub_nodes_and_stands_in_for_the_trigger():
    copy = harness_copy(CHAT_AGENT, "AI Agent", "Format", "n8n-deepeval-abc", "hook-1")
    names = {n["name"]: n for n in copy["nodes"]}
    assert set(names) == {HARNESS_WEBHOOK, TRIGGER, "AI Agent", "OpenAI Chat Model",
                          "Calculator", "Simple Memory", "Format"}  # fmt: skip
    assert names[TRIGGER]["type"] == "n8n-nodes-base.code"  # same name, so $('…') works
    # A Chat Trigger's stand-in passes the body on (its default input is the chat shape).
    assert names[TRIGGER]["parameters"]["jsCode"] == (
        "const request = $input.first().json;\n"
        f"const {{ {MOCKS_FIELD}: _mocks, ...body }} = request.body ?? {{}};\n"
        "return [{ json: body }];"
    )
    webhook = names[HARNESS_WEBHOOK]
    assert (webhook["webhookId"], webhook["parameters"]["path"]) == ("hook-1", "n8n-deepeval-abc")
    assert webhook["parameters"]["responseMode"] == "lastNode"
    assert names["OpenAI Chat Model"]["credentials"] == {
        "openAiApi": {"id": "cred-7", "name": "OpenAI"}
    }
    connections = copy["connections"]
    assert connections[HARNESS_WEBHOOK]["main"][0][0]["node"] == TRIGGER
    assert connections[TRIGGER]["main"][0][0]["node"] == "AI Agent"
    assert connections["Calculator"] == link("AI Agent", "ai_tool")
    assert "Format" not in connections  # everything after the end node is cut
    assert CHAT_AGENT["connections"]["Format"] == link("Send to Slack")  # original untouched


def test_ending_at_the_agent_cuts_what_follows_it():
    copy = harness_copy(CHAT_AGENT, "AI Agent", "AI Agent", "p", "h")
    assert "Format" not in {n["name"] for n in copy["nodes"]}
    assert "AI Agent" not in copy["connections"]


TRIAGE = {
    "name": "Ticket triage",
    "nodes": [
        node("Ticket in", "n8n-nodes-base.webhook", webhookId="w-2",
             parameters={"path": "triage", "responseMode": "responseNode"}),
        node("Triage", "n8n-nodes-base.code", parameters={"jsCode": "return $input.all();"}),
        node("Acknowledge", "n8n-nodes-base.respondToWebhook",
             parameters={"respondWith": "text", "responseBody": "received"}),
        node("Log", "n8n-nodes-base.set"),
        node("Answer", "n8n-nodes-base.respondToWebhook",
             parameters={"respondWith": "firstIncomingItem"}),
    ],
    "connections": {
        "Ticket in": link("Triage"),
        "Triage": link("Acknowledge"),
        "Acknowledge": link("Log"),
        "Log": link("Answer"),
    },
}  # fmt: skip
PASS_THROUGH = {"name": "Acknowledge", "type": "n8n-nodes-base.noOp", "typeVersion": 1,
                "position": [0, 0], "parameters": {}}  # fmt: skip


def by_name(copy):
    return {n["name"]: n for n in copy["nodes"]}


def test_a_respond_to_webhook_that_ends_the_copy_answers_the_call_as_in_production():
    """n8n refuses a Respond to Webhook its webhook does not wait for ("Unused Respond to
    Webhook node"): the stand-in webhook waits for the end node; one before it passes on."""
    nodes = by_name(harness_copy(TRIAGE, "Triage", "Answer", "p", "h"))
    assert nodes[HARNESS_WEBHOOK]["parameters"]["responseMode"] == "responseNode"
    assert nodes["Answer"] == TRIAGE["nodes"][4]  # answers with what production answers
    assert nodes["Acknowledge"] == PASS_THROUGH  # would answer first, with another body


def test_a_respond_to_webhook_before_another_end_node_passes_its_items_on():
    nodes = by_name(harness_copy(TRIAGE, "Triage", "Log", "p", "h"))
    assert nodes[HARNESS_WEBHOOK]["parameters"]["responseMode"] == "lastNode"
    assert nodes["Acknowledge"] == PASS_THROUGH
    assert set(nodes) == {HARNESS_WEBHOOK, "Ticket in", "Triage", "Acknowledge", "Log"}


def test_a_webhook_triggers_stand_in_outputs_the_request_as_n8n_does():
    webhook_agent = {
        "nodes": [node("Webhook", "n8n-nodes-base.webhook"), node("Agent", "n8n-nodes-base.code")],
        "connections": {"Webhook": link("Agent")},
    }
    copy = harness_copy(webhook_agent, "Agent", "Agent", "p", "h")
    stand_in = next(n for n in copy["nodes"] if n["name"] == "Webhook")
    assert stand_in["parameters"]["jsCode"].endswith(
        "return [{ json: { headers: request.headers, params: request.params, "
        "query: request.query, body } }];"
    )  # so $json.body.chatInput reads the default body's chatInput
    assert default_input(webhook_agent["nodes"][0]) is None  # the default body, under body


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        (node(TRIGGER, "@n8n/n8n-nodes-langchain.chatTrigger"),
         {"sessionId": "{{ sessionId }}", "action": "sendMessage", "chatInput": "{{ input }}"}),
        (node("Form", "n8n-nodes-base.formTrigger", parameters={"formFields": {"values": [
            {"fieldLabel": "Your question"}]}}),
         {"Your question": '{{ row.get("Your question") }}', "formMode": "production"}),
        (node("Called", "n8n-nodes-base.executeWorkflowTrigger", parameters={
            "workflowInputs": {"values": [{"name": "query"}, {"name": "userId"}]}}),
         {"query": '{{ row.get("query") }}', "userId": '{{ row.get("userId") }}'}),
        (node("Called", "n8n-nodes-base.executeWorkflowTrigger",
              parameters={"inputSource": "passthrough"}), None),
        (node("Every day", "n8n-nodes-base.scheduleTrigger"), None),
    ],
)  # fmt: skip
def test_the_default_input_is_what_the_replaced_trigger_outputs(trigger, expected):
    assert default_input(trigger) == expected


def test_an_end_node_that_makes_an_image_is_answered_with_the_image_itself():
    options = {"binaryPropertyOutput": "poster"}
    draw = node(
        "Draw",
        "@n8n/n8n-nodes-langchain.openAi",
        parameters={"resource": "image", "options": options},
    )
    workflow = {
        "nodes": [
            node("Webhook", "n8n-nodes-base.webhook"),
            draw,
            node("Post", "n8n-nodes-base.slack"),
        ],
        "connections": {"Webhook": link("Draw"), "Draw": link("Post")},
    }
    webhook = next(
        n
        for n in harness_copy(workflow, "Draw", "Draw", "p", "w")["nodes"]
        if n["name"] == HARNESS_WEBHOOK
    )
    assert webhook["parameters"]["responseData"] == "firstEntryBinary"
    assert webhook["parameters"]["responseBinaryPropertyName"] == "poster"
    # an image node that only reads an image answers in text: its item as usual
    draw["parameters"]["operation"] = "analyze"
    plain = harness_copy(workflow, "Draw", "Draw", "p", "w")["nodes"]
    assert (
        "responseData" not in next(n for n in plain if n["name"] == HARNESS_WEBHOOK)["parameters"]
    )
