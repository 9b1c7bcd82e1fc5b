"""Chat history in the forms n8n memories produce, as conversation turns.

Accepted, message by message or mixed:
- LangChain stored messages, what Postgres/Redis chat memories keep:
  ``{type: human|ai|system|tool, data: {content, …}}`` (Postgres flattens ``data``:
  ``{type, content, …}``);
- the Chat Memory Manager's simplified groups ``{human: "…", ai: "…"}`` (optionally
  wrapped as ``[{messages: [...], messagesCount}]``);
- OpenAI-style ``{role: user|assistant|system|tool, content}``;
- LangChain's serialised ``{lc, type: constructor, id: [..., "HumanMessage"], kwargs}``.
System and tool messages are not turns, nor is an assistant message without text that
only asks for tools (n8n's agents keep it in memory between the question and the
answer that follows the tool's result). A message may carry its own
``retrievalContext`` (top level, in ``data`` or in ``additional_kwargs``), and an
OpenAI-style assistant message the tools that turn called as ``intermediateSteps`` (any
shape ``agent_steps`` reads; a simulated conversation stores each answer's steps so).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    StepsShapeError,
    ToolCallData,
    parse_intermediate_steps,
    tool_calls,
)
from n8n_deepeval_pipeline.n8n_data.json_fields import structured

Role = Literal["user", "assistant"]

_ROLES: dict[str, Role | None] = {
    "human": "user",
    "user": "user",
    "humanmessage": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "aimessage": "assistant",
    "system": None,
    "systemmessage": None,
    "tool": None,
    "toolmessage": None,
    "function": None,
}


class ConversationShapeError(ValueError):
    """The chat history is present but not in a form an n8n memory produces."""


class TurnData(BaseModel):
    """One turn of a conversation, without DeepEval types.

    ``tools_called``: None when the history does not say which tools the turn called,
    an empty list when it says none.
    """

    role: Role
    content: str
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCallData] | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: [{type: text, text: …}]
        return "".join(
            block.get("text", "") if isinstance(block, Mapping) else str(block) for block in content
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _retrieval_context(message: Mapping[str, Any]) -> list[str] | None:
    data = message.get("data")
    holders = [message, data, message.get("additional_kwargs"), message.get("kwargs")]
    if isinstance(data, Mapping):
        holders.append(data.get("additional_kwargs"))
    for holder in holders:
        if isinstance(holder, Mapping):
            for key in ("retrievalContext", "retrieval_context"):
                value = holder.get(key)
                if isinstance(value, list):
                    return [str(item) for item in value]
                if isinstance(value, str) and value:
                    return [value]
    return None


def _turn_tools(message: Mapping[str, Any], position: int) -> list[ToolCallData] | None:
    """The tools an assistant message says its turn called (None: it does not say)."""
    if "intermediateSteps" not in message:
        return None
    try:
        steps = parse_intermediate_steps(message["intermediateSteps"])
    except StepsShapeError as error:
        raise ConversationShapeError(f"message {position}: {error}") from None
    return None if steps is None else tool_calls(steps)


def _asks_for_tools(body: Mapping[str, Any]) -> bool:
    kwargs = body.get("additional_kwargs")
    holders = [body, kwargs] if isinstance(kwargs, Mapping) else [body]
    return any(holder.get("tool_calls") for holder in holders)


def _message_turns(message: Mapping[str, Any], position: int) -> list[TurnData]:
    if "role" in message:
        kind, body = str(message["role"]), message
    elif message.get("type") == "constructor" and isinstance(message.get("id"), list):
        kind, body = str(message["id"][-1]), message.get("kwargs") or {}
    elif "type" in message:
        data = message.get("data")
        kind, body = str(message["type"]), data if isinstance(data, Mapping) else message
    elif set(message) & {"human", "ai"}:
        return [
            TurnData(role=role, content=_text(message[key]))
            for key, role in (("human", "user"), ("ai", "assistant"))
            if key in message
        ]
    else:
        raise ConversationShapeError(
            f"message {position}: no 'role', 'type' or 'human'/'ai' key "
            f"(keys: {', '.join(sorted(map(str, message)))})"
        )
    lowered = kind.lower()
    if lowered not in _ROLES:
        raise ConversationShapeError(f"message {position}: unknown message type {kind!r}")
    role = _ROLES[lowered]
    if role is None:
        return []
    content = _text(body.get("content"))
    if role == "assistant" and not content.strip() and _asks_for_tools(body):
        return []
    tools = _turn_tools(message, position) if role == "assistant" and "role" in message else None
    turn = TurnData(role=role, content=content, retrieval_context=_retrieval_context(message))
    return [turn.model_copy(update={"tools_called": tools})]


def parse_conversation(value: Any) -> list[TurnData] | None:
    """Turns from a memory's messages (or their JSON text); None when there is no history."""
    value = structured(value, "chat history", ConversationShapeError)
    if value is None:
        return None
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        raise ConversationShapeError(f"chat history must be a list, got {type(value).__name__}")
    if len(value) == 1 and isinstance(value[0], Mapping) and "messagesCount" in value[0]:
        value = value[0].get("messages") or []
    turns: list[TurnData] = []
    for position, message in enumerate(value, start=1):
        if not isinstance(message, Mapping):
            raise ConversationShapeError(f"message {position} is not an object")
        turns.extend(_message_turns(message, position))
    return turns


def single_exchange(user_message: str, answer: str) -> list[TurnData]:
    """A run without chat history as a conversation: the user's message, then the answer."""
    return [TurnData(role="user", content=user_message), TurnData(role="assistant", content=answer)]


def enrich_turns(
    turns: list[TurnData],
    tool_calls: list[ToolCallData] | None,
    retrieval_context: list[str] | None,
) -> list[TurnData]:
    """Put the run's tool calls and retrieval context on the turns.

    Tool calls go on the last assistant turn, unless the turns say which tools each one
    called (a simulated conversation); the item's retrieval context goes on assistant
    turns that carry none of their own.
    """
    enriched = [
        turn.model_copy(update={"retrieval_context": retrieval_context})
        if turn.role == "assistant" and turn.retrieval_context is None and retrieval_context
        else turn
        for turn in turns
    ]
    if tool_calls and all(turn.tools_called is None for turn in enriched):
        for index in range(len(enriched) - 1, -1, -1):
            if enriched[index].role == "assistant":
                enriched[index] = enriched[index].model_copy(update={"tools_called": tool_calls})
                break
    return enriched
