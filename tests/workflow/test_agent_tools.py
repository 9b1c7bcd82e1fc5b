from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.workflow.agent_tools import agent_tools

LC = "@n8n/n8n-nodes-langchain."


def _node(name, kind, **parameters):
    return {"name": name, "type": kind, "typeVersion": 1, "parameters": parameters}


def _tool_link(agent):
    return {"ai_tool": [[{"node": agent, "type": "ai_tool", "index": 0}]]}


WORKFLOW = {
    "nodes": [
        _node("AI Agent", LC + "agent"),
        _node("Calculator", LC + "toolCalculator"),
        _node("Get Order", LC + "toolHttpRequest", toolDescription="Finds an order by its id."),
        _node("Refund", LC + "toolCode", description="Creates a refund.", jsCode="return 1"),
        {**_node("Old Tool", LC + "toolCode", description="Retired."), "disabled": True},
        _node("Stray Tool", LC + "toolCode", description="Connected to nothing."),
        _node("Chat Model", LC + "lmChatOpenAi"),
    ],
    "connections": {
        "Calculator": _tool_link("AI Agent"),
        "Get Order": _tool_link("AI Agent"),
        "Refund": _tool_link("AI Agent"),
        "Old Tool": _tool_link("AI Agent"),
        "Chat Model": {"ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel"}]]},
    },
}


def test_the_agents_tools_are_its_enabled_tool_sub_nodes_named_as_n8n_names_them():
    assert agent_tools(WORKFLOW) == [
        AgentTool(
            name="Calculator",
            description="Useful for getting the result of a math expression. The input to this "
            "tool should be a valid mathematical expression that could be executed by a simple "
            "calculator.",
        ),
        AgentTool(name="Get_Order", description="Finds an order by its id."),
        AgentTool(name="Refund", description="Creates a refund."),
    ]


def test_a_workflow_without_an_agent_has_no_agent_tools():
    assert agent_tools({"nodes": [_node("Set", "n8n-nodes-base.set")], "connections": {}}) == []
