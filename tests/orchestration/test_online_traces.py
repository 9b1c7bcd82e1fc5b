"""Online evaluation sends its scored production executions as one trace per run.

The chat sensor's run on FakeN8nApi (a fake of n8n's public API) scores a session with
the OTLP endpoint set; the exporter is swapped for the SDK's in-memory one, so the spans
the run wrote are read back here (the live test reads a benchmark's from Phoenix).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.tracing import exporter
from tests.orchestration import test_online
from tests.orchestration.conftest import query
from tests.orchestration.test_online import CHAT_BENCHMARK, benchmark_file, chat_execution

n8n = test_online.n8n  # the fake n8n's fixture, shared with the online tests


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    memory = InMemorySpanExporter()

    @contextmanager
    def in_memory(endpoint: str, delivery: exporter.Delivery, environ=None) -> Iterator:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        yield provider.get_tracer("test")
        delivery.sent = len(memory.get_finished_spans())

    monkeypatch.setenv("N8N_DEEPEVAL_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(exporter, "otlp_tracer", in_memory)
    return memory


@pytest.mark.slow  # the worker pool scores
def test_a_scored_chat_session_is_a_trace_with_its_judge_calls(n8n, tmp_path, environment, spans):
    defs = build_definitions([benchmark_file(tmp_path, CHAT_BENCHMARK)])
    with dg.instance_for_test() as instance:
        sensor = defs.resolve_sensor_def("chat_online__online")
        resources = {"n8n": N8nResource(base_url=n8n.base_url, api_key="test-key")}

        def chat_tick(cursor):
            return sensor(dg.build_sensor_context(instance, cursor=cursor, resources=resources))

        cursor = chat_tick(None).cursor
        first = (datetime.now(UTC) - timedelta(minutes=20)).replace(microsecond=0)
        n8n.executions = [
            {**chat_execution(n, "s1", f"message {n}", first + timedelta(minutes=n)),
             "stoppedAt": (first + timedelta(minutes=n, seconds=2)).isoformat()}
            for n in (1, 2, 3)
        ]  # fmt: skip
        (request,) = chat_tick(cursor).run_requests
        done = defs.resolve_job_def("chat_online__online").execute_in_process(
            partition_key=request.partition_key, run_config=request.run_config, instance=instance
        )
    (tokens,) = query(environment, "select sum(tokens) from chat_online.online_scores")[0]
    written = spans.get_finished_spans()
    names = sorted(span.name.split(" ")[0] for span in written)
    judge_calls = [span for span in written if span.name.startswith("chat ")]
    assert names == sorted(
        ["online", "run", "invoke_workflow", "evaluate"] + ["chat"] * len(judge_calls)
    )
    assert judge_calls  # turn relevancy asks the (dry-run) judge
    call = next(span for span in written if span.name.startswith("invoke_workflow"))
    assert call.attributes["gen_ai.conversation.id"] == "s1"
    # the session's span runs from its first execution's start to its last one's stop
    assert call.start_time == int((first + timedelta(minutes=1)).timestamp()) * 10**9
    assert (call.end_time - call.start_time) / 1e9 == pytest.approx(122.0)
    (event,) = call.events
    assert event.attributes["gen_ai.evaluation.name"] == "turn_relevancy"
    assert (
        sum(
            span.attributes["gen_ai.usage.input_tokens"]
            + span.attributes["gen_ai.usage.output_tokens"]
            for span in judge_calls
        )
        == tokens
    )
    metadata = done.asset_materializations_for_node("chat_online__online_scores")[0].metadata
    assert metadata["judge_calls"].value == len(judge_calls)
    assert metadata["trace_id"].value == format(written[0].context.trace_id, "032x")
