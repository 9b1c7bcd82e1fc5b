"""The harness copy's life on n8n: created and published for one materialisation, removed after.

Copies are named ``[n8n-deepeval harness] <benchmark> <version> <id>`` so that copies a
crashed run left behind are recognised and removed when the benchmark next runs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2

from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.workflow.harness import harness_copy

HARNESS_PREFIX = "[n8n-deepeval harness]"


class HarnessNotServedError(RuntimeError):
    """The copy was published but n8n never started serving its webhook."""


def remove_stale_copies(client: N8nClient, benchmark: str) -> list[str]:
    """Remove this benchmark's copies that an earlier (crashed) run left; their names."""
    prefix = f"{HARNESS_PREFIX} {benchmark} "
    stale = [w for w in client.workflows() if str(w.get("name", "")).startswith(prefix)]
    for workflow in stale:
        client.remove_workflow(str(workflow["id"]))
    return [str(workflow["name"]) for workflow in stale]


@contextmanager
def harness_webhook(
    client: N8nClient,
    base_url: str,
    workflow: dict[str, Any],
    start: str,
    end: str,
    label: str,
) -> Iterator[tuple[str, str]]:
    """A published harness copy for the duration of the block: (its id, its webhook URL)."""
    run_id = uuid.uuid4().hex
    path = f"n8n-deepeval-{run_id}"
    copy = harness_copy(workflow, start, end, path, str(uuid.uuid4()))
    copy["name"] = f"{HARNESS_PREFIX} {label} {run_id[:8]}"
    copy_id = client.create_workflow(copy)
    try:
        client.publish_workflow(copy_id)
        url = f"{base_url.rstrip('/')}/webhook/{path}"
        wait_until_served(url)
        yield copy_id, url
    finally:
        client.remove_workflow(copy_id)


def wait_until_served(url: str, timeout_s: float = 30.0) -> None:
    """Wait until n8n serves the POST webhook, asking with a GET so nothing is executed.

    Published webhooks register a moment later; until then n8n answers that the webhook
    is not registered at all, and afterwards that it is not registered *for GET*.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            answer = httpx2.get(url, timeout=5.0)
        except httpx2.TransportError:
            answer = None
        if answer is not None and (
            answer.status_code != 404 or "not registered for GET" in answer.text
        ):
            return
        time.sleep(0.25)
    raise HarnessNotServedError(f"n8n did not serve the harness copy's webhook in {timeout_s} s")
