"""Labels files: runs written to label, labels read back; problems named by line and field."""

import csv
import json
from datetime import UTC, datetime

import pytest

from n8n_deepeval_pipeline.calibration.label_files import (
    JUDGE_COLUMNS,
    LabelFileError,
    Scored,
    labels_from_records,
    named_runs,
    read_sheet,
    sheet_rows,
    write_sheet,
)
from tests.calibration.review_items_by_hand import HASH, ITEMS

NOW = datetime(2026, 6, 11, 9, 30, tzinfo=UTC)
SCORED = Scored(
    metrics=("tool_correctness", "helpfulness", "bias"),
    pairs={(i.run_id, m): HASH for i in ITEMS for m in ("helpfulness", "bias")},
)
LABELS = ["pass", "fail", "true", "0", "1", "no"]  # per row of the sheet, in order


def labelled_copy(path, labels, reviewer="ann"):
    """The sheet at ``path`` with its label and reviewer columns filled, as a labeller would."""
    records = read_sheet(path)
    values = [dict(record.values, label=label, reviewer=reviewer) for record, label in
              zip(records, labels, strict=True)]  # fmt: skip
    if path.suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(values[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(values)
    else:
        path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_sheet_round_trips_into_labels(tmp_path, suffix):
    path = tmp_path / f"labels{suffix}"
    write_sheet(path, sheet_rows(ITEMS, blind=False), blind=False)
    read = read_sheet(path)
    assert len(read) == 6 and named_runs(read) == {i.run_id for i in ITEMS}
    first = read[0].values
    assert first["output"] == "Your order shipped.\nIt arrives Friday."  # a newline survives
    assert first["judge_reason"] == 'fine, "quoted"'
    assert json.loads(first["tool_calls"])[0]["tool"] == "order_lookup"
    labels, blank = labels_from_records(
        read_sheet(labelled_copy(path, LABELS)), SCORED, path, None, "import", NOW
    )
    assert blank == 0
    assert [(label.run_id[-4:], label.metric, label.passed) for label in labels] == [
        ("A1:0", "helpfulness", True), ("A1:0", "bias", False),
        ("A1:1", "helpfulness", True), ("A1:1", "bias", False),
        ("A2:0", "helpfulness", True), ("A2:0", "bias", False),
    ]  # fmt: skip
    assert {(label.reviewer, label.source, label.labelled_at) for label in labels} == {
        ("ann", "import", NOW)}  # fmt: skip


def test_a_blind_sheet_leaves_the_judge_out(tmp_path):
    path = tmp_path / "blind.csv"
    write_sheet(path, sheet_rows(ITEMS, blind=True), blind=True)
    header = path.read_text().splitlines()[0].split(",")
    assert not set(JUDGE_COLUMNS) & set(header)
    assert {
        "run_id",
        "case_id",
        "run_index",
        "metric",
        "input",
        "output",
        "label",
        "reviewer",
    } <= set(header)


def test_ratings_blank_rows_and_a_default_reviewer(tmp_path):
    path = tmp_path / "rated.jsonl"
    write_sheet(path, sheet_rows(ITEMS, blind=True), blind=True)
    # helpfulness rated 1–5 (so its 1 is a rating), bias in words; one row left for later
    labelled_copy(path, ["5", "pass", "1", "", "3", "fail"], reviewer="")
    labels, blank = labels_from_records(read_sheet(path), SCORED, path, "ben", "import", NOW)
    assert blank == 1
    assert [(label.metric, label.passed, label.rating) for label in labels] == [
        ("helpfulness", True, 5), ("bias", True, None), ("helpfulness", False, 1),
        ("helpfulness", None, 3), ("bias", False, None),
    ]  # fmt: skip
    assert {label.reviewer for label in labels} == {"ben"}


def test_every_problem_is_named_by_line_and_field_and_nothing_is_taken(tmp_path):
    path = tmp_path / "bad.csv"
    rows = sheet_rows(ITEMS, blind=True)
    rows[1]["metric"] = "helpfulnes"  # a typo
    rows[2]["run_id"] = f"{HASH}:A9:0"  # a run that was never stored
    rows[3]["metric"] = "tool_correctness"  # a metric not scored on that run
    write_sheet(path, rows, blind=True)
    labelled_copy(path, ["pass", "fail", "pass", "pass", "maybe", "1"])
    text = path.read_text()
    with pytest.raises(LabelFileError) as refused:
        labels_from_records(read_sheet(path), SCORED, path, None, "import", NOW)
    # the outputs hold a newline: each record's line is where it starts in the file
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith(HASH)]
    assert refused.value.problems == [
        f"line {starts[1]}, field metric: unknown metric 'helpfulnes' (the benchmark's: "
        "tool_correctness, helpfulness, bias)",
        f"line {starts[2]}, field run_id: no stored run '{HASH}:A9:0' of this benchmark",
        f"line {starts[3]}, field metric: tool_correctness has no stored score on run {HASH}:A1:1",
        f"line {starts[4]}, field label: 'maybe' is not a label: write pass or fail, true or "
        "false, 1 or 0, or 1–5",
    ]
    assert str(path) in str(refused.value) and "nothing imported" in str(refused.value)


def test_a_row_without_a_reviewer_or_given_twice_is_refused(tmp_path):
    path = tmp_path / "twice.jsonl"
    rows = sheet_rows(ITEMS[:1], blind=True)
    write_sheet(path, rows + rows[:1], blind=True)
    labelled_copy(path, ["pass", "pass", "fail"], reviewer="")
    with pytest.raises(LabelFileError) as refused:
        labels_from_records(read_sheet(path), SCORED, path, None, "import", NOW)
    assert refused.value.problems[0] == (
        "line 1, field reviewer: empty (give the column, or --reviewer)"
    )
    with pytest.raises(LabelFileError) as again:
        labels_from_records(read_sheet(path), SCORED, path, "ann", "import", NOW)
    assert again.value.problems == ["line 3: repeats line 1's run, metric and reviewer"]


def test_a_file_that_is_neither_csv_nor_jsonl_or_not_json_is_refused(tmp_path):
    with pytest.raises(LabelFileError, match=r"use \.csv or \.jsonl"):
        read_sheet(tmp_path / "labels.xlsx")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"run_id": "x"}\n[1, 2]\n')
    with pytest.raises(LabelFileError, match="line 2: must be a JSON object"):
        read_sheet(broken)
