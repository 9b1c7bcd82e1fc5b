"""Review items built by hand for the calibration tests: three runs, two metrics each."""

from n8n_deepeval_pipeline.calibration.review_items import (
    JudgeVerdict,
    MetricToLabel,
    ReviewItem,
    ToolCallShown,
)

HASH = "b" * 64


def item(
    row: str, index: int, output: str = "Your order shipped.\nIt arrives Friday."
) -> ReviewItem:
    run = f"{HASH}:{row}:{index}"
    return ReviewItem(
        run_id=run, case_id=f"{HASH}:{row}", row_id=row, run_index=index, workflow_hash=HASH,
        input=f"Where is order {row}?", output=output, expected_output="It shipped.",
        tool_calls=(ToolCallShown(tool="order_lookup", arguments={"id": row}, output="{}"),),
        metrics=tuple(
            MetricToLabel(metric=m, name=m, question=f"Is it {m}?", direction="higher_is_better",
                          threshold=0.5)
            for m in ("helpfulness", "bias")
        ),
        judge=tuple(
            JudgeVerdict(metric=m, score=0.8, threshold=0.5, direction="higher_is_better",
                         passed=True, reason="fine, \"quoted\"", judge="openai:gpt-4o-mini")
            for m in ("helpfulness", "bias")
        ),
    )  # fmt: skip


ITEMS = [item("A1", 0), item("A1", 1), item("A2", 0)]
