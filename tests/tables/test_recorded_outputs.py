import json

import pytest

from n8n_deepeval_pipeline import DatasetRow
from n8n_deepeval_pipeline.benchmark_config import RecordedTarget
from n8n_deepeval_pipeline.config_errors import BenchmarkConfigError
from n8n_deepeval_pipeline.tables.recorded_outputs import NoRecordingError, recorded_outputs
from n8n_deepeval_pipeline.tables.steps import expanded_runs

HASH = "b" * 64


def rows(*ids, **raw):
    return {i: DatasetRow(workflow_hash=HASH, row_id=i, position=1, raw=raw) for i in ids}


def expand_runs(rows, runs_per_row):
    return expanded_runs(rows, runs_per_row, "test", HASH)


def test_jsonl_outputs_by_row_and_run_and_a_missing_run_is_an_error_row(tmp_path):
    lines = [
        {"row_id": "r1", "run_index": 0, "output": "a", "label": "x", "latencyS": 1.5},
        {"rowId": "r1", "runIndex": 1, "output": {"answer": 1}, "intermediateSteps": []},
    ]
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 3)
    target = RecordedTarget(outputs=path, workflowHash=HASH)
    outputs = recorded_outputs(target, runs, rows("r1"))
    assert [(o.actual_output, o.label, o.latency_s, o.error) for o in outputs] == [
        ("a", "x", 1.5, None),
        ('{"answer": 1}', None, None, None),
        (None, None, None, "no recorded output for row_id 'r1' run_index 2"),
    ]
    assert outputs[1].intermediate_steps == []
    assert [o.error_kind for o in outputs] == [None, None, "no_output"]


def test_outputs_belong_to_the_version_that_produced_them(tmp_path):
    other = "e" * 64
    lines = [
        {"workflow_hash": other, "row_id": "r1", "run_index": 0, "output": "old version"},
        {"workflowHash": HASH, "row_id": "r1", "run_index": 0, "output": "this version"},
    ]
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 1)
    (output,) = recorded_outputs(RecordedTarget(outputs=path), runs, rows("r1"))
    assert output.actual_output == "this version"
    new_version = [run.model_copy(update={"workflow_hash": "f" * 64}) for run in runs]
    with pytest.raises(NoRecordingError, match="no recorded outputs for version ffffffffffff"):
        recorded_outputs(RecordedTarget(outputs=path), new_version, rows("r1"))


def test_a_line_without_a_version_is_refused(tmp_path):
    path = tmp_path / "outputs.jsonl"
    path.write_text('{"row_id": "r1", "run_index": 0, "output": "a"}\n', encoding="utf-8")
    runs = expand_runs(list(rows("r1").values()), 1)
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(RecordedTarget(outputs=path), runs, rows("r1"))
    assert caught.value.problems == [
        "line 1: workflow_hash: which workflow version produced this output? "
        "(give workflow_hash on the line, or target.workflowHash for the file)"
    ]


def test_bad_lines_are_named_by_line_and_field(tmp_path):
    path = tmp_path / "outputs.jsonl"
    path.write_text('{"row_id": "r1", "run_index": -1, "output": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(BenchmarkConfigError) as caught:
        recorded_outputs(RecordedTarget(outputs=path, workflowHash=HASH), expand_runs([], 1), {})
    assert (
        caught.value.problems[0] == "line 1: run_index: Input should be greater than or equal to 0"
    )
    assert caught.value.problems[1].startswith("line 2: JSON: Invalid JSON")


def test_dataset_columns_are_shared_by_every_run():
    target = RecordedTarget(
        columns={"output": "answer", "intermediateSteps": "steps", "label": "tag"},
        workflowHash=HASH,
    )
    data = rows("r1", answer="hi", steps='[{"action": {"tool": "t"}}]', tag=3)
    outputs = recorded_outputs(target, expand_runs(list(data.values()), 2), data)
    assert [(o.actual_output, o.label) for o in outputs] == [("hi", "3"), ("hi", "3")]
    assert outputs[0].intermediate_steps == [{"action": {"tool": "t"}}]


def test_target_needs_exactly_one_source():
    with pytest.raises(ValueError, match="exactly one of 'outputs' or 'columns'"):
        RecordedTarget()
