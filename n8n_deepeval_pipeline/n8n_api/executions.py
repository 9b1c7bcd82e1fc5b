"""What n8n executions hold: a node's item, the agent's intermediate steps, the session.

An execution fetched with ``includeData=true`` holds every node's runs under
``data.resultData.runData[node]``: a main node's items under ``data.main``, a tool
sub-node's under ``data.ai_tool`` with the input the agent gave it under
``inputOverride.ai_tool``. The run is found by the session id the pipeline sent (the
webhook's ``body.sessionId``, or a ``sessionId`` a Chat Trigger passes on). Its steps are
the ``intermediateSteps`` of an AI Agent node; with *Return Intermediate Steps* off they
exist only as the tool sub-nodes' runs, which are read back as steps in execution order
(an MCP Client Tool's run names the tool of its server the agent called in its input).
A language-model sub-node's runs hold the tokens of each call under
``data.ai_languageModel``: ``tokenUsage`` as the provider reported them, else n8n's own
``tokenUsageEstimate`` (read as n8n's evaluations read them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from n8n_deepeval_pipeline.n8n_data.agent_steps import tool_name


def _run_data(execution: dict[str, Any]) -> dict[str, Any]:
    run_data = _result_data(execution).get("runData") or {}
    return run_data if isinstance(run_data, dict) else {}


def _items(output: Any) -> Iterator[dict[str, Any]]:
    """The ``json`` of the items of one connection's output (``[[{json}, …], …]``)."""
    for branch in output or []:
        for item in branch or []:
            if isinstance(item, dict) and isinstance(item.get("json"), dict):
                yield item["json"]


def _result_data(execution: dict[str, Any]) -> dict[str, Any]:
    found = (execution.get("data") or {}).get("resultData")
    return found if isinstance(found, dict) else {}


def _run_items(runs: Any) -> Iterator[dict[str, Any]]:
    """The ``json`` of every main item of a node's runs, in run order."""
    for run in runs or []:
        yield from _items(((run or {}).get("data") or {}).get("main"))


def node_items(execution: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item's ``json`` of every node of the execution, in run order."""
    for runs in _run_data(execution).values():
        yield from _run_items(runs)


def node_item(execution: dict[str, Any], node: str) -> dict[str, Any] | None:
    """The first item's ``json`` that ``node`` output in the execution (None: it did not run)."""
    return next(_run_items(_run_data(execution).get(node)), None)


def last_node(execution: dict[str, Any]) -> str | None:
    """The node n8n ran last (whose output a webhook in lastNode mode answers with)."""
    name = _result_data(execution).get("lastNodeExecuted")
    return None if name is None else str(name)


def execution_steps(execution: dict[str, Any]) -> list[Any] | None:
    """The agent's steps: its ``intermediateSteps``, else its tool sub-nodes' runs.

    None when no agent ran.
    """
    found = next(
        (item["intermediateSteps"] for item in node_items(execution)
         if isinstance(item.get("intermediateSteps"), list)),
        None,
    )  # fmt: skip
    return tool_runs_as_steps(execution) if found is None else found


def _session_of(item: dict[str, Any]) -> str | None:
    body = item.get("body")
    session = body.get("sessionId") if isinstance(body, dict) else item.get("sessionId")
    return None if session is None else str(session)


def tool_runs_as_steps(execution: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The tool sub-nodes' runs as intermediate steps, in execution order.

    None when no language model ran either (no agent ran: nothing to say about its tools);
    an empty list when a model ran and called no tool.
    """
    runs = [
        (int(run.get("executionIndex", 0)), name, run)
        for name, node_runs in _run_data(execution).items()
        for run in node_runs or []
        if isinstance(run, dict)
    ]
    kinds = {kind for _, _, run in runs for kind in (run.get("data") or {})}
    if not kinds & {"ai_tool", "ai_languageModel"}:
        return None
    tool_runs = sorted((r for r in runs if "ai_tool" in (r[2].get("data") or {})), key=_first)
    steps = []
    for _, name, run in tool_runs:
        tool_input = next(_items((run.get("inputOverride") or {}).get("ai_tool")), {})
        output = list(_items(run["data"]["ai_tool"]))
        # The agent sees a tool's items as JSON text: the observation is kept that way.
        observation = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
        steps.append({"action": {"tool": _called_as(name, tool_input), "toolInput": tool_input},
                      "observation": observation})  # fmt: skip
    return steps


def _called_as(node: str, tool_input: dict[str, Any]) -> str:
    """The tool the agent called, as the agent named it.

    A toolkit node's run (an MCP Client Tool's) names it in its input as ``tool``
    (``<node>_<tool>``); any other tool node is named after the node.
    """
    called = tool_input.get("tool")
    return called if isinstance(called, str) and called else tool_name(node)


def _first(run: tuple[int, str, dict[str, Any]]) -> int:
    return run[0]


def steps_by_session(executions: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Session id → the intermediate steps of its executions, in the order they ran.

    A run that sends several messages is one session of several executions: its steps
    are all of theirs. Executions without a session id, or in which no agent ran, are
    left out.
    """
    return {
        session: [step for steps in by_execution for step in steps]
        for session, by_execution in steps_by_execution(executions).items()
    }


def steps_by_execution(executions: list[dict[str, Any]]) -> dict[str, list[list[Any]]]:
    """Session id → each of its executions' intermediate steps, in the order they ran.

    One execution answers one message: the i-th list holds the tools the agent called for
    the session's i-th message (what a simulated conversation's turns carry).
    """
    found: dict[str, list[list[Any]]] = {}
    for execution in sorted(executions, key=_run_order):
        session = next((s for s in map(_session_of, node_items(execution)) if s is not None), None)
        steps = execution_steps(execution)
        if session is not None and steps is not None:
            found.setdefault(session, []).append(steps)
    return found


def executions_of(executions: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    """The executions of one session (one per message sent in it), in the order they ran."""
    return sorted(
        (e for e in executions if session in map(_session_of, node_items(e))), key=_run_order
    )


def _run_order(execution: dict[str, Any]) -> tuple[str, int]:
    """When an execution ran (n8n lists the newest first; its ids count up)."""
    identifier = str(execution.get("id", ""))
    return str(execution.get("startedAt") or ""), int(identifier) if identifier.isdigit() else 0


class ModelCall(BaseModel):
    """The tokens of one call of a language-model sub-node."""

    node: str
    prompt_tokens: int
    completion_tokens: int
    estimated: bool  # n8n estimated them: the provider reported none


def _model_call(node: str, item: dict[str, Any]) -> ModelCall | None:
    reported = item.get("tokenUsage")
    usage = reported if isinstance(reported, dict) else item.get("tokenUsageEstimate")
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("promptTokens"), usage.get("completionTokens")
    if not all(
        isinstance(count, int) and not isinstance(count, bool) for count in (prompt, completion)
    ):
        return None
    return ModelCall(
        node=node,
        prompt_tokens=int(prompt),  # type: ignore[arg-type]
        completion_tokens=int(completion),  # type: ignore[arg-type]
        estimated=not isinstance(reported, dict),
    )


def model_calls(execution: dict[str, Any]) -> list[ModelCall]:
    """Every language-model call of the execution with its tokens, node by node."""
    calls = []
    for node, runs in _run_data(execution).items():
        for run in runs or []:
            output = ((run or {}).get("data") or {}).get("ai_languageModel")
            item = next(_items(output), None)
            call = None if item is None else _model_call(node, item)
            if call is not None:
                calls.append(call)
    return calls


def model_calls_by_session(executions: list[dict[str, Any]]) -> dict[str, list[ModelCall]]:
    """Session id → the language-model calls of its executions (a run's are all of theirs)."""
    found: dict[str, list[ModelCall]] = {}
    for execution in executions:
        session = next((s for s in map(_session_of, node_items(execution)) if s is not None), None)
        if session is not None:
            found.setdefault(session, []).extend(model_calls(execution))
    return found
