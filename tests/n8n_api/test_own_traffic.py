"""The pipeline's mark on its calls, read back from executions as n8n 2.41 stores them.

A Webhook node's item keeps the request's headers (names lower-cased), body, query and
params; a Chat Trigger's item is the body alone (both measured on n8n 2.41.1, and checked
again by tests/live/test_live_online.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from n8n_deepeval_pipeline import DatasetRow
from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.n8n_api.own_traffic import RUN_HEADER, from_pipeline, mark_request
from n8n_deepeval_pipeline.n8n_api.webhook import WebhookCaller
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from tests.n8n_api.fake_n8n import FakeN8nWebhooks

HASH = "7" * 64


def execution(trigger: str, item: dict[str, Any]) -> dict[str, Any]:
    answer = [{"data": {"main": [[{"json": {"output": "Echo"}}]]}}]
    run_data = {trigger: [{"data": {"main": [[{"json": item}]]}}], "Answer": answer}
    return {"id": "1", "mode": "webhook", "data": {"resultData": {"runData": run_data}}}


def webhook_item(request: dict[str, Any]) -> dict[str, Any]:
    """The item n8n's Webhook node outputs for a request: header names lower-cased."""
    headers = {name.lower(): value for name, value in request["headers"].items()}
    return {"headers": headers, "params": {}, "query": {}, "body": request["body"],
            "webhookUrl": "http://n8n/webhook/agent", "executionMode": "production"}  # fmt: skip


@pytest.fixture
def fake():
    with FakeN8nWebhooks() as server:
        yield server


def sent(fake: FakeN8nWebhooks, **options: Any) -> dict[str, Any]:
    """The one request a benchmark run of ``options``' target sends."""
    target = WebhookTarget.model_validate({"type": "n8n_webhook", "url": "x", **options})
    caller = WebhookCaller(target, f"{fake.base_url}/webhook/agent", {})
    row = DatasetRow(workflow_hash=HASH, row_id="r1", position=1, input="hi", raw={})
    try:
        caller.outputs(expanded_runs([row], 1, "live"), {"r1": row})
    finally:
        caller.close()
    (request,) = fake.requests
    return request


@pytest.mark.parametrize(
    "body",
    [
        None,  # the default body: evalContext among its fields
        {"question": "{{ input }}"},  # the benchmark's own body, without evalContext
        "{{ row }}",  # a body taken whole from the row
    ],
)
def test_a_benchmark_call_is_known_by_its_execution_behind_a_webhook_and_a_chat_trigger(fake, body):
    request = sent(fake, body=body)
    assert request["headers"][RUN_HEADER] == f"{HASH}:r1:0"
    assert from_pipeline(execution("Webhook", webhook_item(request)))
    # a Chat Trigger's item is the body alone: the body's evalContext marks it
    assert request["body"]["evalContext"]["isEvalRun"] is True
    assert from_pipeline(execution("When chat message received", request["body"]))


def test_a_get_call_carries_the_header_only_its_body_is_its_query(fake):
    request = sent(fake, method="GET", body={"q": "{{ input }}"})
    assert "evalContext" not in request["body"]
    item = {**webhook_item(request), "query": request["body"], "body": {}}
    assert from_pipeline(execution("Webhook", item))


def test_a_users_request_is_production_even_with_fields_named_like_the_marks():
    user = {"headers": {"host": "n8n", "x-request-id": "r-1"}, "params": {}, "query": {},
            "body": {"question": "Where is my order?", "sessionId": "u-1"}}  # fmt: skip
    assert not from_pipeline(execution("Webhook", user))
    chat = {"action": "sendMessage", "sessionId": "u-1", "chatInput": "Hello"}
    assert not from_pipeline(execution("When chat message received", chat))
    # a user's own evalContext field is not the pipeline's (no isEvalRun: true)
    named = {**chat, "evalContext": {"isEvalRun": "yes", "runId": "mine"}}
    assert not from_pipeline(execution("When chat message received", named))
    assert not from_pipeline({"id": "2", "mode": "webhook"})  # listed without its data


def test_the_benchmarks_own_header_and_evalcontext_are_kept():
    headers = {"x-n8n-deepeval-run": "theirs"}
    body: dict[str, Any] = {"evalContext": "{{ set by the template }}"}
    mark_request(headers, body, {"runId": "h:r:0", "isEvalRun": True})
    assert headers == {"x-n8n-deepeval-run": "theirs"}
    assert body == {"evalContext": "{{ set by the template }}"}
    text_headers: dict[str, str] = {}
    mark_request(text_headers, "plain text body", {"runId": "h:r:1", "isEvalRun": True})
    assert text_headers == {RUN_HEADER: "h:r:1"}
