"""Intermediate steps read back from n8n executions, for answers that did not carry them.

An execution fetched with ``includeData=true`` holds every node's output under
``data.resultData.runData[node][0].data.main[0][0].json``. The run is found by the
session id the pipeline sent (the webhook's ``body.sessionId``, or a ``sessionId`` a
Chat Trigger passes on); its steps are the ``intermediateSteps`` of an AI Agent node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _node_items(execution: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item's ``json`` of every node of the execution, in run order."""
    run_data = (((execution.get("data") or {}).get("resultData") or {}).get("runData")) or {}
    for runs in run_data.values():
        for run in runs or []:
            for output in ((run or {}).get("data") or {}).get("main") or []:
                for item in output or []:
                    if isinstance(item, dict) and isinstance(item.get("json"), dict):
                        yield item["json"]


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
        items = list(_node_items(execution))
        session = next((s for s in map(_session_of, items) if s is not None), None)
        steps = next(
            (item["intermediateSteps"] for item in items
             if isinstance(item.get("intermediateSteps"), list)),
            None,
        )  # fmt: skip
        if session is not None and steps is not None:
            found.setdefault(session, steps)
    return found
