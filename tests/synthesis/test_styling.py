"""The styling DeepEval's Synthesizer is given, read off a workflow as `init` reads it."""

from n8n_deepeval_pipeline.synthesis.styling import styling_of, system_messages
from tests.live.n8n_server import load_workflow
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT

SUPPORT_PROMPT = "You are Acme's support agent. Never promise refunds."


def with_tools(workflow: dict, system_message: str) -> dict:
    """The webhook agent with a system message and two tools, one described."""
    nodes = [dict(node) for node in workflow["nodes"]]
    agent = next(node for node in nodes if node["name"] == "AI Agent")
    agent["parameters"] = {**agent["parameters"], "options": {"systemMessage": system_message}}
    nodes += [
        {"name": "Order Lookup", "type": "n8n-nodes-base.httpRequestTool", "typeVersion": 4.2,
         "parameters": {"toolDescription": "Finds an order by its id."}},
        {"name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator",
         "typeVersion": 1, "parameters": {}},
    ]  # fmt: skip
    tools = {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]}
    connections = {**workflow["connections"], "Order Lookup": tools, "Calculator": tools}
    return {**workflow, "nodes": nodes, "connections": connections}


def test_the_agents_system_message_is_the_scenario_and_its_tools_are_in_the_task() -> None:
    styling = styling_of(with_tools(WEBHOOK_AGENT, "=" + SUPPORT_PROMPT))
    assert styling.scenario == (
        "Users of the n8n workflow 'support' write to its AI assistant, whose instructions "
        f"are: {SUPPORT_PROMPT}"
    )  # an expression's leading = is not part of the message
    assert styling.task == (
        "Answer each user's request as the AI agent of the n8n workflow 'support' does. It "
        "can call these tools: Calculator (Useful for getting the result of a math "
        "expression. The input to this tool should be a valid mathematical expression that "
        "could be executed by a simple calculator); Order_Lookup (Finds an order by its id)."
    )
    assert styling.assistant == (
        "the AI agent of the n8n workflow 'support', which can call Calculator, Order_Lookup"
    )


def test_the_triggers_field_the_start_node_reads_is_the_input_format() -> None:
    webhook = styling_of(WEBHOOK_AGENT)  # the agent's prompt is {{ $json.body.question }}
    assert webhook.input_format == (
        "One user message, as plain text: the `question` field of the JSON body a client "
        "POSTs to the Webhook."
    )
    assert (
        webhook.user
        == "someone who writes to the n8n workflow 'support' through its Webhook (Webhook)"
    )
    chat = styling_of(load_workflow("chat_agent"))
    assert chat.input_format == "One message a user types into the chat, as plain text."
    assert (
        chat.scenario == "Users of the n8n workflow 'live chat agent' write to it through its chat."
    )
    assert chat.task.endswith("It remembers what the user said earlier in the conversation.")
    assert chat.participant_roles == (
        "The user: someone who writes to the n8n workflow 'live chat agent' through its chat. "
        "The assistant: the AI agent of the n8n workflow 'live chat agent', which can call "
        "Calculator."
    )


def test_a_chains_system_messages_count_and_the_user_can_override_any_field() -> None:
    chain = {
        "name": "summariser",
        "nodes": [
            {"name": "Webhook", "type": "n8n-nodes-base.webhook", "parameters": {}},
            {"name": "Chain", "type": "@n8n/n8n-nodes-langchain.chainLlm", "parameters": {
                "promptType": "define", "text": "={{ $json.body.text }}",
                "messages": {"messageValues": [
                    {"type": "SystemMessagePromptTemplate", "message": "Summarise in one line."},
                    {"type": "HumanMessagePromptTemplate", "message": "ignored"}]}}},
        ],
        "connections": {"Webhook": {"main": [[{"node": "Chain", "type": "main", "index": 0}]]}},
    }  # fmt: skip
    assert system_messages(chain) == ["Summarise in one line."]
    styling = styling_of(chain).overridden(task="Summarise support tickets.", scenario=None)
    assert styling.task == "Summarise support tickets."
    assert styling.scenario.endswith("whose instructions are: Summarise in one line.")
