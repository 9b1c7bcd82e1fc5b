"""Chunks of the scoring plan: balanced, covering every evaluation once, with stable ids."""

import pytest

from n8n_deepeval_pipeline.tables.scoring_chunks import plan_chunks


@pytest.mark.parametrize(
    ("tasks", "size", "sizes"),
    [
        (189, 1000, [189]),
        (189, 100, [94, 95]),
        (1000, 1000, [1000]),
        (1001, 1000, [500, 501]),
        (20_000, 1000, [1000] * 20),
        (10, 3, [2, 3, 2, 3]),
        (0, 1000, [0]),  # one empty chunk: the collecting step still runs
    ],
)
def test_chunks_are_balanced_and_never_larger_than_the_size(tasks, size, sizes):
    chunks = plan_chunks(tasks, size)
    assert [chunk.size for chunk in chunks] == sizes
    assert all(chunk.size <= size for chunk in chunks)
    assert all(chunk.plan_tasks == tasks and chunk.count == len(chunks) for chunk in chunks)


@pytest.mark.parametrize(("tasks", "size"), [(189, 1000), (189, 7), (20_000, 333), (5, 1)])
def test_every_evaluation_is_in_exactly_one_chunk_in_order(tasks, size):
    chunks = plan_chunks(tasks, size)
    covered = [task for chunk in chunks for task in range(chunk.start, chunk.stop)]
    assert covered == list(range(tasks))
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))


def test_chunk_ids_are_stable_sortable_mapping_keys():
    ids = [chunk.chunk_id for chunk in plan_chunks(189, 100)]
    assert ids == ["c01_of_02", "c02_of_02"]
    assert ids == [chunk.chunk_id for chunk in plan_chunks(189, 100)]  # same plan, same ids
    many = [chunk.chunk_id for chunk in plan_chunks(20_000, 100)]
    assert many[0] == "c001_of_200" and many[-1] == "c200_of_200"
    assert many == sorted(many) and len(set(many)) == 200
    assert all(key.replace("_", "").isalnum() for key in many)  # valid Dagster mapping keys


def test_a_chunk_size_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        plan_chunks(10, 0)
