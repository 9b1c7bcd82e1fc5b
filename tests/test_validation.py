"""validate: recordings that would be silently ignored are reported with file, row and run."""

import json

import pytest

from n8n_deepeval_pipeline import BenchmarkConfigError
from n8n_deepeval_pipeline.validation import check_benchmark


def test_recordings_of_unknown_rows_or_runs_beyond_runs_per_row_are_errors(example_copy):
    outputs = example_copy.parent / "outputs.jsonl"
    lines = outputs.read_text().splitlines()
    extra = [
        {"row_id": "no-such-row", "run_index": 0, "output": "x"},
        {"row_id": json.loads(lines[0])["row_id"], "run_index": 3, "output": "x"},
    ]
    outputs.write_text("\n".join([*lines, *map(json.dumps, extra)]) + "\n")
    with pytest.raises(BenchmarkConfigError) as caught:
        check_benchmark(example_copy)
    assert caught.value.problems == [
        "outputs.jsonl: row_id 'no-such-row' run_index 0: "
        "no such row in the dataset (after filters)",
        f"outputs.jsonl: row_id {extra[1]['row_id']!r} run_index 3: "
        "run_index must be below runsPerRow (3)",
    ]


def test_the_bundled_example_is_valid(example_copy):
    _, report = check_benchmark(example_copy)
    assert (report.rows, report.runs, report.workflow_hash[:12]) == (9, 27, "f7ee35b359b4")
