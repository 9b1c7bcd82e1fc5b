"""The mark on every call the pipeline makes of a workflow, and executions known by it.

Benchmark runs over a webhook, simulated users' turns and red-team attacks all reach n8n
as ordinary requests; n8n records them as production executions (mode ``webhook``), so
only a mark the pipeline puts on the request tells them from a real user's. Every call
carries two, because n8n 2.41 keeps a different part of the request per trigger:

- the header ``X-N8n-Deepeval-Run`` (the run's id): a Webhook node's item keeps every
  header (``headers``, names lower-cased), whatever the benchmark's body template says;
- the run's ``evalContext`` (``isEvalRun: true``) in a JSON object body, unless the
  template sets it: a Chat Trigger's item is the body alone, without the headers.

A body that is not a JSON object, or a GET's (sent as its query string), carries the
header only. A harness copy's executions belong to the copy's own workflow id, so a
reader of the workflow's executions never sees them at all.
"""

from __future__ import annotations

from typing import Any

from n8n_deepeval_pipeline.n8n_api.executions import node_items

RUN_HEADER = "X-N8n-Deepeval-Run"
EVAL_CONTEXT = "evalContext"


def mark_request(headers: dict[str, str], body: Any, eval_context: dict[str, Any]) -> None:
    """Put the pipeline's mark on a call's headers and (a JSON object) body, in place.

    A header or ``evalContext`` field the benchmark's templates set already is kept.
    """
    if not any(name.lower() == RUN_HEADER.lower() for name in headers):
        headers[RUN_HEADER] = str(eval_context["runId"])
    if isinstance(body, dict):
        body.setdefault(EVAL_CONTEXT, eval_context)


def _is_marked(item: dict[str, Any]) -> bool:
    headers = item.get("headers")
    if isinstance(headers, dict) and headers.get(RUN_HEADER.lower()) is not None:
        return True
    body = item.get("body")
    for holder in (item, body if isinstance(body, dict) else {}):
        context = holder.get(EVAL_CONTEXT)
        if isinstance(context, dict) and context.get("isEvalRun") is True:
            return True
    return False


def from_pipeline(execution: dict[str, Any]) -> bool:
    """Whether the pipeline caused the execution: an item of it carries the pipeline's mark."""
    return any(_is_marked(item) for item in node_items(execution))
