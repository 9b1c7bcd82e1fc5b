import json

import pytest

from n8n_deepeval_pipeline import DatasetRow
from n8n_deepeval_pipeline.benchmark.config import RecordedTarget
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.tables.recorded_outputs import NoRecordingError, recorded_outputs
from n8n_deepeval_pipeline.tables.steps import expanded_runs

HASH = "b" * 64


def rows(*ids, **raw):
    return {i: DatasetRow(workflow_hash=HASH, row_id=i, position=1, raw=raw) for i in ids}


def expand_runs(rows, runs_per_row):
    return expanded_runs(rows, runs_per_row, "test")


def test_jsonl_outputs_by_row_and_run_and_a_missing_run_is_an_error_row(tmp_path):
    lines = [
        {"row_id": "r1", "run_index": 0, "output": "a", "label": "x", "latencyS": 1.5},
        {"rowId": "r1", "runIndex": 1, "output": {"answer": 1}, "intermediateSteps": []},
    ]
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 3)
    target = RecordedTarget(outputs=path, workflowHash=HASH)
    outputs = recorded_outputs(target, runs, rows("r1"), 3)
    assert [(o.actual_output, o.label, o.latency_s, o.error) for o in outputs] == [
        ("a", "x", 1.5, None),
        ('{"answer": 1}', None, None, None),
        (None, None, None, "no recorded output for row_id 'r1' run_index 2"),
    ]
    assert outputs[1].intermediate_steps == []
    # A run the recording lacks gave nothing to score: a failed workflow call, as a
    # live one is named, so that the report and `compare` say the same word.
    assert [o.error_kind for o in outputs] == [None, None, "target_error"]


def test_outputs_belong_to_the_version_that_produced_them(tmp_path):
    other = "e" * 64
    lines = [
        {"workflow_hash": other, "row_id": "r1", "run_index": 0, "output": "old version"},
        {"workflowHash": HASH, "row_id": "r1", "run_index": 0, "output": "this version"},
    ]
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 1)
    (output,) = recorded_outputs(RecordedTarget(outputs=path), runs, rows("r1"), 1)
    assert output.actual_output == "this version"
    new_version = [run.model_copy(update={"workflow_hash": "f" * 64}) for run in runs]
    with pytest.raises(NoRecordingError, match="no recorded outputs for version ffffffffffff"):
        recorded_outputs(RecordedTarget(outputs=path), new_version, rows("r1"), 1)


def test_a_line_without_a_version_is_refused(tmp_path):
    path = tmp_path / "outputs.jsonl"
    path.write_text('{"row_id": "r1", "run_index": 0, "output": "a"}\n', encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 1)
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(RecordedTarget(outputs=path), runs, rows("r1"), 1)
    assert caught.value.problems == [
        "line 1: workflow_hash: which workflow version produced this output? "
        "(give workflow_hash on the line, or target.workflowHash for the file; "
        "`n8n-deepeval hash WORKFLOW.json` prints it)"
    ]


def test_bad_lines_are_named_by_line_and_field(tmp_path):
    path = tmp_path / "outputs.jsonl"
    path.write_text(
        '{"row_id": "r1", "run_index": -1, "output": "a"}\n{oops\n\n["r1", 0]\n', encoding="utf-8"
    )
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(RecordedTarget(outputs=path, workflowHash=HASH), expand_runs([], 1), {}, 1)
    assert caught.value.problems == [
        "line 1: run_index: Input should be greater than or equal to 0",
        "line 2: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        "line 4: must be a JSON object {…}, one record per line",
    ]
    assert str(caught.value).splitlines()[0] == (
        f"{path}: invalid recorded outputs (target.outputs)"
    )


def test_lines_of_this_version_that_no_run_reads_are_refused_unless_ignored(tmp_path):
    other = "e" * 64
    lines = [
        {"row_id": "r1", "run_index": 0, "output": "a"},
        {"row_id": "r9", "run_index": 0, "output": "typo in the row id"},
        {"row_id": "r1", "run_index": 2, "output": "runsPerRow was 3"},
        {"row_id": "r9", "run_index": 5, "output": "another version", "workflow_hash": other},
    ]
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 2)
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(RecordedTarget(outputs=path, workflowHash=HASH), runs, rows("r1"), 2)
    assert caught.value.problems == [
        "line 2: row_id 'r9' run_index 0: no such row in the dataset (after filters and maxRows)",
        "line 3: row_id 'r1' run_index 2: run_index must be below runsPerRow (2)",
        "to leave out the lines no run reads, set target.ignoreUnusedOutputs: true",
    ]
    assert str(caught.value).splitlines()[0] == (
        f"{path}: invalid recorded outputs (target.outputs)"
    )
    ignoring = RecordedTarget(outputs=path, workflowHash=HASH, ignoreUnusedOutputs=True)
    outputs = recorded_outputs(ignoring, runs, rows("r1"), 2)
    assert [(o.actual_output, o.error_kind) for o in outputs] == [
        ("a", None),
        (None, "target_error"),
    ]


def test_an_outputs_file_that_is_not_utf8_or_is_a_directory_is_named(tmp_path):
    path = tmp_path / "outputs.jsonl"
    path.write_bytes(b'{"row_id": "r1", "run_index": 0, "output": "a"}\n{"output": "caf\xe9"}\n')
    target = RecordedTarget(outputs=path, workflowHash=HASH)
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(target, expand_runs([], 1), {}, 1)
    assert caught.value.problems == ["line 2: not UTF-8 text (byte 0xe9): save it as UTF-8"]
    path.unlink()
    path.mkdir()
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(target, expand_runs([], 1), {}, 1)
    assert caught.value.problems == ["is a directory, not a file"]


def test_dataset_columns_are_shared_by_every_run():
    target = RecordedTarget(
        columns={"output": "answer", "intermediateSteps": "steps", "label": "tag"},
        workflowHash=HASH,
    )
    data = rows("r1", answer="hi", steps='[{"action": {"tool": "t"}}]', tag=3)
    outputs = recorded_outputs(target, expand_runs(list(data.values()), 2), data, 2)
    assert [(o.actual_output, o.label) for o in outputs] == [("hi", "3"), ("hi", "3")]
    assert outputs[0].intermediate_steps == [{"action": {"tool": "t"}}]


def test_target_needs_exactly_one_source():
    with pytest.raises(ValueError, match="exactly one of 'outputs' or 'columns'"):
        RecordedTarget()
