"""The split of rows, the objectives DeepEval is told of, and the budget's one check."""

import pytest

from n8n_deepeval_pipeline.optimization.spend import Budget, BudgetReached, Spend, SpendLedger
from n8n_deepeval_pipeline.optimization.workflow_search import SplitError, split_rows
from n8n_deepeval_pipeline.tables.rows import DatasetRow


def rows(count: int) -> list[DatasetRow]:
    return [DatasetRow(workflow_hash="h", row_id=f"r{n}", position=n, raw={})
            for n in range(1, count + 1)]  # fmt: skip


def test_the_split_depends_on_the_seed_and_the_ids_not_the_order():
    split = split_rows(rows(10), 0.3, seed=7)
    assert len(split.held_out) == 3 and len(split.training) == 7
    again = split_rows(list(reversed(rows(10))), 0.3, seed=7)
    assert {r.row_id for r in again.held_out} == {r.row_id for r in split.held_out}
    other = split_rows(rows(10), 0.3, seed=8)
    assert {r.row_id for r in other.held_out} != {r.row_id for r in split.held_out}
    # At least one held out, at least two to search on.
    assert len(split_rows(rows(3), 0.9, seed=1).training) == 2
    assert len(split_rows(rows(3), 0.01, seed=1).held_out) == 1
    with pytest.raises(SplitError, match="at least 3"):
        split_rows(rows(2), 0.3, seed=1)


def test_a_budget_counts_both_sides_and_reserving_never_goes_over():
    ledger = SpendLedger(Budget(answer_calls=2, judge_calls=5, cost_usd=0.01))
    ledger.reserve("answer", Spend(answer_calls=1))
    ledger.reserve("answer", Spend(answer_calls=1))
    with pytest.raises(BudgetReached, match="workflow calls: 2 of 2"):
        ledger.reserve("answer", Spend(answer_calls=1))
    assert ledger.own.answer_calls == 2
    ledger.told(Spend(judge_calls=5))  # the optimiser's own model calls
    with pytest.raises(BudgetReached, match="judge calls: 5 of 5"):
        ledger.admit("judge")
    ledger.told(Spend(judge_calls=1, cost_usd=0.02))
    with pytest.raises(BudgetReached, match=r"cost: \$0.0200 of \$0.0100"):
        ledger.admit("judge")


def test_objectives_carry_deepevals_class_names_and_a_higher_is_better_threshold(tmp_path):
    from n8n_deepeval_pipeline import load_benchmark
    from n8n_deepeval_pipeline.optimization.workflow_search import objectives
    from tests.benchmark.test_config import with_changes, write

    target = {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format"}
    metrics = [{"metric": "toxicity", "threshold": 0.2}, {"metric": "pattern_match",
               "pattern": "ok"}, {"metric": "g_eval", "name": "Tone", "criteria": "Polite?",
               "evaluationParams": ["ACTUAL_OUTPUT"]}]  # fmt: skip
    benchmark = load_benchmark(write(tmp_path, with_changes(target=target, metrics=metrics)))
    found = [(o.label, o.name, o.threshold) for o in objectives(benchmark)]
    # Toxicity passes at or below 0.2: the optimiser sees 1 − score, passing at 0.8 or more.
    assert found == [
        ("toxicity", "ToxicityMetric", pytest.approx(0.8)),
        ("pattern_match", "PatternMatchMetric", 1.0),
        ("Tone", "GEval", 0.5),
    ]
