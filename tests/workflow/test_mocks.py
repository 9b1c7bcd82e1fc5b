"""Mocks in the harness copy: what acts on a real service, and the nodes standing in for it."""

import json

from n8n_deepeval_pipeline.workflow.harness import HARNESS_WEBHOOK, MOCKS_FIELD, harness_copy
from n8n_deepeval_pipeline.workflow.mocks import (
    MockAnswer,
    check_mocks,
    mocked_nodes,
    service_nodes,
)
from tests.workflow.test_harness import link, node

LC = "@n8n/n8n-nodes-langchain."
ORDER_URL = "=https://orders.example/{{ $fromAI('orderId', 'the order id', 'string') }}"
AGENT = {
    "nodes": [
        node("Webhook", "n8n-nodes-base.webhook"),
        node("AI Agent", LC + "agent"),
        node("OpenAI Chat Model", LC + "lmChatOpenAi", credentials={"openAiApi": {"id": "1"}}),
        node("Postgres Memory", LC + "memoryPostgresChat", credentials={"postgres": {"id": "2"}}),
        node("Embeddings", LC + "embeddingsOpenAi", credentials={"openAiApi": {"id": "1"}}),
        node("Docs", LC + "vectorStorePinecone", credentials={"pineconeApi": {"id": "3"}},
             parameters={"mode": "retrieve-as-tool", "toolDescription": "Search the docs"}),
        node("Save Docs", LC + "vectorStorePinecone", credentials={"pineconeApi": {"id": "3"}},
             parameters={"mode": "insert"}),
        node("Order Lookup", "n8n-nodes-base.httpRequestTool",
             parameters={"url": ORDER_URL, "toolDescription": "Looks up an order"}),
        node("Send email", "n8n-nodes-base.gmailTool", credentials={"gmailOAuth2": {"id": "4"}},
             parameters={"toolDescription": "Sends an e-mail"}),
        node("Calculator", LC + "toolCalculator"),
        node("Notify", "n8n-nodes-base.httpRequest"),
        node("Format", "n8n-nodes-base.set"),
        node("After the end", "n8n-nodes-base.slack", credentials={"slackApi": {"id": "5"}}),
    ],
    "connections": {
        "Webhook": link("AI Agent"),
        "OpenAI Chat Model": link("AI Agent", "ai_languageModel"),
        "Postgres Memory": link("AI Agent", "ai_memory"),
        "Embeddings": link("Docs", "ai_embedding"),
        "Docs": link("AI Agent", "ai_tool"),
        "Order Lookup": link("AI Agent", "ai_tool"),
        "Send email": link("AI Agent", "ai_tool"),
        "Calculator": link("AI Agent", "ai_tool"),
        "AI Agent": link("Notify"),
        "Notify": link("Format"),
        "Format": link("After the end"),
        "Save Docs": link("Format"),
    },
}  # fmt: skip


def test_the_nodes_that_act_on_a_real_service_are_named_in_plain_words():
    listing = [str(found) for found in service_nodes(AGENT, "AI Agent", "Format")]
    # Models, memory, embeddings and a vector store that only reads are what is measured;
    # a node after the end node never runs; one only a node outside the copy feeds neither.
    assert listing == [
        '"Notify" (n8n-nodes-base.httpRequest) makes HTTP requests, on every run',
        '"Order Lookup" (n8n-nodes-base.httpRequestTool) makes HTTP requests, '
        "as a tool of AI Agent, on every run",
        '"Send email" (n8n-nodes-base.gmailTool) calls a service with the credential '
        "gmailOAuth2, as a tool of AI Agent, on every run",
    ]
    mocked = {"Notify", "Send email"}
    assert [n.name for n in service_nodes(AGENT, "AI Agent", "Format", mocked)] == ["Order Lookup"]


def test_a_community_model_is_measured_for_the_link_it_is_wired_in_with():
    workflow = json.loads(json.dumps(AGENT))
    model = next(n for n in workflow["nodes"] if n["name"] == "OpenAI Chat Model")
    model |= {"name": "DeepSeek", "type": "n8n-nodes-deepseek.lmChatDeepSeek",
              "credentials": {"deepSeekApi": {"id": "6"}}}  # fmt: skip
    workflow["connections"]["DeepSeek"] = workflow["connections"].pop("OpenAI Chat Model")
    names = [found.name for found in service_nodes(workflow, "AI Agent", "Format")]
    assert names == ["Notify", "Order Lookup", "Send email"]  # the model is not a service
    assert check_mocks(workflow, "AI Agent", "Format", ["DeepSeek"]) == [
        'mock "DeepSeek": only main-path nodes and tools can be mocked, not a '
        "lmChatDeepSeek sub-node (it is what the benchmark measures)"
    ]


def test_a_mock_must_name_a_node_that_runs():
    assert check_mocks(AGENT, "AI Agent", "Format", ["Notify", "After the end"]) == [
        'mock "After the end": no node of that name runs between "AI Agent" and "Format"'
    ]


def test_a_mocked_tool_is_a_code_tool_the_agent_sees_as_the_same_tool():
    answers = {"Order Lookup": MockAnswer(per_row=True), "Send email": MockAnswer("sent")}
    tool = mocked_nodes(AGENT, answers)["Order Lookup"]
    assert (tool["name"], tool["type"], tool["typeVersion"]) == (
        "Order Lookup", LC + "toolCode", 1.3)  # fmt: skip
    parameters = tool["parameters"]
    assert parameters["description"] == "Looks up an order"
    assert json.loads(parameters["inputSchema"]) == {
        "type": "object",
        "properties": {"orderId": {"type": "string", "description": "the order id"}},
        "required": ["orderId"],
    }
    # The row's answer travels in the request body; the tool reads it from the webhook.
    assert (
        f'$("{HARNESS_WEBHOOK}").first().json.body?.["{MOCKS_FIELD}"]?.["Order Lookup"]'
        in (parameters["jsCode"])
    )
    email = mocked_nodes(AGENT, answers)["Send email"]["parameters"]
    assert 'const value = "sent";' in email["jsCode"]
    assert "inputSchema" not in email  # no declared arguments: one text input, as n8n's own


def test_a_mocked_main_node_is_a_code_node_of_the_same_name_in_the_copy():
    replacements = mocked_nodes(AGENT, {"Notify": MockAnswer({"status": "queued"})})
    copy = harness_copy(AGENT, "AI Agent", "Format", "p", "h", replacements)
    notify = next(n for n in copy["nodes"] if n["name"] == "Notify")
    assert notify["type"] == "n8n-nodes-base.code"
    assert 'const value = {"status": "queued"};' in notify["parameters"]["jsCode"]
    assert copy["connections"]["AI Agent"] == link("Notify")  # wired as before
    assert "Send email" in {n["name"] for n in copy["nodes"]}  # unmocked: kept as it is


def test_what_the_benchmark_measures_cannot_be_mocked():
    assert check_mocks(AGENT, "AI Agent", "Format", ["OpenAI Chat Model", "Docs"]) == [
        'mock "OpenAI Chat Model": only main-path nodes and tools can be mocked, not a '
        "lmChatOpenAi sub-node (it is what the benchmark measures)"
    ]  # a vector store wired in as a tool is a tool: it becomes a Code Tool
    assert mocked_nodes(AGENT, {"Docs": MockAnswer("no docs")})["Docs"]["type"] == (LC + "toolCode")
