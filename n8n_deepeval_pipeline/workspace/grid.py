"""A version's cases × runs grid: each run passed or failed, each metric's results per case.

Filtered to the cases that failed, the cases the comparison flags, or those one metric
failed, searched in the inputs and the outputs, sorted by any column, and shown a page of
cases at a time. The database sums the runs and the metric results per case; only the
shown page's inputs are read.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline.report.excerpt import Excerpt
from n8n_deepeval_pipeline.report.verdicts import attention_order, is_flagged
from n8n_deepeval_pipeline.statistics.version_comparison import Verdict, pass_count
from n8n_deepeval_pipeline.workspace.store import Reader, placeholders, table
from n8n_deepeval_pipeline.workspace.versions import StoredVersion

CASES_PER_PAGE = 50
INPUT_LIMIT = 140  # a grid row shows the input's beginning; the case page shows it whole
Show = Literal["all", "failures", "flagged"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class GridQuery(_Frozen):
    """What the grid shows: a filter, a search, an order and a page (the URL's query)."""

    show: Show = "all"
    metric: str | None = None  # only the cases this metric failed in some run
    search: str | None = None  # in the inputs and the outputs, any case
    sort: str = "attention"  # attention, case, passes, or a metric's name
    descending: bool = False
    page: int = Field(default=1, ge=1)


class RunCell(_Frozen):
    """One run of a case: whether it passed, and the metrics that failed it."""

    run_index: int
    passed: bool
    overall_score: float | None
    failing: tuple[str, ...]  # the deciding metrics that failed or errored in the run
    placeholder: bool  # failed on dry-run placeholders alone, not on judgements


class MetricCell(_Frozen):
    """One metric over a case's runs."""

    results: int
    passed: int
    errors: int
    mean_score: float | None
    dry_run: bool  # placeholders of the dry-run judge, not judgements


class GridRow(_Frozen):
    """One case (dataset row) of the version."""

    row_id: str
    input: Excerpt | None
    runs: tuple[RunCell, ...]
    metrics: dict[str, MetricCell]
    verdict: Verdict | None  # against the baseline (None: no baseline)

    @property
    def passed(self) -> int:
        """Runs that passed."""
        return sum(run.passed for run in self.runs)

    @property
    def failed(self) -> bool:
        """Whether a run failed."""
        return any(not run.passed for run in self.runs)


class Grid(_Frozen):
    """The page of cases shown, and what the whole version holds."""

    query: GridQuery
    metrics: tuple[str, ...]  # the benchmark file's order, then any other by name
    placeholder_metrics: tuple[str, ...]  # scored by the dry-run judge
    run_count: int  # the most runs a case has (the grid's run columns)
    rows: tuple[GridRow, ...]  # the page's
    cases: int  # in the version
    matching: int  # that the filter and the search keep
    pages: int
    per_page: int = CASES_PER_PAGE
    errors_by_kind: dict[str, int]  # score rows' error kinds, most frequent first
    output_errors_by_kind: dict[str, int]  # runs without output, by kind


def _run_cells(
    reader: Reader, schema: str, digest: str, placeholder_metrics: set[str]
) -> dict[str, list[RunCell]]:
    """Each case's runs by index: passed, and the deciding metrics that failed them."""
    by_row: dict[str, list[RunCell]] = defaultdict(list)
    for record in reader.records(
        "select e.row_id, e.run_index, a.overall_success, a.overall_score, a.metrics "
        f"from {table(schema, 'expanded_runs')} as e "
        f"join {table(schema, 'run_aggregates')} as a "
        "on a.workflow_hash = e.workflow_hash and a.run_id = e.run_id "
        "where e.workflow_hash = ? order by e.row_id, e.run_index",
        [digest],
    ):
        deciding = json.loads(record["metrics"] or "[]")
        failing = tuple(
            str(outcome["metric"])
            for outcome in deciding
            if not outcome.get("success") or outcome.get("error_kind")
        )
        passed = bool(record["overall_success"])
        by_row[str(record["row_id"])].append(
            RunCell(
                run_index=int(record["run_index"]),
                passed=passed,
                overall_score=record["overall_score"],
                failing=failing,
                placeholder=not passed
                and bool(failing)
                and all(metric in placeholder_metrics for metric in failing),
            )
        )
    return by_row


def _metric_cells(reader: Reader, schema: str, digest: str) -> dict[str, dict[str, MetricCell]]:
    """Each case's metrics: results, passes (an errored result fails), errors, mean score."""
    cells: dict[str, dict[str, MetricCell]] = defaultdict(dict)
    for record in reader.records(
        "select e.row_id, s.metric, count(*) as results, "
        "sum(case when s.success and s.error_kind is null then 1 else 0 end) as passed, "
        "count(s.error_kind) as errors, avg(s.score) as mean_score, "
        "sum(case when s.dry_run then 1 else 0 end) as dry "
        f"from {table(schema, 'metric_scores')} as s "
        f"join {table(schema, 'expanded_runs')} as e "
        "on e.workflow_hash = s.workflow_hash and e.run_id = s.run_id "
        "where s.workflow_hash = ? group by e.row_id, s.metric",
        [digest],
    ):
        cells[str(record["row_id"])][str(record["metric"])] = MetricCell(
            results=int(record["results"]),
            passed=int(record["passed"] or 0),
            errors=int(record["errors"]),
            mean_score=None if record["mean_score"] is None else float(record["mean_score"]),
            dry_run=bool(record["dry"]),
        )
    return cells


def _error_counts(reader: Reader, schema: str, name: str, digest: str) -> dict[str, int]:
    counts = Counter(
        {
            str(record["error_kind"]): int(record["n"])
            for record in reader.records(
                f"select error_kind, count(*) as n from {table(schema, name)} "
                "where workflow_hash = ? and error_kind is not null group by error_kind",
                [digest],
            )
        }
    )
    return dict(counts.most_common())


def _matching_search(reader: Reader, schema: str, digest: str, text: str) -> set[str]:
    """The cases whose input, expected output or any run's output holds ``text`` (any case)."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    found = reader.records(
        f"select row_id from {table(schema, 'dataset_rows')} where workflow_hash = ? "
        "and (input ilike ? escape '\\' or expected_output ilike ? escape '\\')",
        [digest, pattern, pattern],
    )
    found += reader.records(
        f"select e.row_id from {table(schema, 'agent_outputs')} as o "
        f"join {table(schema, 'expanded_runs')} as e "
        "on e.workflow_hash = o.workflow_hash and e.run_id = o.run_id "
        "where o.workflow_hash = ? and o.actual_output ilike ? escape '\\'",
        [digest, pattern],
    )
    return {str(record["row_id"]) for record in found}


def _inputs(reader: Reader, schema: str, digest: str, row_ids: list[str]) -> dict[str, str]:
    if not row_ids:
        return {}
    return {
        str(record["row_id"]): str(record["input"])
        for record in reader.records(
            f"select row_id, input from {table(schema, 'dataset_rows')} "
            f"where workflow_hash = ? and input is not null "
            f"and row_id in ({placeholders(row_ids)})",
            [digest, *row_ids],
        )
    }


def _ordered_metrics(found: set[str], order: tuple[str, ...]) -> tuple[str, ...]:
    return tuple([m for m in order if m in found] + sorted(found - set(order)))


def _sort_key(row: GridRow, sort: str) -> tuple[object, ...]:
    if sort == "case":
        return (row.row_id,)
    if sort == "passes":
        return (row.passed / max(len(row.runs), 1), row.row_id)
    if sort == "attention":
        return attention_order(row.verdict, pass_count([r.passed for r in row.runs]), row.row_id)
    cell = row.metrics.get(sort)
    # A case without the metric sorts after every case with it, whichever the direction.
    return (cell is None or cell.mean_score is None, cell.mean_score if cell else 0, row.row_id)


def _kept(row: GridRow, query: GridQuery, searched: set[str] | None) -> bool:
    if query.show == "failures" and not row.failed:
        return False
    if query.show == "flagged" and not (row.verdict and is_flagged(row.verdict)):
        return False
    if query.metric is not None:
        cell = row.metrics.get(query.metric)
        if cell is None or cell.passed == cell.results:
            return False
    return searched is None or row.row_id in searched


def version_grid(
    reader: Reader,
    schema: str,
    version: StoredVersion,
    query: GridQuery,
    metric_order: tuple[str, ...],
    verdicts: Mapping[str, Verdict],
) -> Grid:
    """The grid of ``version`` as ``query`` asks (``verdicts``: each case's, by row id)."""
    digest = version.workflow_hash
    metrics = _metric_cells(reader, schema, digest)
    placeholder_metrics = {
        name for cells in metrics.values() for name, cell in cells.items() if cell.dry_run
    }
    runs = _run_cells(reader, schema, digest, placeholder_metrics)
    searched = _matching_search(reader, schema, digest, query.search) if query.search else None
    rows = [
        GridRow(
            row_id=row_id,
            input=None,
            runs=tuple(cells),
            metrics=metrics.get(row_id, {}),
            verdict=verdicts.get(row_id),
        )
        for row_id, cells in runs.items()
    ]
    kept = [row for row in rows if _kept(row, query, searched)]
    descending = query.descending and query.sort != "attention"
    kept.sort(key=lambda row: _sort_key(row, query.sort), reverse=descending)
    pages = max(1, -(-len(kept) // CASES_PER_PAGE))
    page = min(query.page, pages)
    shown = kept[(page - 1) * CASES_PER_PAGE : page * CASES_PER_PAGE]
    inputs = _inputs(reader, schema, digest, [row.row_id for row in shown])
    names = {name for cells in metrics.values() for name in cells}
    return Grid(
        query=query.model_copy(update={"page": page}),
        metrics=_ordered_metrics(names, metric_order),
        placeholder_metrics=_ordered_metrics(placeholder_metrics, metric_order),
        run_count=max((len(row.runs) for row in rows), default=0),
        rows=tuple(
            row.model_copy(
                update={
                    "input": Excerpt.of(inputs[row.row_id], INPUT_LIMIT)
                    if row.row_id in inputs
                    else None
                }
            )
            for row in shown
        ),
        cases=len(rows),
        matching=len(kept),
        pages=pages,
        errors_by_kind=_error_counts(reader, schema, "metric_scores", digest),
        output_errors_by_kind=_error_counts(reader, schema, "agent_outputs", digest),
    )
