"""Which runs Consistency compares, and the label of each (the seed's Consistency options).

- ``groupByField`` names an ``evalContext`` field; runs with the same value form one
  group (one ``consistency_stats`` row, whose ``case_id`` is that value). ``caseId`` (the
  default) groups a row's repeated runs; ``rowId`` groups by row id. A run whose
  ``evalContext`` lacks the field is an error that names the field and the run.
- ``labelField`` is a path into the run's item (``tables.run_items``): ``label``,
  ``output``, ``row.<column>``, ``evalContext.runName``, ``result.category`` (a field
  of the workflow's answer), ``success``, ``metrics[0].score`` … Text is the label as it
  is; any other value is its JSON text (``true``, ``3``, ``{"a":1}``). A run where the
  path finds nothing, or that has no stored output, has no label and does not count in
  the label statistics; when a label basis (``entropy``, ``agreement``) finds no label
  in any run that produced an output, it is an error that names the field.
"""

from __future__ import annotations

from typing import NamedTuple

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.n8n_data.expressions import as_text, resolve_path
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun, RunAggregate
from n8n_deepeval_pipeline.tables.run_items import eval_context, run_item


class ConsistencyFieldError(ValueError):
    """``groupByField`` or ``labelField`` finds nothing where it must find something."""


class GroupedRun(NamedTuple):
    """A run, the group it belongs to, and its label (None: no label)."""

    key: str
    run: ExpandedRun
    label: str | None


def grouped_runs(
    benchmark: Benchmark,
    runs: list[ExpandedRun],
    aggregates: dict[str, RunAggregate],
    outputs: dict[str, AgentOutput],
    rows: dict[str, DatasetRow],
) -> list[GroupedRun]:
    """Each run with its group key and label, in the runs' order."""
    config = benchmark.consistency
    table = benchmark.runs_dataset.data_table
    field = config.group_by_field
    path = config.label_path
    grouped = []
    for run in runs:
        value = eval_context(run, table).get(field)
        if value is None:
            raise ConsistencyFieldError(
                f"consistency.groupByField {field!r}: evalContext.{field} is not set on run "
                f"{run.run_id}"
            )
        output = outputs.get(run.run_id)
        label = None
        if path is not None and output is not None:
            item = run_item(run, rows[run.row_id], output, aggregates.get(run.run_id), table)
            found = resolve_path(item, path)
            label = None if found is None else as_text(found)
        grouped.append(GroupedRun(as_text(value), run, label))
    _labels_found(benchmark, grouped, outputs)
    return grouped


def _labels_found(
    benchmark: Benchmark, grouped: list[GroupedRun], outputs: dict[str, AgentOutput]
) -> None:
    config = benchmark.consistency
    if config.consistency_basis == "cv" or any(entry.label is not None for entry in grouped):
        return
    produced = [
        entry.run.run_id
        for entry in grouped
        if (output := outputs.get(entry.run.run_id)) is not None and output.error is None
    ]
    if produced:
        raise ConsistencyFieldError(
            f"consistency.labelField {config.label_field!r} found no label in any run "
            f"(e.g. {produced[0]}), and consistencyBasis {config.consistency_basis!r} "
            "compares labels: check the path against the run's item (label, output, "
            "row.<column>, evalContext.<field>, a field of the answer)"
        )
