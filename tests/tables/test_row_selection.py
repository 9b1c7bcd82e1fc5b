import pytest

from n8n_deepeval_pipeline.tables.row_selection import NoRowSelectedError, RowSelection
from n8n_deepeval_pipeline.tables.rows import DatasetRow

IDS = ["ord-status-1", "ord-status-2", "ord-total", "refund", "calc-shipping"]


def rows() -> list[DatasetRow]:
    return [
        DatasetRow(workflow_hash="a" * 64, row_id=i, position=n, raw={}) for n, i in enumerate(IDS)
    ]


def kept(selection: RowSelection) -> list[str]:
    return [row.row_id for row in selection.apply(rows())]


def test_filter_keeps_ids_containing_any_substring_in_dataset_order():
    assert kept(RowSelection(include=("total", "refund"))) == ["ord-total", "refund"]
    assert kept(RowSelection(include=("ord",))) == ["ord-status-1", "ord-status-2", "ord-total"]


def test_exclude_drops_after_filter_and_alone_keeps_the_rest():
    both = RowSelection(include=("ord",), exclude=("total",))
    assert kept(both) == ["ord-status-1", "ord-status-2"]
    assert both.describe() == "row ids containing 'ord' but not 'total'"
    alone = RowSelection(exclude=("ord", "calc"))
    assert kept(alone) == ["refund"]
    assert alone.describe() == "row ids not containing 'ord' or 'calc'"


def test_a_selection_of_no_row_is_refused_with_the_ids_there_are():
    with pytest.raises(NoRowSelectedError) as refused:
        RowSelection(include=("missing",)).apply(rows())
    assert str(refused.value) == (
        "row ids containing 'missing' select no row; row ids: " + ", ".join(IDS)
    )
