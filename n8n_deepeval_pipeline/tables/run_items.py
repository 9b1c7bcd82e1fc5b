"""A run as the n8n item the seed's nodes pass along (``$json``), and its ``evalContext``.

The item is what preset expressions (``={{ $json.output }}``) and Consistency's
``labelField`` read. Later sources win over earlier ones:

Preset expressions are evaluated here, in the Dagster process, when the tasks are
planned: the worker receives the values, and an expression that finds nothing becomes a
``missing_input`` score row naming the option and the path, without a task.

1. the dataset row's columns, as they are in the file or Data Table;
2. the fields of the workflow's answer, when its output is a JSON object (an answer
   ``{"result": {"answer": …}}`` gives ``$json.result.answer``);
3. the mapped fields with the seed Trigger's names (``input``, ``expectedOutput``,
   ``context``, ``retrievalContext``, ``expectedTools``, ``turns``, ``chatbotRole``,
   ``expectedOutcome``, ``scenario``, ``userDescription``), the run's ``output`` (also
   as ``actualOutput``), ``intermediateSteps``, ``label`` (recorded, else the mapped
   one), ``sessionId``, ``row`` (every dataset column) and ``evalContext``;
4. with the run's aggregate (what Consistency reads, as after the seed's Aggregate):
   ``runId``, ``score`` (the seed's raw mean), ``success``, ``overallScore``,
   ``overallSuccess``, ``rawMeanScore`` and ``metrics`` (each counted metric's outcome).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from n8n_deepeval_pipeline.evaluation import EvaluationItem
from n8n_deepeval_pipeline.metrics.n8n import JudgePresetConfig
from n8n_deepeval_pipeline.metrics.options import MetricConfig
from n8n_deepeval_pipeline.n8n_data.expressions import Expression, NothingFoundError, as_text
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, RunAggregate


def eval_context(run: ExpandedRun, source_table_id: str | None = None) -> dict[str, Any]:
    """The run's ``evalContext`` as the seed's Trigger emits it.

    ``sourceTableId`` (the dataset's n8n Data Table) is absent for a file dataset.
    """
    context: dict[str, Any] = {
        "workflowHash": run.workflow_hash,
        "caseId": run.case_id,
        "runIndex": run.run_index,
        "runId": run.run_id,
        "runName": run.run_name,
        "isEvalRun": True,
        "rowId": run.row_id,
    }
    table = run.data_table_id or source_table_id
    if table is not None:
        context["sourceTableId"] = table
    return context


def _answer_fields(output: str | None) -> dict[str, Any]:
    """The fields of an output that is a JSON object's text; none otherwise."""
    if output is None or not output.lstrip().startswith("{"):
        return {}
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def run_item(
    run: ExpandedRun,
    row: DatasetRow,
    output: AgentOutput | None,
    aggregate: RunAggregate | None = None,
    source_table_id: str | None = None,
) -> dict[str, Any]:
    """The run's n8n item (see the module's docstring for what it holds)."""
    actual = output.actual_output if output is not None else None
    recorded_label = output.label if output is not None else None
    item: dict[str, Any] = {**row.raw, **_answer_fields(actual)}
    item.update(
        {
            "input": row.input,
            "expectedOutput": row.expected_output,
            "context": row.context,
            "retrievalContext": row.retrieval_context,
            "expectedTools": row.expected_tools,
            "turns": output.turns if output is not None and output.turns is not None else row.turns,
            "chatbotRole": row.chatbot_role,
            "expectedOutcome": row.expected_outcome,
            "scenario": row.scenario,
            "userDescription": row.user_description,
            "output": actual,
            "actualOutput": actual,
            "intermediateSteps": output.intermediate_steps if output is not None else None,
            "label": recorded_label if recorded_label is not None else row.label,
            "sessionId": output.session_id if output is not None else None,
            "row": row.raw,
            "evalContext": eval_context(run, source_table_id),
        }
    )
    if aggregate is not None:
        item.update(
            {
                "runId": aggregate.run_id,
                "score": aggregate.raw_mean_score,
                "success": aggregate.overall_success,
                "overallScore": aggregate.overall_score,
                "overallSuccess": aggregate.overall_success,
                "rawMeanScore": aggregate.raw_mean_score,
                "metrics": aggregate.metrics,
            }
        )
    return item


class ExpressionFoundNothingError(ValueError):
    """A metric's expression option found no value in the run's item."""


ItemExpressions = dict[str, tuple[str, Expression]]  # item field → (option, expression)


def item_expressions(config: MetricConfig) -> ItemExpressions:
    """The metric's expression options (``actualAnswer``, …), parsed; none for most metrics.

    Parse once per metric and pass the result to ``with_expressions`` for each run.
    """
    return config.item_expressions() if isinstance(config, JudgePresetConfig) else {}


def with_expressions(
    expressions: ItemExpressions, item: EvaluationItem, json_item: Callable[[], dict[str, Any]]
) -> EvaluationItem:
    """``item`` with the fields the metric's expressions (``item_expressions``) fill.

    ``json_item`` builds the run's item (only called when the metric has expressions).
    Values that are not text become their JSON text. Raises
    ``ExpressionFoundNothingError`` naming the option, its expression and the path.
    """
    if not expressions:
        return item
    values = json_item()
    update: dict[str, str] = {}
    for field, (option, expression) in expressions.items():
        try:
            update[field] = as_text(expression.evaluate(values))
        except NothingFoundError as error:
            fields = ", ".join(sorted(str(key) for key in values))
            raise ExpressionFoundNothingError(
                f"missing input: {option} {expression.source!r} found nothing in this run's "
                f"item ({error.path} is absent or null; the item's fields: {fields})"
            ) from None
    return item.model_copy(update=update)
