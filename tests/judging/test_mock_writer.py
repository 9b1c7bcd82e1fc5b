"""Mocks the judge writes: what it is told of a node, what it answers, and its cache."""

import json

import pytest
from pydantic import ValidationError

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.judging.judge import PipelineJudge, UsageCounter
from n8n_deepeval_pipeline.judging.mock_writer import (
    MockResponse,
    mock_prompt,
    write_mocks,
)
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    harness_body,
    harness_problems,
    mock_answers,
    unmocked_services,
    with_judge_mocks,
)
from n8n_deepeval_pipeline.n8n_api.webhook import template_context
from n8n_deepeval_pipeline.n8n_data.templates import render
from n8n_deepeval_pipeline.tables.rows import DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.workflow.harness import MOCKS_FIELD
from n8n_deepeval_pipeline.workflow.mocks import mock_request, mocked_nodes
from tests.workflow.test_harness import link, node

LC = "@n8n/n8n-nodes-langchain."
TOKEN = "tok-9f8e7d6c5b4a"
KEY = "sk-live-abcdefghijklmnop"
LOOKUP_URL = "=https://orders.example/{{ $fromAI('orderId', 'the order id', 'string') }}"
AGENT = {
    "nodes": [
        node("Webhook", "n8n-nodes-base.webhook"),
        node("AI Agent", LC + "agent"),
        node("OpenAI Chat Model", LC + "lmChatOpenAi", credentials={"openAiApi": {"id": "1"}}),
        node("Order Lookup", "n8n-nodes-base.httpRequestTool",
             credentials={"httpHeaderAuth": {"id": "cred-77", "name": "Orders API key"}},
             parameters={"url": LOOKUP_URL + f"?api_key={KEY}",
                         "toolDescription": "Looks up an order by id",
                         "sendHeaders": True,
                         "headerParameters": {"parameters": [
                             {"name": "Authorization", "value": f"Bearer {TOKEN}"},
                             {"name": "Accept", "value": "application/json"}]},
                         "options": {"password": "hunter2-secret"}}),
        node("Format", "n8n-nodes-base.set"),
    ],
    "connections": {
        "Webhook": link("AI Agent"),
        "OpenAI Chat Model": link("AI Agent", "ai_languageModel"),
        "Order Lookup": link("AI Agent", "ai_tool"),
        "AI Agent": link("Format"),
    },
}  # fmt: skip


def target(**mocks):
    return WorkflowTarget.model_validate(
        {
            "type": "n8n_workflow",
            "startNodeName": "AI Agent",
            "endNodeName": "Format",
            "mocks": {"nodes": mocks},
        }
    )


def row(row_id, question):
    return DatasetRow(workflow_hash="h", row_id=row_id, position=1, input=question,
                      raw={"question": question, "expected": "never shown"})  # fmt: skip


ROWS = [row("o17", "Where is order 17?"), row("o42", "Where is order 42?")]
INPUTS = {r.row_id: r.input for r in ROWS}


def loopback_spec(server, tmp_path, **options):
    return JudgeSpec(provider="openai-compatible", model="loopback-judge",
                     base_url=server.base_url, timeout_s=2.0, state_dir=str(tmp_path / "judge"),
                     retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05),
                     **options)  # fmt: skip


@pytest.fixture
def loopback():
    server = LoopbackJudge(latency_s=0.0).start()
    yield server
    server.stop()


def test_a_judge_mock_is_accepted_as_a_word_or_an_object_and_needs_a_target_that_mocks():
    mocks = target(**{"Order Lookup": "judge"}).mocks.nodes
    assert mocks["Order Lookup"].judge and mocks["Order Lookup"].per_row
    assert target(**{"Order Lookup": {"judge": True}}).mocks == target(
        **{"Order Lookup": "judge"}).mocks  # fmt: skip
    with pytest.raises(ValidationError, match="exactly one of 'response', 'column' or 'judge'"):
        target(**{"Order Lookup": {"judge": True, "response": {"ok": True}}})
    # A webhook is a black box: it has no mocks to give the judge.
    document = {"name": "b", "workflow": {"id": "w1"}, "dataset": {"path": "d.csv"},
                "metrics": [{"metric": "exact_match"}],
                "target": {"type": "n8n_webhook", "url": "http://127.0.0.1:1/webhook/x",
                           "mocks": {"nodes": {"Order Lookup": "judge"}}}}  # fmt: skip
    with pytest.raises(ValidationError) as caught:
        Benchmark.model_validate(document)
    assert [(e["loc"], e["type"]) for e in caught.value.errors()] == [
        (("target", "n8n_webhook", "mocks"), "extra_forbidden")]  # fmt: skip


def test_the_judge_is_told_the_node_its_parameters_and_the_input_and_never_a_secret():
    prompt = mock_prompt(mock_request(AGENT, "Order Lookup"), "Where is order 17?")
    assert '"type": "n8n-nodes-base.httpRequestTool"' in prompt
    assert "https://orders.example/" in prompt and '"Accept"' in prompt  # its parameters
    assert '"description": "Looks up an order by id"' in prompt  # what the agent is offered
    assert '"orderId": {' in prompt and '"the order id"' in prompt  # its $fromAI argument
    assert "Where is order 17?" in prompt
    for secret in (TOKEN, KEY, "hunter2-secret", "cred-77", "Orders API key", "httpHeaderAuth"):
        assert secret not in prompt
    assert prompt.count("[redacted]") == 3  # the header, the query key, the password


def test_the_judges_answer_is_the_mock_the_harness_copy_carries_for_its_row(loopback, tmp_path):
    mocked = target(**{"Order Lookup": "judge"})
    judge = PipelineJudge(loopback_spec(loopback, tmp_path), UsageCounter())
    written, failed = write_mocks(judge, {"Order Lookup": mock_request(AGENT, "Order Lookup")},
                                  INPUTS)  # fmt: skip
    assert failed == {}
    items = json.loads(written["o17"]["Order Lookup"])
    assert isinstance(items, list) and items and all(isinstance(i, dict) for i in items)
    # In the run's request, under the mocks field, as a column's answer is sent.
    rows = with_judge_mocks(ROWS, written)
    run = ExpandedRun(workflow_hash="h", run_id="h:o17:0", case_id="h:o17", run_index=0,
                      row_id="o17", run_name="b")  # fmt: skip
    body = render(harness_body(mocked, AGENT), template_context(rows[0], run, "s1", {}))
    assert body[MOCKS_FIELD] == {"Order Lookup": written["o17"]["Order Lookup"]}
    # The copy's Code Tool answers what the request carries; nothing acts on a service.
    code = mocked_nodes(AGENT, mock_answers(mocked, AGENT))["Order Lookup"]["parameters"]
    assert f'.json.body?.["{MOCKS_FIELD}"]?.["Order Lookup"]' in code["jsCode"]
    assert harness_problems(mocked, AGENT) == []
    assert unmocked_services(mocked, AGENT) == []


def test_one_judge_call_per_node_and_row_and_a_second_run_makes_none(loopback, tmp_path):
    requests = {"Order Lookup": mock_request(AGENT, "Order Lookup")}
    first_usage, second_usage = UsageCounter(), UsageCounter()
    first, _ = write_mocks(PipelineJudge(loopback_spec(loopback, tmp_path), first_usage),
                           requests, INPUTS)  # fmt: skip
    assert (loopback.requests, first_usage.calls) == (2, 2)
    again, _ = write_mocks(PipelineJudge(loopback_spec(loopback, tmp_path), second_usage),
                           requests, INPUTS)  # fmt: skip
    assert again == first
    assert (loopback.requests, second_usage.calls, second_usage.cached) == (2, 0, 2)
    assert first["o17"] != first["o42"]  # each row its own answer


def test_an_unparsable_answer_is_the_rows_error_naming_the_node(tmp_path):
    server = LoopbackJudge(latency_s=0.0, faults=["invalid_json", "invalid_json"]).start()
    try:
        judge = PipelineJudge(loopback_spec(server, tmp_path, cache=False), UsageCounter())
        written, failed = write_mocks(
            judge, {"Order Lookup": mock_request(AGENT, "Order Lookup")}, {"o17": "Where?"}
        )
    finally:
        server.stop()
    assert written == {}
    # Where the half answer ends depends on the answer: the rest is the message itself.
    assert failed["o17"].startswith(
        'mock "Order Lookup": the judge wrote no response: the judge answered twice with '
        "JSON that does not fit MockResponse: 1 error(s), first at answer: Invalid JSON: EOF "
    )
    assert server.requests == 2  # asked once more, saying why, as every judge call is


def test_a_refusal_is_the_rows_error_and_the_other_rows_are_written(tmp_path):
    class Refusing:
        def generate(self, prompt, schema=None):
            if "order 42" in prompt:
                raise ValueError("I can't help with that")
            return MockResponse.model_validate({"items": [{"fields": [
                {"name": "status", "value": '"shipped"'}, {"name": "days", "value": "2"},
                {"name": "note", "value": "not JSON, kept as text"}]}]})  # fmt: skip

    written, failed = write_mocks(
        Refusing(), {"Order Lookup": mock_request(AGENT, "Order Lookup")}, INPUTS
    )
    assert json.loads(written["o17"]["Order Lookup"]) == [
        {"status": "shipped", "days": 2, "note": "not JSON, kept as text"}]  # fmt: skip
    assert failed == {"o42": 'mock "Order Lookup": the judge wrote no response: '
                             "I can't help with that"}  # fmt: skip


def test_the_dry_run_judge_writes_the_same_answer_every_time():
    requests = {"Order Lookup": mock_request(AGENT, "Order Lookup")}
    answers = [
        write_mocks(PipelineJudge(JudgeSpec(), UsageCounter()), requests, INPUTS) for _ in range(2)
    ]
    assert answers[0] == answers[1]
    written, failed = answers[0]
    assert failed == {} and sorted(written) == ["o17", "o42"]
    assert all(isinstance(item, dict) for item in json.loads(written["o17"]["Order Lookup"]))
