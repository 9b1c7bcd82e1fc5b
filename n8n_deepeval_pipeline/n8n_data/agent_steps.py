"""The n8n AI Agent's ``intermediateSteps`` and what DeepEval makes of them.

With *Return Intermediate Steps* on, the agent returns
``[{action: {tool, toolInput, log, toolCallId?, messageLog?}, observation}]``; the tool
input is an object or a string. Other agents answer with ``actions: [{tool, input}]`` or
OpenAI-style ``tool_calls: [{name, arguments}]``: those steps are read the same way.
From them come ``tools_called`` and a synthetic trace, built as plain dicts here so that
this module needs neither DeepEval nor Dagster, in the shape DeepEval's own LangChain
integration records an agent: an agent span whose ``available_tools`` are every tool the
agent has (the workflow's tool nodes, not only those called), an llm span whose input is
the chat history, the user's message and the tool definitions, an llm span per further
reasoning ``log``, and a tool span per call.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from n8n_deepeval_pipeline.n8n_data.json_fields import structured

_TOOL_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


class AgentTool(BaseModel):
    """One tool an agent can call: its function name and description."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""


class AgentAction(BaseModel):
    """The ``action`` half of a step (LangChain's AgentAction as n8n serialises it)."""

    model_config = ConfigDict(extra="allow")

    tool: str | None = None
    tool_input: Any = Field(default=None, validation_alias=AliasChoices("toolInput", "tool_input"))
    log: str | None = None
    tool_call_id: str | None = Field(
        default=None, validation_alias=AliasChoices("toolCallId", "tool_call_id")
    )


class IntermediateStep(BaseModel):
    """One tool call of the agent and what the tool returned."""

    model_config = ConfigDict(extra="allow")

    action: AgentAction = AgentAction()
    observation: Any = None


class ToolCallData(BaseModel):
    """A tool call in DeepEval's terms (``ToolCall``), without importing DeepEval."""

    name: str
    input_parameters: dict[str, Any]
    output: Any = None
    reasoning: str | None = None


class StepsShapeError(ValueError):
    """``intermediateSteps`` is present but not in a shape n8n produces."""


def parse_intermediate_steps(value: Any) -> list[IntermediateStep] | None:
    """Steps from a list, or from its JSON text; None when there are none recorded."""
    value = structured(value, "intermediateSteps", StepsShapeError)
    if value is None:
        return None
    if not isinstance(value, list):
        raise StepsShapeError(f"intermediateSteps must be a list, got {type(value).__name__}")
    try:
        return [IntermediateStep.model_validate(_as_n8n_step(step)) for step in value]
    except ValidationError as error:
        raise StepsShapeError(f"intermediateSteps has an unexpected shape: {error}") from None


def _as_n8n_step(step: Any) -> Any:
    """An ``{tool, input}`` action or a ``{name, arguments}`` tool call in n8n's step shape."""
    if not isinstance(step, dict) or "action" in step:
        return step
    function = step.get("function")
    call: dict[str, Any] = function if isinstance(function, dict) else step
    name = step.get("tool", call.get("name"))
    if name is None:
        return step
    arguments = next(
        (call[key] for key in ("toolInput", "input", "arguments", "args") if key in call), None
    )
    action = {"tool": name, "toolInput": arguments, "toolCallId": step.get("id")}
    if step.get("log"):
        action["log"] = step["log"]
    return {"action": action, "observation": step.get("observation", step.get("output"))}


def _input_parameters(tool_input: Any) -> dict[str, Any]:
    if isinstance(tool_input, dict):
        return tool_input
    if isinstance(tool_input, str):
        try:
            parsed = json.loads(tool_input)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"input": tool_input}


def tool_calls(steps: list[IntermediateStep]) -> list[ToolCallData]:
    """One tool call per step; an unnamed tool is called ``tool_<n>``."""
    return [
        ToolCallData(
            name=step.action.tool or f"tool_{index}",
            input_parameters=_input_parameters(step.action.tool_input),
            output=step.observation,
            reasoning=step.action.log or None,
        )
        for index, step in enumerate(steps, start=1)
    ]


def called_tool_names(intermediate_steps: Any) -> list[str]:
    """Names of the tools the agent called, in order (none when there are no steps)."""
    return [call.name for call in tool_calls(parse_intermediate_steps(intermediate_steps) or [])]


def marked_mocked(steps: list[Any] | None, mocked_tools: set[str]) -> list[Any] | None:
    """The steps, those of the mocked tools marked ``mocked: true`` (the tool never ran)."""
    if not steps or not mocked_tools:
        return steps
    return [
        {**step, "mocked": True}
        if isinstance(step, dict) and (step.get("action") or {}).get("tool") in mocked_tools
        else step
        for step in steps
    ]


def tool_name(node_name: str) -> str:
    """The tool name n8n gives a tool node (``Get Events`` → ``Get_Events``), max 64 chars."""
    return _TOOL_NAME_UNSAFE.sub("_", node_name)[:64]


def _span(kind: str, name: str, span_input: Any, output: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "input": span_input,
        "output": output,
        "tools_called": [],
        "available_tools": [],
        "agent_handoffs": [],
        "children": [],
    }


def _tool_definition(tool: AgentTool) -> dict[str, str]:
    # DeepEval's LangChain integration lists each tool definition as a "Tool Input" message.
    definition = {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description},
    }
    return {"role": "Tool Input", "content": str(definition)}


def synthetic_trace(
    steps: list[IntermediateStep],
    user_input: Any,
    actual_output: Any,
    tools: list[AgentTool] | None = None,
    history: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The trace DeepEval's trace metrics read from ``test_case._trace_dict``.

    ``tools``: what the agent had (None: only the tools it called are known);
    ``history``: earlier messages of the session as ``{role: human|ai, content}``.
    """
    calls = tool_calls(steps)
    root = _span("agent", "n8n_ai_agent", user_input, actual_output or "")
    root["tools_called"] = [call.name for call in calls]
    known = tools if tools is not None else [AgentTool(name=n) for n in {c.name for c in calls}]
    root["available_tools"] = sorted(tool.name for tool in known)
    messages = [
        *(history or []),
        {"role": "human", "content": "" if user_input is None else str(user_input)},
        *(_tool_definition(tool) for tool in sorted(known, key=lambda t: t.name)),
    ]
    # The model's first turn: its reasoning before the first call, or its direct answer.
    first_turn = (steps[0].action.log or None) if steps else actual_output
    root["children"].append(_span("llm", "reasoning_1", messages, first_turn))
    for index, (step, call) in enumerate(zip(steps, calls, strict=True), start=1):
        if index > 1 and step.action.log:
            root["children"].append(_span("llm", f"reasoning_{index}", user_input, step.action.log))
        root["children"].append(_span("tool", call.name, call.input_parameters, call.output))
    return root
