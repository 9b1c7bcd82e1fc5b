"""What n8n executions hold: a node's item, the agent's intermediate steps, the session.

An execution fetched with ``includeData=true`` holds every node's output under
``data.resultData.runData[node][0].data.main[0][0].json``. For answers that did not carry
their steps, the run is found by the session id the pipeline sent (the webhook's
``body.sessionId``, or a ``sessionId`` a Chat Trigger passes on); its steps are the
``intermediateSteps`` of an AI Agent node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _result_data(execution: dict[str, Any]) -> dict[str, Any]:
    found = (execution.get("data") or {}).get("resultData")
    return found if isinstance(found, dict) else {}


def _run_items(runs: Any) -> Iterator[dict[str, Any]]:
    for run in runs or []:
        for output in ((run or {}).get("data") or {}).get("main") or []:
            for item in output or []:
                if isinstance(item, dict) and isinstance(item.get("json"), dict):
                    yield item["json"]


def _node_items(execution: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item's ``json`` of every node of the execution, in run order."""
    for runs in (_result_data(execution).get("runData") or {}).values():
        yield from _run_items(runs)


def node_item(execution: dict[str, Any], node: str) -> dict[str, Any] | None:
    """The first item's ``json`` that ``node`` output in the execution (None: it did not run)."""
    runs = (_result_data(execution).get("runData") or {}).get(node)
    return next(_run_items(runs), None)


def last_node(execution: dict[str, Any]) -> str | None:
    """The node n8n ran last (whose output a webhook in lastNode mode answers with)."""
    name = _result_data(execution).get("lastNodeExecuted")
    return None if name is None else str(name)


def execution_steps(execution: dict[str, Any]) -> list[Any] | None:
    """The ``intermediateSteps`` of the execution's agent (None: Return Intermediate Steps off)."""
    return next(
        (item["intermediateSteps"] for item in _node_items(execution)
         if isinstance(item.get("intermediateSteps"), list)),
        None,
    )  # fmt: skip


def _session_of(item: dict[str, Any]) -> str | None:
    body = item.get("body")
    session = body.get("sessionId") if isinstance(body, dict) else item.get("sessionId")
    return None if session is None else str(session)


def steps_by_session(executions: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Session id → the intermediate steps its execution produced.

    Executions without a session id or without steps are left out.
    """
    found: dict[str, list[Any]] = {}
    for execution in executions:
        session = next((s for s in map(_session_of, _node_items(execution)) if s is not None), None)
        steps = execution_steps(execution)
        if session is not None and steps is not None:
            found.setdefault(session, steps)
    return found
