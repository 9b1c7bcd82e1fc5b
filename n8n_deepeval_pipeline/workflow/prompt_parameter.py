"""Where a node keeps the prompt an optimiser rewrites, and the text it holds now.

Read off n8n 2.41's own node descriptions:

- the AI Agent (``@n8n/n8n-nodes-langchain.agent``, and the Agent Tool) keeps its system
  message in ``options.systemMessage``. Unset, the editor fills in ``You are a helpful
  assistant`` (the option's default, ``ToolsAgent/prompt.js``) when the option is added;
  from version 1.9 on an unset option sends no system message at all;
- the Basic LLM Chain (``chainLlm``) keeps its messages in ``messages.messageValues``, each
  ``{type, message}``; a system message has the type ``SystemMessagePromptTemplate`` (the
  default type, LangChain's ``lc_name()``). Without one, its prompt is ``text`` (with
  ``promptType: define``), which usually quotes the input through an expression.

A path can name any other parameter instead (``--parameter``); the text must be a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from n8n_deepeval_pipeline.workflow.agent_tools import AGENT_TYPES
from n8n_deepeval_pipeline.workflow.graph import LANGCHAIN, node_type
from n8n_deepeval_pipeline.workflow.variants import parameter_value, variant_problems

CHAIN_TYPE = LANGCHAIN + "chainLlm"
PROMPTED_TYPES = AGENT_TYPES | {CHAIN_TYPE}
AGENT_SYSTEM_MESSAGE = "options.systemMessage"
# What n8n's editor puts in an AI Agent's System Message when the option is added.
AGENT_DEFAULT_SYSTEM_MESSAGE = "You are a helpful assistant"
CHAIN_SYSTEM_TYPE = "SystemMessagePromptTemplate"


class PromptParameterError(ValueError):
    """The node or parameter to optimise cannot be found, or holds no text.

    ``field``: which choice is at fault, ``node`` or ``parameter``.
    """

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class PromptParameter:
    """The node and parameter path of the prompt, and the text it starts from."""

    node: str
    path: str
    text: str
    unset: bool  # the workflow leaves it unset: ``text`` is what the editor would fill in

    def overrides(self, text: str) -> dict[str, dict[str, str]]:
        """The variant that sets ``text`` there (node → path → text)."""
        return {self.node: {self.path: text}}


def _nodes(workflow: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(node.get("name")): node for node in workflow.get("nodes") or []}


def prompted_nodes(workflow: Mapping[str, Any]) -> list[str]:
    """The AI Agents and LLM chains of the workflow, by name, in the workflow's order."""
    return [
        name
        for name, node in _nodes(workflow).items()
        if node_type(node) in PROMPTED_TYPES and not node.get("disabled")
    ]


def default_path(node: Mapping[str, Any]) -> str:
    """Where a node keeps its prompt: an agent's system message, a chain's (else its text)."""
    parameters = node.get("parameters") or {}
    if node_type(node) in AGENT_TYPES:
        return AGENT_SYSTEM_MESSAGE
    messages = parameter_value(parameters, "messages.messageValues")
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        kind = message.get("type", CHAIN_SYSTEM_TYPE) if isinstance(message, Mapping) else None
        if kind == CHAIN_SYSTEM_TYPE:
            return f"messages.messageValues.{index}.message"
    return "text"


def prompt_parameter(
    workflow: Mapping[str, Any], node: str | None = None, path: str | None = None
) -> PromptParameter:
    """The prompt to optimise: ``node`` (default: the one AI Agent or LLM chain) at ``path``."""
    nodes = _nodes(workflow)
    prompted = prompted_nodes(workflow)
    if node is None:
        if len(prompted) != 1:
            found = ", ".join(prompted) if prompted else "none"
            raise PromptParameterError(
                "name the node whose prompt to optimise (--node or optimize.node): the "
                f"workflow's AI Agents and LLM chains are {found}",
                "node",
            )
        node = prompted[0]
    if node not in nodes:
        known = ", ".join(prompted) or "none"
        raise PromptParameterError(
            f"node {node!r} is not in the workflow (its agents and chains: {known})", "node"
        )
    found_node = nodes[node]
    if path is None:
        if node not in prompted:
            raise PromptParameterError(
                f"node {node!r} is not an AI Agent or an LLM chain: name the parameter that "
                "holds its prompt (--parameter or optimize.parameter)",
                "parameter",
            )
        path = default_path(found_node)
    problems = variant_problems(workflow, {"optimize": {node: {path: ""}}})
    if problems:
        raise PromptParameterError(problems[0].removesuffix(" (variants: optimize)"), "parameter")
    value = parameter_value(found_node.get("parameters") or {}, path)
    if value is None and path == AGENT_SYSTEM_MESSAGE:
        return PromptParameter(node, path, AGENT_DEFAULT_SYSTEM_MESSAGE, unset=True)
    if not isinstance(value, str) or not value.strip():
        shown = "unset" if value is None else f"not text ({type(value).__name__})"
        raise PromptParameterError(
            f"node {node!r}: parameter {path!r} is {shown}: the optimiser needs a prompt to "
            "start from",
            "parameter",
        )
    return PromptParameter(node, path, value, unset=False)
