"""A workflow version's run as one trace: its workflow calls, their tools, its evaluations.

The trace is written from the run's stored rows, after the run, through the OpenTelemetry
API with each span's own start and end:

    benchmark <name>                                the run (root)
      run <row id>:<run index>                      one run of a dataset row
        invoke_workflow <workflow>                  the workflow call (CLIENT)
          execute_tool <tool>                       each tool call of its intermediate steps
          (event gen_ai.evaluation.result)          each metric's score of the call
        evaluate <metric>                           one metric on the run
          chat <model>                              each judge call (CLIENT): tokens, cost

n8n's intermediate steps carry no timing: a tool call's span covers its workflow call.
A recorded output was not called in this run: its span starts with the run, as long as
its recorded latency, marked ``n8n_deepeval.output.source = recorded``. What was said
(inputs, outputs, tool arguments and results) is on the spans only when ``content`` is
asked for, with credentials redacted; error messages are redacted always.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    IntermediateStep,
    StepsShapeError,
    parse_intermediate_steps,
)
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.tables.rows import AgentOutput, ExpandedRun, MetricScore, RunAggregate
from n8n_deepeval_pipeline.tracing import conventions as names


@dataclass
class VersionRun:
    """What one trace is written from: a version's rows and when its run went on."""

    root_name: str
    """The root span's name, e.g. ``benchmark support_agent``."""
    benchmark: str
    workflow_name: str
    workflow_hash: str
    started: datetime
    ended: datetime
    runs: list[ExpandedRun]
    outputs: Mapping[str, AgentOutput]
    scores: list[MetricScore]
    aggregates: Mapping[str, RunAggregate] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """A row's input by row id, shown when ``content`` is on."""
    recorded: bool = False
    """The outputs were recorded earlier, not called in this run."""
    dagster_run_id: str | None = None
    content: bool = False
    """Put what was said on the spans (the conventions' opt-in content)."""


@dataclass
class WrittenTrace:
    """What a written trace holds: its id, and its spans by kind."""

    trace_id: str
    workflow_calls: int = 0
    tool_calls: int = 0
    evaluations: int = 0
    judge_calls: int = 0

    @property
    def spans(self) -> int:
        """Every span: the root, a run and a workflow call per run, and the rest."""
        return 1 + 2 * self.workflow_calls + self.tool_calls + self.evaluations + self.judge_calls


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ns(moment: datetime) -> int:
    """Nanoseconds since the epoch, exact to the microsecond (no float rounding)."""
    if moment.tzinfo is None:  # stored times are UTC
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1_000


def _after(moment: datetime, seconds: float | None) -> datetime:
    return moment + timedelta(seconds=max(seconds or 0.0, 0.0))


def _json(value: Any) -> str:
    return redact(json.dumps(value, ensure_ascii=False, default=str))


def _failed(span: Span, error_type: str, message: str | None) -> None:
    span.set_attribute(names.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, redact(message or error_type)))


def write_version_trace(tracer: Tracer, run: VersionRun) -> WrittenTrace:
    """Write ``run`` as one trace through ``tracer``; what it holds."""
    return _TraceWriter(tracer, run).write()


def _root_attributes(run: VersionRun) -> dict[str, Any]:
    passed = [aggregate.overall_success for aggregate in run.aggregates.values()]
    attributes: dict[str, Any] = {
        names.BENCHMARK: run.benchmark,
        names.WORKFLOW_NAME: run.workflow_name,
        names.WORKFLOW_HASH: run.workflow_hash,
        names.VERSION: run.workflow_hash[:12],
        names.RUNS: len(run.runs),
    }
    if passed:
        attributes[names.PASS_RATE] = sum(passed) / len(passed)
    if run.dagster_run_id:
        attributes[names.DAGSTER_RUN] = run.dagster_run_id
    return attributes


@dataclass
class _RunTimes:
    """When a run's call and each of its evaluations started and ended."""

    start: datetime
    call_end: datetime
    evaluations: list[tuple[datetime, datetime]]
    end: datetime

    @classmethod
    def of(cls, run: VersionRun, each: ExpandedRun, scores: list[MetricScore]) -> _RunTimes:
        output = run.outputs.get(each.run_id)
        start = (output.started_at if output else None) or run.started
        call_end = _after(start, output.latency_s if output else None)
        evaluations = []
        for score in scores:
            began = score.started_at or call_end
            evaluations.append((began, _after(began, score.latency_s)))
        end = max([call_end, *(ended for _, ended in evaluations)])
        return cls(start, call_end, evaluations, end)


class _TraceWriter:
    """One trace being written: its tracer, the run it is of, and what it holds so far."""

    def __init__(self, tracer: Tracer, run: VersionRun) -> None:
        self.tracer = tracer
        self.run = run
        self.scores: dict[str, list[MetricScore]] = {}
        for score in run.scores:
            self.scores.setdefault(score.run_id, []).append(score)
        self.times = {
            each.run_id: _RunTimes.of(run, each, self.scores.get(each.run_id, []))
            for each in run.runs
        }
        self.written = WrittenTrace(trace_id="")

    def _span(
        self,
        name: str,
        parent: Span | None,
        start: datetime,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self.tracer.start_span(
            name, context=context, kind=kind, start_time=_ns(start), attributes=attributes
        )

    def write(self) -> WrittenTrace:
        run = self.run
        starts = [times.start for times in self.times.values()] + [run.started]
        ends = [times.end for times in self.times.values()] + [run.ended]
        root = self._span(run.root_name, None, min(starts), _root_attributes(run))
        self.written.trace_id = format(root.get_span_context().trace_id, "032x")
        for each in run.runs:
            self._run(root, each)
        # The whole trace's size, on its last span to end: a reader knows when it has it all.
        root.set_attribute(names.TRACE_SPANS, self.written.spans)
        root.end(end_time=_ns(max(ends)))
        return self.written

    def _run(self, root: Span, each: ExpandedRun) -> None:
        times, scores = self.times[each.run_id], self.scores.get(each.run_id, [])
        attributes: dict[str, Any] = {
            names.RUN_ID: each.run_id,
            names.CASE_ID: each.case_id,
            names.ROW_ID: each.row_id,
            names.RUN_INDEX: each.run_index,
            names.VERSION: each.workflow_hash[:12],
        }
        aggregate = self.run.aggregates.get(each.run_id)
        if aggregate is not None:
            attributes[names.RUN_PASSED] = aggregate.overall_success
            if aggregate.overall_score is not None:
                attributes[names.OVERALL_SCORE] = aggregate.overall_score
        span = self._span(f"run {each.row_id}:{each.run_index}", root, times.start, attributes)
        if aggregate is not None and not aggregate.overall_success:
            span.set_status(Status(StatusCode.ERROR, "the run failed its pass rule"))
        self._call(span, each, scores, times)
        for score, when in zip(scores, times.evaluations, strict=True):
            self._evaluation(span, score, when)
        span.end(end_time=_ns(times.end))

    def _call(
        self, parent: Span, each: ExpandedRun, scores: list[MetricScore], times: _RunTimes
    ) -> None:
        """The workflow call, its tool calls, and every score of it as an evaluation event."""
        run = self.run
        output = run.outputs.get(each.run_id)
        attributes: dict[str, Any] = {
            names.OPERATION: names.INVOKE_WORKFLOW,
            names.WORKFLOW_NAME: run.workflow_name,
            names.RUN_ID: each.run_id,
            names.OUTPUT_SOURCE: "recorded" if run.recorded else "called",
        }
        if output is not None and output.session_id:
            attributes[names.CONVERSATION_ID] = output.session_id
        if output is not None and output.llm_prompt_tokens is not None:
            attributes[names.INPUT_TOKENS] = output.llm_prompt_tokens
            attributes[names.OUTPUT_TOKENS] = output.llm_completion_tokens or 0
        if output is not None and output.llm_cost_usd is not None:
            attributes[names.COST_USD] = output.llm_cost_usd
        if run.content:
            attributes.update(_messages(run.inputs.get(each.row_id), output))
        name = f"{names.INVOKE_WORKFLOW} {run.workflow_name}"
        span = self._span(name, parent, times.start, attributes, SpanKind.CLIENT)
        self.written.workflow_calls += 1
        if output is None or output.error is not None:
            kind = (output.error_kind if output else None) or "target_error"
            _failed(span, kind, output.error if output else "no output stored for this run")
        for step in _steps(output):
            tool = self._span(
                f"{names.EXECUTE_TOOL} {step.action.tool or 'unknown'}",
                span,
                times.start,
                _tool_attributes(step, run.content),
            )
            tool.end(end_time=_ns(times.call_end))
            self.written.tool_calls += 1
        for score, (_, ended) in zip(scores, times.evaluations, strict=True):
            span.add_event(
                names.EVALUATION_RESULT_EVENT,
                attributes=_evaluation_result(score),
                timestamp=_ns(ended),
            )
        span.end(end_time=_ns(times.call_end))

    def _evaluation(
        self, parent: Span, score: MetricScore, times: tuple[datetime, datetime]
    ) -> None:
        attributes: dict[str, Any] = {
            **_evaluation_result(score),
            names.METRIC: score.metric,
            names.METRIC_SLUG: score.metric_slug,
            names.THRESHOLD: score.threshold,
            names.DIRECTION: score.direction,
            names.JUDGE_CALLS: score.judge_calls,
        }
        if score.judge:
            attributes[names.JUDGE] = score.judge
        if score.cost_usd is not None:
            attributes[names.COST_USD] = score.cost_usd
        span = self._span(f"evaluate {score.metric}", parent, times[0], attributes)
        self.written.evaluations += 1
        if score.error_kind is not None:
            _failed(span, score.error_kind, score.error)
        for call in score.judge_call_log or []:
            self._judge_call(span, call)
        span.end(end_time=_ns(times[1]))

    def _judge_call(self, parent: Span, call: Mapping[str, Any]) -> None:
        started = datetime.fromtimestamp(call["started_at"], UTC)
        attributes: dict[str, Any] = {
            names.OPERATION: names.CHAT,
            names.PROVIDER_NAME: names.PROVIDERS.get(call["provider"], call["provider"]),
            names.REQUEST_MODEL: call["model"],
            names.INPUT_TOKENS: call.get("prompt_tokens", 0),
            names.OUTPUT_TOKENS: call.get("completion_tokens", 0),
            names.JUDGE: call["judge"],
            names.CACHED: bool(call.get("cached")),
            names.RETRIES: call.get("retries", 0),
        }
        if call.get("cost_usd") is not None:
            attributes[names.COST_USD] = call["cost_usd"]
        name = f"{names.CHAT} {call['model']}"
        span = self._span(name, parent, started, attributes, SpanKind.CLIENT)
        self.written.judge_calls += 1
        if call.get("error"):
            _failed(span, "judge_error", call["error"])
        span.end(end_time=_ns(_after(started, call.get("duration_s"))))


def _messages(user_input: Any, output: AgentOutput | None) -> dict[str, str]:
    """The conventions' input and output messages (opt-in content), redacted."""
    found = {}
    if user_input is not None:
        found[names.INPUT_MESSAGES] = _json(
            [{"role": "user", "parts": [{"type": "text", "content": user_input}]}]
        )
    if output is not None and output.actual_output is not None:
        found[names.OUTPUT_MESSAGES] = _json(
            [{"role": "assistant", "parts": [{"type": "text", "content": output.actual_output}]}]
        )
    return found


def _steps(output: AgentOutput | None) -> list[IntermediateStep]:
    if output is None or not output.intermediate_steps:
        return []
    try:
        return parse_intermediate_steps(output.intermediate_steps) or []
    except StepsShapeError:
        return []  # a shape the trace metrics report; the trace just has no tool spans


def _tool_attributes(step: IntermediateStep, content: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        names.OPERATION: names.EXECUTE_TOOL,
        names.TOOL_NAME: step.action.tool or "unknown",
        names.TOOL_TYPE: "function",
    }
    if step.action.tool_call_id:
        attributes[names.TOOL_CALL_ID] = step.action.tool_call_id
    if content:
        attributes[names.TOOL_ARGUMENTS] = _json(step.action.tool_input)
        attributes[names.TOOL_RESULT] = _json(step.observation)
    return attributes


def _label(score: MetricScore) -> str:
    if score.error_kind is not None:
        return "error"
    return "pass" if score.success else "fail"


def _evaluation_result(score: MetricScore) -> dict[str, Any]:
    """The ``gen_ai.evaluation.result`` event's attributes for one score."""
    attributes: dict[str, Any] = {
        names.EVALUATION_NAME: score.metric,
        names.EVALUATION_LABEL: _label(score),
    }
    if score.score is not None:
        attributes[names.EVALUATION_SCORE] = score.score
    explanation = score.reason or score.error
    if explanation:
        attributes[names.EVALUATION_EXPLANATION] = redact(explanation)
    if score.error_kind:
        attributes[names.ERROR_TYPE] = score.error_kind
    return attributes
