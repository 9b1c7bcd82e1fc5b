"""Each label read beside its judge's result: the statements written once, for every reader.

The label store (read-write, the commands' and the steps') and the results workspace
(read-only, its pages) both measure the judges' agreement from the same rows, so that
``calibration.gate`` keeps the same metrics from deciding wherever a verdict is shown. A
label is joined with the score its run has now in ``metric_scores`` (or ``online_scores``
for a production execution, ``red_team_results`` for a played attack), so agreement is
measured against the metric as it is configured today. The statements take no parameter
and use SQL that DuckDB and PostgreSQL both read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.judged import JudgedLabel, RunKind
from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.statistics.pass_direction import Direction
from n8n_deepeval_pipeline.tables.rows import HumanLabel

Select = Callable[[str], Sequence[Sequence[Any]]]
"""Runs a select without parameters; its rows, each value in the order selected."""
Columns = Callable[[str], Collection[str]]
"""A table's columns in the benchmark's schema (none: no such table)."""

# A played attack's run and metric, as red_team.review names them ({t}: the table's alias).
ATTACK_RUN = "({t}workflow_hash || ':' || {t}result_id)"
ATTACK_METRIC = "('red_team:' || {t}vulnerability)"
_LABEL_FIELDS = ("run_id", "workflow_hash", "metric", "reviewer", "passed", "rating")
# Columns of the score tables a label is set beside; an older table may lack the last one.
_SCORE_COLUMNS = ("case_id", "score", "threshold", "success", "direction", "error_kind", "dry_run")
_OPTIONAL = ("judge_agreement",)


def quoted(name: str) -> str:
    """An identifier quoted for either database."""
    return '"' + name.replace('"', '""') + '"'


def judged_labels(benchmark: Benchmark, columns: Columns, select: Select) -> list[JudgedLabel]:
    """Every label of the benchmark whose run and metric have a stored result, with it."""
    if not columns(HumanLabel.table):
        return []
    # An online score stores no direction: the metric's in the benchmark file is its.
    directions = {
        metric.result_label(): entry_for(metric).direction for metric in benchmark.metrics
    }
    reads = _JudgedReads(benchmark.name, directions, columns, select)
    rows = reads.scores() + reads.online() + reads.attacks()
    return [JudgedLabel(**row) for row in rows]


class _JudgedReads:
    def __init__(
        self, schema: str, directions: Mapping[str, Direction], columns: Columns, select: Select
    ) -> None:
        self.schema = quoted(schema)
        self.directions = directions
        self.columns = columns
        self.select = select

    def _rows(self, selected: Sequence[tuple[str, str]], joined: str) -> list[dict[str, Any]]:
        """``selected``: (expression, name) pairs; each row as name → value."""
        labels = [(f"l.{name}", name) for name in _LABEL_FIELDS]
        pairs = [*labels, *selected]
        listed = ", ".join(f"{expression} as {name}" for expression, name in pairs)
        rows = self.select(f"select {listed} from {self.schema}.{HumanLabel.table} l join {joined}")
        return [dict(zip([name for _, name in pairs], row, strict=True)) for row in rows]

    def scores(self) -> list[dict[str, Any]]:
        stored = set(self.columns("metric_scores"))
        if not stored:
            return []
        optional = [(f"s.{c}" if c in stored else "null", c) for c in _OPTIONAL]
        rows = self._rows(
            [*((f"s.{c}", c) for c in _SCORE_COLUMNS), *optional],
            f"{self.schema}.metric_scores s on s.run_id = l.run_id and s.metric = l.metric",
        )
        return [_judged(row, "benchmark") for row in rows]

    def online(self) -> list[dict[str, Any]]:
        if not self.columns("online_scores"):
            return []
        shown = ("score", "threshold", "success", "error_kind", "dry_run")
        rows = self._rows(
            [("o.score_id", "case_id"), *((f"o.{c}", c) for c in shown)],
            f"{self.schema}.online_scores o on o.score_id = l.run_id and o.metric = l.metric",
        )
        for row in rows:
            row["direction"] = self.directions.get(row["metric"], "higher_is_better")
        return [_judged(row, "online") for row in rows]

    def attacks(self) -> list[dict[str, Any]]:
        """Labels of played attacks beside DeepTeam's verdicts (red_team.review)."""
        if not self.columns("red_team_results"):
            return []
        shown = ("score", "breached", "error_kind", "dry_run")
        rows = self._rows(
            [("r.attack_id", "case_id"), *((f"r.{c}", c) for c in shown)],
            f"{self.schema}.red_team_results r on {ATTACK_RUN.format(t='r.')} = l.run_id "
            f"and {ATTACK_METRIC.format(t='r.')} = l.metric",
        )
        for row in rows:
            row["success"] = not row.pop("breached")
            row.update(threshold=0.5, direction="higher_is_better")
        return [_judged(row, "red_team") for row in rows]


def _judged(values: dict[str, Any], kind: RunKind) -> dict[str, Any]:
    values["judge_passed"] = bool(values.pop("success"))
    values["dry_run"] = bool(values["dry_run"])
    values["kind"] = kind
    return values
