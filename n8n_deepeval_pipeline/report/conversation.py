"""A run's conversation as the report shows it: its turns in full, with their tool calls.

A run that holds turns (a simulated conversation, or the messages of a multi-turn run)
is a conversation, not an answer: every turn in order, each answer with the tools it
called (marked when a harness copy's mock answered and the tool never ran), a simulated
conversation's opening turns marked as such, why it stopped and the session it was sent
in. ``eval-results.json`` keeps each turn's text whole; the page shows its beginning.
Turns are read in every form ``agent_outputs`` may hold them (``n8n_data.conversation``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.n8n_data.agent_steps import ToolCallData
from n8n_deepeval_pipeline.n8n_data.conversation import ConversationShapeError, parse_conversation
from n8n_deepeval_pipeline.report.excerpt import Excerpt
from n8n_deepeval_pipeline.tables.rows import AgentOutput

ARGUMENTS_LIMIT = 400  # a tool call's arguments and answer, on the page


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolCallShown(_Frozen):
    """A tool call: its arguments, its answer, and whether that was a mock (it never ran)."""

    name: str
    arguments: Excerpt
    output: Excerpt | None
    mocked: bool


def tool_shown(call: Mapping[str, Any], limit: int = ARGUMENTS_LIMIT) -> ToolCallShown:
    """A tool call in DeepEval's terms (``name``, ``input_parameters``, ``output``), shown.

    Its arguments and answer are cut at ``limit`` characters.
    """
    arguments = json.dumps(call.get("input_parameters") or {}, ensure_ascii=False, sort_keys=True)
    output = call.get("output")
    shown = output if isinstance(output, str) or output is None else json.dumps(output)
    return ToolCallShown(
        name=str(call.get("name", "")),
        arguments=Excerpt.of(arguments, limit),
        output=Excerpt.of(shown, limit) if shown is not None else None,
        mocked=bool(call.get("mocked")),
    )


class ConversationTurn(_Frozen):
    """One turn: the user's message or the workflow's answer, whole."""

    role: str
    content: str
    tool_calls: tuple[ToolCallShown, ...] = ()
    opening: bool = False  # from the golden's opening turns: nobody said it in this run
    latency_s: float | None = None  # the call that answered it


class Conversation(_Frozen):
    """A run's turns in order, why it stopped and its session."""

    turns: tuple[ConversationTurn, ...]
    stop_reason: str | None  # a simulated conversation's (None: the dataset's messages)
    session_id: str | None

    @property
    def user_turns(self) -> int:
        """The user's turns said in this run (opening turns not counted)."""
        return sum(1 for turn in self.turns if turn.role == "user" and not turn.opening)

    @property
    def reads_as(self) -> tuple[object, ...]:
        """What it says: not its session (which run it was) nor how long each call took."""
        said = tuple(turn.model_copy(update={"latency_s": None}) for turn in self.turns)
        return said, self.stop_reason


def _mocked(message: Mapping[str, Any]) -> list[bool]:
    """Whether each stored step of the turn was answered by a mock (``marked_mocked``)."""
    steps = message.get("intermediateSteps")
    if not isinstance(steps, list):
        return []
    return [isinstance(step, Mapping) and step.get("mocked") is True for step in steps]


def _tools(
    message: Mapping[str, Any], called: list[ToolCallData] | None, limit: int
) -> tuple[ToolCallShown, ...]:
    """The turn's tool calls (one per stored step, in order), each marked as its step is."""
    marks = _mocked(message)
    return tuple(
        tool_shown({**call.model_dump(), "mocked": index < len(marks) and marks[index]}, limit)
        for index, call in enumerate(called or [])
    )


def _message_turns(message: Any, limit: int) -> list[ConversationTurn]:
    """The turns one stored message holds (a ``{human, ai}`` pair holds two; a system one none)."""
    found = parse_conversation([message]) or []
    extra = message if isinstance(message, Mapping) else {}
    latency = extra.get("latencyS")
    return [
        ConversationTurn(
            role=turn.role,
            content=turn.content,
            tool_calls=_tools(extra, turn.tools_called, limit),
            opening=extra.get("opening") is True,
            latency_s=float(latency) if isinstance(latency, int | float) else None,
        )
        for turn in found
    ]


def conversation_of(
    output: AgentOutput, arguments_limit: int = ARGUMENTS_LIMIT
) -> Conversation | None:
    """The run's conversation; None when it holds no turns, or none in a form n8n stores.

    Tool calls' arguments and answers are cut at ``arguments_limit`` characters.
    """
    if not isinstance(output.turns, list) or not output.turns:
        return None
    try:
        turns = [
            turn for message in output.turns for turn in _message_turns(message, arguments_limit)
        ]
    except ConversationShapeError:
        return None  # the output's answer is shown, as for a run without turns
    return Conversation(
        turns=tuple(turns), stop_reason=output.stop_reason, session_id=output.session_id
    )
