from n8n_deepeval_pipeline.dataset import DatasetRow
from n8n_deepeval_pipeline.runs import expand_runs

HASH = "a" * 64


def row(row_id: str) -> DatasetRow:
    return DatasetRow(row_id=row_id, position=1, fields={}, raw={})


def test_ids_are_the_seeds_and_runs_are_row_major():
    runs = expand_runs(HASH, [row("r1"), row("42")], 3)
    assert [run.run_id for run in runs] == [
        f"{HASH}:r1:0",
        f"{HASH}:r1:1",
        f"{HASH}:r1:2",
        f"{HASH}:42:0",
        f"{HASH}:42:1",
        f"{HASH}:42:2",
    ]
    assert {run.case_id for run in runs} == {f"{HASH}:r1", f"{HASH}:42"}
    assert [run.run_index for run in runs[:3]] == [0, 1, 2]


def test_one_run_per_row_by_default_shape():
    (run,) = expand_runs(HASH, [row("only")], 1)
    assert (run.case_id, run.run_id, run.row_id) == (f"{HASH}:only", f"{HASH}:only:0", "only")
