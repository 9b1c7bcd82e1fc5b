"""Runs to label offline, as a CSV or JSONL file, and the labels read back from one.

``labels export`` writes a row per (run, metric) to label: ids, the input and the answer
(the conversation and tool calls as JSON text), the expected output, and unless the file
is *blind* the judge's score, verdict and reason; ``label``, ``rating``, ``comment`` and
``reviewer`` are left for the labeller. ``labels import`` reads them back: rows whose label
and rating are both blank are left for later; every other row must name a stored run and
one of the benchmark's metrics scored on it, or the whole file is refused, each problem
with its line and field (nothing is written from a refused file).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.calibration.label_values import (
    LabelValue,
    holds_ratings,
    is_blank,
    rating_verdict,
    read_label,
    read_rating,
)
from n8n_deepeval_pipeline.calibration.review_items import ReviewItem
from n8n_deepeval_pipeline.tables.data_files import NotAJsonObjectError, json_object, numbered_lines
from n8n_deepeval_pipeline.tables.rows import HumanLabel, LabelSource
from n8n_deepeval_pipeline.workflow.hashing import version_key

LabelFormat = Literal["csv", "jsonl"]
JUDGE_COLUMNS = ("judge_score", "judge_passed", "judge_reason")
COLUMNS = (
    "run_id",
    "case_id",
    "row_id",
    "run_index",
    "version",
    "metric",
    "question",
    *JUDGE_COLUMNS,
    "threshold",
    "input",
    "output",
    "conversation",
    "tool_calls",
    "expected_output",
    "context",
    "label",
    "rating",
    "comment",
    "reviewer",
)
_MAX_PROBLEMS = 20


class LabelFileError(ValueError):
    """A labels file that cannot be read; each problem names its line (or row) and field."""

    def __init__(self, source: Path | str, problems: list[str]) -> None:
        self.source = str(source)
        self.problems = problems
        shown = problems[:_MAX_PROBLEMS]
        more = len(problems) - len(shown)
        listing = "\n".join(f"  - {problem}" for problem in shown)
        if more:
            listing += f"\n  … and {more} more"
        super().__init__(f"{self.source}: labels refused, nothing imported\n{listing}")


def label_format(path: Path) -> LabelFormat:
    """The format a labels file is written in, from its extension."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    raise LabelFileError(path, [f"cannot tell the format of {path.name!r}: use .csv or .jsonl"])


def _json_text(value: Any) -> str:
    return "" if value in (None, (), []) else json.dumps(value, ensure_ascii=False, default=str)


def sheet_rows(items: Sequence[ReviewItem], blind: bool) -> list[dict[str, Any]]:
    """A row per (run, metric) of the items; without the judge's columns when ``blind``."""
    rows = []
    for item in items:
        judged = {verdict.metric: verdict for verdict in item.judge}
        for metric in item.metrics:
            verdict = judged.get(metric.metric)
            row: dict[str, Any] = {
                "run_id": item.run_id,
                "case_id": item.case_id,
                "row_id": item.row_id,
                "run_index": item.run_index,
                "version": version_key(item.workflow_hash),
                "metric": metric.metric,
                "question": metric.question or metric.name,
                "judge_score": None if verdict is None else verdict.score,
                "judge_passed": None if verdict is None else verdict.passed,
                "judge_reason": None if verdict is None else verdict.reason,
                "threshold": metric.threshold,
                "input": item.input,
                "output": item.output if item.output is not None else item.output_error,
                "conversation": _json_text([turn.model_dump() for turn in item.conversation or ()]),
                "tool_calls": _json_text([call.model_dump() for call in item.tool_calls]),
                "expected_output": item.expected_output,
                "context": _json_text(list(item.context or ())),
                "label": None,
                "rating": None,
                "comment": None,
                "reviewer": None,
            }
            rows.append({k: v for k, v in row.items() if not (blind and k in JUDGE_COLUMNS)})
    return rows


def write_sheet(path: Path, rows: Sequence[Mapping[str, Any]], blind: bool) -> None:
    """Write the rows as CSV or JSONL (the extension says which)."""
    columns = [column for column in COLUMNS if not (blind and column in JUDGE_COLUMNS)]
    if label_format(path) == "jsonl":
        text = "".join(json.dumps(dict(row), ensure_ascii=False) + "\n" for row in rows)
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
        text = buffer.getvalue()
    path.write_text(text, encoding="utf-8")


class SheetRecord(BaseModel):
    """One row read from a labels file (or a Data Table), before it is checked."""

    model_config = ConfigDict(frozen=True)

    where: str  # "line 4" (a file) or "row 12" (a Data Table)
    values: dict[str, Any]


def _csv_records(text: str) -> Iterator[SheetRecord]:
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        return
    start = reader.line_num + 1
    for values in reader:
        yield SheetRecord(where=f"line {start}", values=dict(values))
        start = reader.line_num + 1


def _jsonl_records(text: str, source: Path) -> Iterator[SheetRecord]:
    for number, line in numbered_lines(text):
        try:
            yield SheetRecord(where=f"line {number}", values=json_object(line))
        except NotAJsonObjectError as error:
            raise LabelFileError(source, [f"line {number}: {error}"]) from None


def read_sheet(path: Path) -> list[SheetRecord]:
    """The records of a labels file (CSV or JSONL)."""
    kind = label_format(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise LabelFileError(path, [f"cannot read the file: {error}"]) from None
    return list(_csv_records(text) if kind == "csv" else _jsonl_records(text, path))


class Scored(BaseModel):
    """What the results store knows of the runs a file names."""

    model_config = ConfigDict(frozen=True)

    metrics: tuple[str, ...]  # the benchmark's metric labels
    pairs: dict[tuple[str, str], str]  # (run, metric) scored → the run's workflow hash


def _cell(values: Mapping[str, Any], name: str) -> Any:
    value = values.get(name)
    return None if is_blank(value) else value


def _label_of(record: SheetRecord, ratings: bool) -> LabelValue | str | None:
    """The record's label (None: left blank), or the problem with it."""
    label, rating = _cell(record.values, "label"), _cell(record.values, "rating")
    try:
        given = None if label is None else read_label(label, ratings)
    except ValueError as error:
        return f"{record.where}, field label: {error}"
    try:
        rated = None if rating is None else read_rating(rating)
    except ValueError as error:
        return f"{record.where}, field rating: {error}"
    if given is None:
        return None if rated is None else LabelValue(rating_verdict(rated), rated)
    if rated is not None and given.rating is not None and rated != given.rating:
        return (
            f"{record.where}, field rating: {rated} differs from the label's rating {given.rating}"
        )
    return LabelValue(given.passed, given.rating or rated)


def _problem_with_run(record: SheetRecord, run: Any, metric: Any, scored: Scored) -> str | None:
    if run is None:
        return f"{record.where}, field run_id: empty"
    if metric is None:
        return f"{record.where}, field metric: empty"
    if str(metric) not in scored.metrics:
        return (
            f"{record.where}, field metric: unknown metric {str(metric)!r} "
            f"(the benchmark's: {', '.join(scored.metrics)})"
        )
    if not any(key[0] == str(run) for key in scored.pairs):
        return f"{record.where}, field run_id: no stored run {str(run)!r} of this benchmark"
    if (str(run), str(metric)) not in scored.pairs:
        return f"{record.where}, field metric: {metric} has no stored score on run {run}"
    return None


def labels_from_records(
    records: Iterable[SheetRecord],
    scored: Scored,
    source: Path | str,
    default_reviewer: str | None,
    origin: LabelSource,
    now: datetime | None = None,
) -> tuple[list[HumanLabel], int]:
    """The labels of the records, and how many were left blank; any problem refuses them all."""
    listed = list(records)
    by_metric: dict[str, list[Any]] = {}
    for record in listed:
        by_metric.setdefault(str(record.values.get("metric")), []).append(
            record.values.get("label")
        )
    rated = {metric for metric, values in by_metric.items() if holds_ratings(values)}
    when = now or datetime.now(UTC)
    labels: list[HumanLabel] = []
    problems: list[str] = []
    first_seen: dict[tuple[str, str, str], str] = {}
    blank = 0
    for record in listed:
        given = _label_of(record, str(record.values.get("metric")) in rated)
        if given is None:
            blank += 1
            continue
        if isinstance(given, str):
            problems.append(given)
            continue
        run, metric = _cell(record.values, "run_id"), _cell(record.values, "metric")
        reviewer = _cell(record.values, "reviewer") or default_reviewer
        problem = _problem_with_run(record, run, metric, scored)
        if problem is None and reviewer is None:
            problem = f"{record.where}, field reviewer: empty (give the column, or --reviewer)"
        key = (str(run), str(metric), str(reviewer))
        if problem is None and key in first_seen:
            problem = f"{record.where}: repeats {first_seen[key]}'s run, metric and reviewer"
        if problem is not None:
            problems.append(problem)
            continue
        first_seen[key] = record.where
        labels.append(
            HumanLabel(
                workflow_hash=scored.pairs[(str(run), str(metric))],
                run_id=str(run),
                metric=str(metric),
                reviewer=str(reviewer),
                passed=given.passed,
                rating=given.rating,
                comment=None
                if _cell(record.values, "comment") is None
                else str(record.values["comment"]),
                labelled_at=when,
                source=origin,
            )
        )
    if problems:
        raise LabelFileError(source, problems)
    return labels, blank


def named_runs(records: Iterable[SheetRecord]) -> set[str]:
    """The run ids the records name (to ask the store about)."""
    return {str(run) for record in records if (run := _cell(record.values, "run_id")) is not None}
