"""The webhook target against FakeN8nWebhooks (a loopback test double of n8n's webhooks)."""

from urllib.parse import quote

import pytest

from n8n_deepeval_pipeline import DatasetRow
from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.n8n_api.own_traffic import RUN_HEADER
from n8n_deepeval_pipeline.n8n_api.webhook import WebhookCaller, webhook_identity
from n8n_deepeval_pipeline.tables.run_items import eval_context
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from tests.n8n_api.fake_n8n import TOKEN, FakeN8nWebhooks

HASH = "9" * 64


@pytest.fixture
def fake():
    with FakeN8nWebhooks() as server:
        yield server


def row(row_id, text, **raw):
    return DatasetRow(
        workflow_hash=HASH,
        row_id=row_id,
        position=1,
        input=text,
        expected_tools=["calculator"],
        raw={"id": row_id, **raw},
    )


def call(fake, path, rows, runs_per_row=1, environ=None, **options):
    target = WebhookTarget.model_validate({"type": "n8n_webhook", "url": "x", **options})
    environ = {"MY_TOKEN": TOKEN} if environ is None else environ
    caller = WebhookCaller(target, f"{fake.base_url}/webhook/{path}", environ)
    runs = expanded_runs(rows, runs_per_row, "live")
    progress = []
    try:
        outputs = caller.outputs(
            runs, {r.row_id: r for r in rows}, lambda *done: progress.append(done)
        )
    finally:
        caller.close()
    assert progress == [(done, len(runs)) for done in range(1, len(runs) + 1)]
    return runs, outputs


def test_each_run_is_sent_with_the_mapped_fields_and_its_own_session(fake):
    runs, outputs = call(fake, "agent", [row("r1", "what is 6*7?")], runs_per_row=2)
    assert [o.actual_output for o in outputs] == ["Echo: what is 6*7?"] * 2
    assert outputs[0].intermediate_steps == [
        {"action": {"tool": "calculator", "toolInput": {"input": "6*7"}}, "observation": "42"}
    ]
    bodies = [request["body"] for request in fake.requests]
    assert {body["sessionId"] for body in bodies} == {run.run_id for run in runs}
    assert bodies[0]["chatInput"] == bodies[0]["input"] == "what is 6*7?"
    assert bodies[0]["expectedTools"] == ["calculator"]
    assert bodies[0]["evalContext"]["workflowHash"] == HASH
    assert all(o.latency_s > 0 and o.error is None for o in outputs)
    _, plain = call(fake, "agent", [row("r2", "hello")])
    assert plain[0].intermediate_steps == []  # the answer carried steps: none were called


def test_a_body_taken_whole_from_the_row_is_each_runs_own(fake):
    """`init` writes `body: "{{ row['body'] }}"` for a Webhook read off executions: each
    run's session goes into a copy, never into the row (the row's object was sent by every
    run of the row with the first run's session, so repeated runs shared one)."""
    rows = [row("r1", "hi", body={"question": "where is my refund?"})]
    runs, outputs = call(fake, "agent", rows, runs_per_row=3, body="{{ row['body'] }}")
    bodies = [request["body"] for request in fake.requests]
    assert sorted(body["sessionId"] for body in bodies) == sorted(run.run_id for run in runs)
    assert all(body["question"] == "where is my refund?" for body in bodies)
    assert [output.session_id for output in outputs] == [run.run_id for run in runs]
    assert rows[0].raw["body"] == {"question": "where is my refund?"}  # the row as read


def test_templates_shape_headers_and_body_and_an_item_list_is_read(fake):
    runs, (output,) = call(
        fake,
        "items",
        [row("r1", "hi", topic="billing")],
        headers={"Authorization": "Bearer {{ env.MY_TOKEN }}"},
        body={"q": "{{ input }} ({{ row.topic }})", "tools": "{{ expectedTools }}"},
        env=["MY_TOKEN"],
        sessionParser="[0].json.sid",
    )
    (request,) = fake.requests
    assert request["body"] == {
        "q": "hi (billing)",
        "tools": ["calculator"],  # a single expression keeps the list
        "sessionId": runs[0].run_id,  # sessionField, added to a custom body
        "evalContext": eval_context(runs[0]),  # the pipeline's mark, added to a custom body
    }
    assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert request["headers"][RUN_HEADER] == runs[0].run_id
    assert (output.actual_output, output.session_id) == ("from an item list", "s-9")


def test_templates_see_only_the_variables_the_benchmark_lists(fake):
    environ = {"MY_TOKEN": TOKEN, "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-judge", "HOME": "/root"}
    plain = {"environ": environ, "sessionField": None}
    call(fake, "agent", [row("r1", "hi")], env=["MY_TOKEN"], body="{{ env }}", **plain)
    call(fake, "agent", [row("r2", "hi")], body={"all": "{{ env }}"}, **plain)
    bodies = [request["body"] for request in fake.requests]
    assert [{k: v for k, v in body.items() if k != "evalContext"} for body in bodies] == [
        {"MY_TOKEN": TOKEN},
        {"all": {}},
    ]


def test_a_row_id_in_the_url_cannot_change_its_path_query_or_fragment(fake):
    rows = [row("../../rest/owner?evil=1#x", "hi"), row("..", "a b&c=d")]
    call(fake, "probe/{{ evalContext.rowId }}?q={{ input }}#{{ input }}", rows)
    assert sorted(request["target"] for request in fake.requests) == [
        "/webhook/probe/%2E%2E?q=a%20b%26c%3Dd",
        "/webhook/probe/..%2F..%2Frest%2Fowner%3Fevil%3D1%23x?q=hi",
    ]


def test_get_sends_the_body_as_query_parameters(fake):
    runs, (output,) = call(
        fake, "echo-get", [row("r1", "hi")], method="GET", body={"input": "{{ input }}"}
    )
    assert fake.requests[0]["body"] == {"input": "hi", "sessionId": runs[0].run_id}
    assert output.actual_output == f'query {{"input": "hi", "sessionId": "{runs[0].run_id}"}}'
    _, (missing,) = call(fake, "no-such-hook", [row("r1", "hi")], method="GET")
    assert (
        missing.error
        == "target_error: HTTP 404: The requested webhook /webhook/[redacted] is not registered."
    )


def test_failures_are_target_errors_with_status_and_reason_and_no_secret(fake):
    rows = [row("r1", "a")]
    _, (error,) = call(fake, "error", rows)
    assert error.error == "target_error: HTTP 200: error in the answer: upstream model failed"
    _, (failed,) = call(fake, f"fail500-{TOKEN}", rows)
    assert failed.error_kind == "target_error" and failed.error.startswith("target_error: HTTP 500")
    assert TOKEN not in failed.error
    assert (
        failed.error
        == "target_error: HTTP 500: Workflow could not be started for /webhook/[redacted]"
    )
    assert fake.calls[f"/webhook/fail500-{TOKEN}"] == 1  # a POST is never retried
    # a reason is cut to 200 characters after redaction: a cut token would escape it
    _, (long,) = call(fake, f"fail500-{'x' * 139}{TOKEN}", rows)
    assert (
        long.error
        == "target_error: HTTP 500: Workflow could not be started for /webhook/[redacted]"
    )
    assert TOKEN[:8] not in long.error
    _, (slow,) = call(fake, "slow", rows, timeoutS=0.5)
    assert slow.error == "target_error: timeout after 0.5 s"


def test_an_answer_nested_too_deep_fails_its_own_run_only(fake):
    rows = [row("r1", "go deep"), row("r2", "stay shallow")]
    _, (deep, shallow) = call(fake, "deep-when-asked", rows)
    assert deep.error == "target_error: HTTP 200: the answer is nested deeper than 100 levels"
    assert deep.error_kind == "target_error" and deep.actual_output is None
    assert shallow.error is None and shallow.actual_output.endswith("; stay shallow")


def test_get_and_put_are_retried_but_not_post(fake):
    call(fake, "fail500", [row("r1", "a")], method="PUT", retries=1)
    assert fake.calls["/webhook/fail500"] == 2


def test_a_multi_turn_run_sends_each_message_in_one_session(fake):
    rows = [row("r1", "unused", messages='["hello", "and again"]')]
    runs, (output,) = call(fake, "session", rows, messagesColumn="messages")
    assert output.turns == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": f"turn 1 of {runs[0].run_id}: hello"},
        {"role": "user", "content": "and again"},
        {"role": "assistant", "content": f"turn 2 of {runs[0].run_id}: and again"},
    ]
    assert output.actual_output.startswith("turn 2")


def test_the_identity_never_shows_the_url():
    identity = webhook_identity(f"https://n8n.example/webhook/{TOKEN}")
    assert identity.startswith("n8n:webhook:") and TOKEN not in identity


def test_get_keeps_the_url_templates_own_query_and_adds_the_body_fields(fake):
    runs, _ = call(
        fake,
        "probe/{{ evalContext.rowId }}?q={{ input }}&case=x",
        [row("r3", "a b")],
        method="GET",
        body={"input": "{{ input }}"},
    )
    (request,) = fake.requests
    assert request["target"] == (
        f"/webhook/probe/r3?q=a%20b&case=x&input=a%20b&sessionId={quote(runs[0].run_id, safe='')}"
    )
    # a field the URL's query names already is the template's: not sent twice
    call(fake, "probe/x?sessionId=mine", [row("r4", "hi")], method="GET", body={"a": "1"})
    assert fake.requests[-1]["target"] == "/webhook/probe/x?sessionId=mine&a=1"
