"""The run_trace asset: a version's run sent as one OpenTelemetry trace, when asked for.

Present only while an OTLP endpoint is named (``N8N_DEEPEVAL_OTLP_ENDPOINT`` or
OpenTelemetry's own variables, where the definitions are loaded), after the version's
scores and aggregates; the scoring steps then keep each judge call's timing for it. A
receiver that is down costs the trace, never the run: the step says what was lost.
"""

# No postponed annotations: Dagster inspects the annotations of asset functions.
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg
import pandas as pd

from n8n_deepeval_pipeline.benchmark.config import Benchmark, RecordedTarget
from n8n_deepeval_pipeline.tables.frames import from_frame
from n8n_deepeval_pipeline.tables.rows import (
    AgentOutput,
    DatasetRow,
    ExpandedRun,
    MetricScore,
    RunAggregate,
    WorkflowSnapshot,
)
from n8n_deepeval_pipeline.tracing.exporter import traces_endpoint

if TYPE_CHECKING:  # OpenTelemetry is imported by a step that sends a trace, not at load
    from n8n_deepeval_pipeline.tracing.exporter import Delivery
    from n8n_deepeval_pipeline.tracing.version_trace import VersionRun, WrittenTrace

TRACE_INPUTS = (
    "workflow_snapshot",
    "dataset_rows",
    "expanded_runs",
    "agent_outputs",
    "metric_scores",
    "run_aggregates",
)


def traces_wanted() -> bool:
    """Whether runs are exported as traces (an endpoint is named where this is loaded)."""
    return traces_endpoint() is not None


def send_trace(context: dg.AssetExecutionContext, run: "VersionRun") -> dict[str, Any]:
    """Send ``run`` to the endpoint; the step's metadata (a loss is a warning, not a failure)."""
    from n8n_deepeval_pipeline.tracing.exporter import Delivery, otlp_tracer, shown
    from n8n_deepeval_pipeline.tracing.version_trace import write_version_trace

    endpoint = traces_endpoint()
    if endpoint is None:
        context.log.warning("no OTLP endpoint is set any more: no trace sent")
        return {"trace_sent": False}
    delivery = Delivery()
    with otlp_tracer(endpoint, delivery) as tracer:
        written = write_version_trace(tracer, run)
    where = shown(endpoint)
    if delivery.lost:
        context.log.warning(
            f"trace {written.trace_id}: {delivery.lost} of {delivery.sent + delivery.lost} "
            f"spans did not reach {where}"
        )
    else:
        context.log.info(f"trace {written.trace_id}: {delivery.sent} spans sent to {where}")
    return _metadata(written, delivery, where)


def _metadata(written: "WrittenTrace", delivery: "Delivery", where: str) -> dict[str, Any]:
    return {
        "trace_sent": delivery.lost == 0,
        "trace_id": written.trace_id,
        "endpoint": where,
        "spans_sent": delivery.sent,
        "spans_lost": delivery.lost,
        "workflow_calls": written.workflow_calls,
        "tool_calls": written.tool_calls,
        "evaluations": written.evaluations,
        "judge_calls": written.judge_calls,
    }


def build_run_trace_asset(
    benchmark: Benchmark, common: dict[str, Any], ins: dict[str, dg.AssetIn]
) -> dg.AssetsDefinition:
    """The asset that sends a version's run as a trace (``ins``: TRACE_INPUTS)."""

    @dg.asset(
        name="run_trace",
        description="This version's run sent as an OpenTelemetry trace (GenAI conventions): "
        "a span per workflow call and tool call, per evaluation and judge call.",
        ins=ins,
        **{**common, "metadata": {}},
    )
    def run_trace(
        context: dg.AssetExecutionContext,
        workflow_snapshot: pd.DataFrame,
        dataset_rows: pd.DataFrame,
        expanded_runs: pd.DataFrame,
        agent_outputs: pd.DataFrame,
        metric_scores: pd.DataFrame,
        run_aggregates: pd.DataFrame,
    ) -> dg.MaterializeResult:
        from n8n_deepeval_pipeline.tracing.exporter import content_on
        from n8n_deepeval_pipeline.tracing.version_trace import VersionRun

        (snapshot,) = from_frame(WorkflowSnapshot, workflow_snapshot)
        stats = context.instance.get_run_stats(context.run_id)
        now = datetime.now(UTC)
        started = datetime.fromtimestamp(stats.start_time, UTC) if stats.start_time else now
        run = VersionRun(
            root_name=f"benchmark {benchmark.name}",
            benchmark=benchmark.name,
            workflow_name=snapshot.name or benchmark.name,
            workflow_hash=snapshot.workflow_hash,
            started=started,
            ended=now,
            runs=from_frame(ExpandedRun, expanded_runs),
            outputs={o.run_id: o for o in from_frame(AgentOutput, agent_outputs)},
            scores=from_frame(MetricScore, metric_scores),
            aggregates={a.run_id: a for a in from_frame(RunAggregate, run_aggregates)},
            inputs={row.row_id: row.input for row in from_frame(DatasetRow, dataset_rows)},
            recorded=isinstance(benchmark.target, RecordedTarget),
            dagster_run_id=context.run_id,
            content=content_on(),
        )
        return dg.MaterializeResult(metadata=send_trace(context, run))

    trace_asset: dg.AssetsDefinition = run_trace
    return trace_asset
