"""What the Synthesizer is told about a workflow, read off it as ``init`` reads it.

DeepEval's styling (``StylingConfig``: scenario, task, input format; and its
conversational twin) steers the inputs it writes. Here it comes from the workflow's
anatomy: the agent's system message is the scenario, its tools' names and descriptions
are in the task, and the field of the trigger's item that carries the user's message is
the input format. Each can be overridden by the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.workflow.anatomy import CHAT_TRIGGER, WEBHOOK, Anatomy, anatomy
from n8n_deepeval_pipeline.workflow.graph import LANGCHAIN, WorkflowGraph, node_type

_CHAIN_LLM = LANGCHAIN + "chainLlm"
_FORM_TRIGGER = "n8n-nodes-base.formTrigger"


class Styling(BaseModel):
    """DeepEval's styling for one workflow, and the user its conversations are written for."""

    model_config = ConfigDict(frozen=True)

    scenario: str
    task: str
    input_format: str
    user: str  # who talks to the workflow: a conversational golden's userDescription
    assistant: str  # who answers: the other participant of a synthesized conversation
    expected_output_format: str | None = None

    @property
    def participant_roles(self) -> str:
        """The conversational styling's participants: the user, then the assistant."""
        return f"The user: {self.user}. The assistant: {self.assistant}."

    def overridden(self, **fields: str | None) -> Styling:
        """The styling with the fields the user gave instead (None: kept)."""
        given = {name: value for name, value in fields.items() if value is not None}
        return self.model_copy(update=given) if given else self


def styling_of(workflow: Mapping[str, Any]) -> Styling:
    """The styling read off ``workflow``: its agents' instructions, tools and trigger."""
    shape = anatomy(workflow)
    title = str(workflow.get("name") or "").strip() or "(unnamed)"
    instructions = system_messages(workflow, shape)
    channel = _channel(shape)
    user = f"someone who writes to the n8n workflow {title!r} through {channel}"
    if instructions:
        scenario = (
            f"Users of the n8n workflow {title!r} write to its AI assistant, whose "
            f"instructions are: {' '.join(instructions)}"
        )
    else:
        scenario = f"Users of the n8n workflow {title!r} write to it through {channel}."
    return Styling(
        scenario=scenario,
        task=_task(title, shape),
        input_format=_input_format(shape),
        user=user,
        assistant=_assistant(title, shape),
    )


def system_messages(workflow: Mapping[str, Any], shape: Anatomy | None = None) -> list[str]:
    """The system messages of the workflow's agents (and LLM chains), in node-name order.

    An expression's leading ``=`` is dropped; what it computes is left as written.
    """
    graph = WorkflowGraph(workflow)
    agents = (shape or anatomy(workflow)).agents
    found: list[str] = []
    for name in sorted(set(agents) | set(graph.names(lambda n: node_type(n) == _CHAIN_LLM))):
        parameters = graph.nodes[name].get("parameters") or {}
        options = parameters.get("options") or {}
        candidates = [options.get("systemMessage")] if isinstance(options, Mapping) else []
        messages = (parameters.get("messages") or {}).get("messageValues") or []
        candidates += [
            message.get("message")
            for message in messages
            if isinstance(message, Mapping) and "System" in str(message.get("type", ""))
        ]
        found += [text.removeprefix("=").strip() for text in candidates if isinstance(text, str)]
    return [text for text in dict.fromkeys(found) if text]


def _channel(shape: Anatomy) -> str:
    if shape.trigger_type == CHAT_TRIGGER:
        return "its chat"
    if shape.trigger_type == WEBHOOK:
        return f"its Webhook ({shape.trigger})"
    if shape.trigger_type == _FORM_TRIGGER:
        return f"its form ({shape.trigger})"
    return f"its trigger {shape.trigger}" if shape.trigger else "its trigger"


def _task(title: str, shape: Anatomy) -> str:
    who = (
        f"the AI agent of the n8n workflow {title!r}"
        if shape.agents
        else f"the n8n workflow {title!r}"
    )
    task = f"Answer each user's request as {who} does."
    if shape.tools:
        tools = "; ".join(
            f"{tool.name} ({tool.description.rstrip('.')})" if tool.description else tool.name
            for tool in shape.tools
        )
        task += f" It can call these tools: {tools}."
    if shape.memories:
        task += " It remembers what the user said earlier in the conversation."
    return task


def _assistant(title: str, shape: Anatomy) -> str:
    what = "the AI agent" if shape.agents else "the automation"
    tools = (
        f", which can call {', '.join(tool.name for tool in shape.tools)}" if shape.tools else ""
    )
    return f"{what} of the n8n workflow {title!r}{tools}"


def _input_format(shape: Anatomy) -> str:
    """Where the user's message arrives: the first field of the trigger's item read."""
    message = ".".join(str(segment) for segment in shape.columns[0].path) if shape.columns else ""
    if shape.trigger_type == CHAT_TRIGGER:
        return "One message a user types into the chat, as plain text."
    if shape.trigger_type == WEBHOOK:
        field = message.removeprefix("body.") if message != "body" else ""
        where = f"the `{field}` field of the JSON body" if field else "the JSON body"
        return f"One user message, as plain text: {where} a client POSTs to the Webhook."
    if message:
        return f"One user message, as plain text: the `{message}` field of the trigger's item."
    return "One user message, as plain text."
