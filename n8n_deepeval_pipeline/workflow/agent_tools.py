"""The tools an agent of a workflow has: its tool sub-nodes, as the agent sees them.

n8n hands an AI Agent one function per tool node connected to it (``ai_tool``), named
after the node (unsafe characters replaced, as ``agent_steps.tool_name`` does) and
described by the node's description parameter. A trace built from these lists every
tool the agent could have used, not only those it called. An MCP Client Tool node is no
tool of its own: it offers its server's tools (``n8n_data.mcp_calls``), known once the
server is listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool, tool_name
from n8n_deepeval_pipeline.workflow.graph import LANGCHAIN, WorkflowGraph, is_disabled, node_type
from n8n_deepeval_pipeline.workflow.mcp_nodes import is_mcp_client

AGENT_TYPES = frozenset({LANGCHAIN + "agent", LANGCHAIN + "agentTool"})
# Tools whose description is built in, not a parameter (LangChain's own wording).
_BUILT_IN_DESCRIPTIONS = {
    LANGCHAIN + "toolCalculator": "Useful for getting the result of a math expression. The "
    "input to this tool should be a valid mathematical expression that could be executed "
    "by a simple calculator.",
}


def tool_description(node: Mapping[str, Any]) -> str:
    """The description the agent is given for a tool node."""
    parameters = node.get("parameters") or {}
    for key in ("toolDescription", "description"):
        value = parameters.get(key) if isinstance(parameters, Mapping) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return _BUILT_IN_DESCRIPTIONS.get(node_type(node), "")


def agent_tools(workflow: Mapping[str, Any]) -> list[AgentTool]:
    """The enabled tool nodes connected to the workflow's agents, in node-name order."""
    graph = WorkflowGraph(workflow)
    agents = {name for name, node in graph.nodes.items() if node_type(node) in AGENT_TYPES}
    names = {
        link.source
        for link in graph.links
        if link.kind == "ai_tool" and link.target in agents and link.source in graph.nodes
    }
    return [
        AgentTool(name=tool_name(name), description=tool_description(graph.nodes[name]))
        for name in sorted(names)
        if not is_disabled(graph.nodes[name]) and not is_mcp_client(graph.nodes[name])
    ]
