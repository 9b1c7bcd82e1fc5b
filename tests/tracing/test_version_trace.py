"""A version's rows written as one trace: names, parents, GenAI attributes and events."""

from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from n8n_deepeval_pipeline.tables.rows import AgentOutput, ExpandedRun, MetricScore, RunAggregate
from n8n_deepeval_pipeline.tracing import exporter
from n8n_deepeval_pipeline.tracing.version_trace import VersionRun, write_version_trace

HASH = "ab" * 32
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY = "sk-live0123456789abcdef"


def _run(index: int) -> ExpandedRun:
    return ExpandedRun(
        workflow_hash=HASH, run_id=f"{HASH}:refund:{index}", case_id=f"{HASH}:refund",
        run_index=index, row_id="refund", run_name="support",
    )  # fmt: skip


def _score(run: ExpandedRun, metric: str, **fields: object) -> MetricScore:
    row = {
        "workflow_hash": HASH, "run_id": run.run_id, "case_id": run.case_id, "metric": metric,
        "metric_slug": metric, "score": 0.8, "threshold": 0.5, "success": True,
        "direction": "higher_is_better", "reason": "fine", "error": None, "error_kind": None,
        "judge": None, "dry_run": False, "judge_calls": 0, "judge_retries": 0,
        "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "tokens": 0,
        "cost_usd": None, "latency_s": 0.5,
    }  # fmt: skip
    return MetricScore.model_validate({**row, **fields})


def _call(started: datetime, tokens: tuple[int, int], cached: bool = False) -> dict[str, object]:
    return {
        "judge": "openai:gpt-4o-mini", "provider": "openai", "model": "gpt-4o-mini",
        "started_at": started.timestamp(), "duration_s": 0.25, "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1], "retries": 0, "cached": cached, "error": None,
        "cost_usd": 0.0 if cached else 0.000123,
    }  # fmt: skip


def _version(content: bool = False) -> VersionRun:
    first, second = _run(0), _run(1)
    steps = [
        {"action": {"tool": "order_lookup", "toolInput": {"order": "A-1", "apiKey": KEY},
                    "toolCallId": "call_1"}, "observation": "shipped"},
        {"action": {"tool": "calculator", "toolInput": "2*3"}, "observation": "6"},
    ]  # fmt: skip
    outputs = {
        first.run_id: AgentOutput(
            workflow_hash=HASH, run_id=first.run_id, actual_output="Refund on its way",
            intermediate_steps=steps, session_id="s-0", latency_s=2.0,
            started_at=T0 + timedelta(seconds=1), llm_prompt_tokens=900,
            llm_completion_tokens=60, llm_cost_usd=0.0004,
        ),
        second.run_id: AgentOutput(
            workflow_hash=HASH, run_id=second.run_id, latency_s=0.4, started_at=T0,
            error=f"target_error: HTTP 500 (Bearer {KEY})", error_kind="target_error",
        ),
    }  # fmt: skip
    judged_at = T0 + timedelta(seconds=4)
    scores = [
        _score(first, "helpfulness", judge="openai:gpt-4o-mini", judge_calls=1, cached_calls=1,
               started_at=judged_at, latency_s=1.0, cost_usd=0.000123,
               judge_call_log=[
                   _call(judged_at, (1200, 80)),
                   _call(judged_at + timedelta(seconds=0.5), (0, 0), cached=True),
               ]),
        _score(first, "tool_correctness", score=0.0, success=False,
               reason="calculator not expected"),
        _score(second, "helpfulness", score=None, success=False, reason=None,
               error="no output", error_kind="target_error"),
    ]  # fmt: skip
    aggregates = {
        first.run_id: RunAggregate(
            workflow_hash=HASH, run_id=first.run_id, case_id=first.case_id, overall_score=0.4,
            raw_mean_score=0.4, overall_success=False, pass_rule="allPass", metrics_passed=1,
            metrics_counted=2, metric_errors=0, judge_calls=1, tokens=1280, cost_usd=0.000123,
            metrics=[],
        ),
    }  # fmt: skip
    return VersionRun(
        root_name="benchmark support", benchmark="support", workflow_name="Support agent",
        workflow_hash=HASH, started=T0, ended=T0 + timedelta(seconds=10),
        runs=[first, second], outputs=outputs, scores=scores, aggregates=aggregates,
        inputs={"refund": "Where is my refund?"}, dagster_run_id="run-1", content=content,
    )  # fmt: skip


def _spans(version: VersionRun) -> tuple[list[ReadableSpan], object]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    written = write_version_trace(provider.get_tracer("test"), version)
    return list(memory.get_finished_spans()), written


def _parent_name(span: ReadableSpan, spans: list[ReadableSpan]) -> str | None:
    if span.parent is None:
        return None
    return next(s.name for s in spans if s.context.span_id == span.parent.span_id)


def test_a_span_per_workflow_call_tool_call_evaluation_and_judge_call_in_one_tree() -> None:
    spans, written = _spans(_version())
    tree = sorted((s.name, _parent_name(s, spans)) for s in spans)
    assert tree == sorted([
        ("benchmark support", None),
        ("run refund:0", "benchmark support"),
        ("run refund:1", "benchmark support"),
        ("invoke_workflow Support agent", "run refund:0"),
        ("invoke_workflow Support agent", "run refund:1"),
        ("execute_tool order_lookup", "invoke_workflow Support agent"),
        ("execute_tool calculator", "invoke_workflow Support agent"),
        ("evaluate helpfulness", "run refund:0"),
        ("evaluate tool_correctness", "run refund:0"),
        ("evaluate helpfulness", "run refund:1"),
        ("chat gpt-4o-mini", "evaluate helpfulness"),
        ("chat gpt-4o-mini", "evaluate helpfulness"),
    ])  # fmt: skip
    assert len({s.context.trace_id for s in spans}) == 1
    assert written.trace_id == format(spans[0].context.trace_id, "032x")
    counts = (written.workflow_calls, written.tool_calls, written.evaluations, written.judge_calls)
    assert counts == (2, 2, 3, 2)


def test_the_spans_carry_the_genai_conventions_names() -> None:
    spans, _ = _spans(_version())
    by_name = {s.name: s for s in spans}
    call = next(s for s in spans if s.name.startswith("invoke_workflow") and s.events)
    assert call.kind is SpanKind.CLIENT
    assert call.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert call.attributes["gen_ai.workflow.name"] == "Support agent"
    assert call.attributes["gen_ai.conversation.id"] == "s-0"
    assert (
        call.attributes["gen_ai.usage.input_tokens"],
        call.attributes["gen_ai.usage.output_tokens"],
    ) == (900, 60)
    assert call.start_time == int((T0 + timedelta(seconds=1)).timestamp() * 1e9)
    assert call.end_time - call.start_time == 2_000_000_000
    tool = by_name["execute_tool order_lookup"]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "order_lookup"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert "gen_ai.tool.call.arguments" not in tool.attributes  # content is opt-in
    judge = [s for s in spans if s.name == "chat gpt-4o-mini"]
    answered = next(s for s in judge if not s.attributes["n8n_deepeval.judge.cached"])
    assert answered.kind is SpanKind.CLIENT
    assert answered.attributes["gen_ai.operation.name"] == "chat"
    assert answered.attributes["gen_ai.provider.name"] == "openai"
    assert answered.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert answered.attributes["gen_ai.usage.input_tokens"] == 1200
    assert answered.attributes["gen_ai.usage.output_tokens"] == 80
    assert answered.attributes["n8n_deepeval.cost_usd"] == pytest.approx(0.000123)
    assert answered.end_time - answered.start_time == 250_000_000
    # Every score is an evaluation event on the workflow call it evaluates.
    events = {e.attributes["gen_ai.evaluation.name"]: e for e in call.events}
    assert set(events) == {"helpfulness", "tool_correctness"}
    assert all(e.name == "gen_ai.evaluation.result" for e in call.events)
    assert events["helpfulness"].attributes["gen_ai.evaluation.score.value"] == 0.8
    assert events["helpfulness"].attributes["gen_ai.evaluation.score.label"] == "pass"
    assert events["tool_correctness"].attributes["gen_ai.evaluation.score.label"] == "fail"
    assert events["tool_correctness"].attributes["gen_ai.evaluation.explanation"] == (
        "calculator not expected"
    )


def test_failures_are_error_spans_with_redacted_messages() -> None:
    spans, _ = _spans(_version())
    run_1 = next(s for s in spans if s.name == "run refund:1")
    (failed_call,) = [
        s
        for s in spans
        if s.name.startswith("invoke_workflow") and s.parent.span_id == run_1.context.span_id
    ]
    assert failed_call.status.status_code is StatusCode.ERROR
    assert failed_call.attributes["error.type"] == "target_error"
    assert KEY not in failed_call.status.description
    assert "[redacted]" in failed_call.status.description
    failed_run = next(s for s in spans if s.name == "run refund:0")
    assert failed_run.status.status_code is StatusCode.ERROR  # it failed its pass rule
    assert failed_run.attributes["n8n_deepeval.run.passed"] is False


def test_content_is_opt_in_and_redacted() -> None:
    spans, _ = _spans(_version(content=True))
    tool = next(s for s in spans if s.name == "execute_tool order_lookup")
    assert '"order": "A-1"' in tool.attributes["gen_ai.tool.call.arguments"]
    assert KEY not in tool.attributes["gen_ai.tool.call.arguments"]
    assert tool.attributes["gen_ai.tool.call.result"] == '"shipped"'
    call = next(s for s in spans if s.name.startswith("invoke_workflow") and s.events)
    assert "Where is my refund?" in call.attributes["gen_ai.input.messages"]
    assert "Refund on its way" in call.attributes["gen_ai.output.messages"]


def test_the_endpoint_is_the_project_s_variable_else_opentelemetry_s() -> None:
    assert exporter.traces_endpoint({}) is None
    own = {"N8N_DEEPEVAL_OTLP_ENDPOINT": "http://127.0.0.1:6006/"}
    assert exporter.traces_endpoint(own) == "http://127.0.0.1:6006/v1/traces"
    full = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://otel.example/api/traces"}
    assert exporter.traces_endpoint(full) == "https://otel.example/api/traces"
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example"}
    assert exporter.traces_endpoint(base) == "https://otel.example/v1/traces"
    assert exporter.traces_endpoint({**base, **own}) == "http://127.0.0.1:6006/v1/traces"
    said = exporter.shown("https://user:pw@otel.example:4318/v1/traces?token=abc")
    assert said == "https://otel.example:4318/v1/traces"
    assert exporter.content_on({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert not exporter.content_on({})


def test_a_missing_exporter_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with (
        pytest.raises(exporter.TracesNotInstalled, match=r"n8n-deepeval-pipeline\[otel\]"),
        exporter.otlp_tracer("http://127.0.0.1:9/v1/traces", exporter.Delivery()),
    ):
        pass
