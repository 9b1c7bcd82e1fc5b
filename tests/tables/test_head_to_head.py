"""Head-to-head metrics in the plan: each run beside its opponent's, positions swapped."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.benchmark.config import parse_benchmark
from n8n_deepeval_pipeline.tables import steps
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan
from n8n_deepeval_pipeline.tables.head_to_head import family_of
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, WorkflowSnapshot

BASE, FAST, TERSE, OTHER = "b" * 64, "f" * 64, "e" * 64, "0" * 64
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def snapshot(digest, base=None, variant=None, minutes=0):
    return WorkflowSnapshot(
        workflow_hash=digest, workflow_id="w1", name="agent", node_count=3, source="n8n",
        fetched_at=NOW + timedelta(minutes=minutes), canonical_json="{}", variant=variant,
        base_hash=base,
    )  # fmt: skip


SNAPSHOTS = [
    snapshot(OTHER),  # an earlier edit of the workflow: not of this family
    snapshot(BASE, minutes=1),
    snapshot(FAST, BASE, "fast", minutes=2),
    snapshot(TERSE, BASE, "terse", minutes=3),
]


def outputs(digest, runs_per_row=2, **errors):
    return [
        AgentOutput(
            workflow_hash=digest,
            run_id=f"{digest}:{row}:{index}",
            actual_output=f"{digest[0]} answers {row} #{index}",
            intermediate_steps=[],
            error=errors.get(f"{row}{index}"),
        )
        for row in ("r1", "r2")
        for index in range(runs_per_row)
    ]


def benchmark(against="base"):
    document = {
        "name": "demo",
        "workflow": {"id": "w1"},
        "dataset": {"path": "rows.csv"},
        "runsPerRow": 2,
        "target": {
            "type": "n8n_workflow",
            "startNodeName": "AI Agent",
            "endNodeName": "AI Agent",
            "variants": {"fast": {"M": {"model": "x"}}, "terse": {"M": {"model": "y"}}},
        },
        "metrics": [
            {"metric": "exact_match"},
            {"metric": "arena_g_eval", "name": "helpful", "criteria": "Which helps more?",
             "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"], "against": against},
        ],
    }  # fmt: skip
    return parse_benchmark(document, Path("/tmp/demo.yaml"))


def plan_for(digest, against="base", every=None):
    rows = [
        DatasetRow(workflow_hash=digest, row_id=row_id, position=1, raw={}, input="q")
        for row_id in ("r1", "r2")
    ]
    runs = steps.expanded_runs(rows, 2, "demo")
    every = every if every is not None else outputs(BASE) + outputs(FAST) + outputs(TERSE)
    family = family_of(digest[:12], SNAPSHOTS, every)
    own = [output for output in every if output.workflow_hash == digest] or outputs(digest)
    return EvaluationPlan(benchmark(against), runs, rows, own, JudgeSpec(), 30, family=family)


def test_a_variants_runs_are_set_beside_the_bases_with_positions_swapped_on_odd_runs():
    plan = plan_for(FAST)
    arena = [task for task in plan.tasks if task.metric_label == "helpful"]
    assert len(arena) == 4 and plan.total == 8  # exact_match and helpful for each run
    for task in arena:
        sides = task.item.head_to_head
        index = int(task.run_id.rsplit(":", 1)[1])
        row = task.run_id.split(":")[1]
        assert (sides.name, sides.opponent) == ("fast", "base")
        assert task.item.actual_output == f"f answers {row} #{index}"
        assert sides.opponent_output == f"b answers {row} #{index}"  # same row, same index
        assert sides.opponent_first is (index % 2 == 1)
    # a different opponent output is different work: another fingerprint
    assert len({task.fingerprint() for task in arena}) == 4


def test_the_opponent_itself_has_no_head_to_head_rows():
    plan = plan_for(BASE)
    assert {task.metric_label for task in plan.tasks} == {"exact_match"}
    assert plan.total == 4  # every_run_scored counts the planned rows only
    between_variants = plan_for(BASE, against="terse")
    assert {
        t.item.head_to_head.opponent for t in between_variants.tasks if t.item.head_to_head
    } == {"terse"}


def test_an_opponent_without_an_output_gives_a_missing_input_row_naming_it():
    failed = outputs(BASE, **{"r21": "HTTP 500"})  # the base's run 1 of r2 failed
    plan = plan_for(FAST, every=failed[:1] + failed[3:] + outputs(FAST))  # r1 #1 never ran
    rows = {row.run_id.split(":", 1)[1]: row for row in plan.rows_without_output()}
    assert rows.keys() == {"r1:1", "r2:0", "r2:1"}
    assert {row.error_kind for row in rows.values()} == {"missing_input"}
    assert rows["r2:1"].error == "base's run 1 of row 'r2' failed: HTTP 500"
    assert rows["r1:1"].error == "base has no run 1 of row 'r1'"
    nothing = plan_for(FAST, every=outputs(FAST))  # the base was never run
    errors = {row.error for row in nothing.rows_without_output()}
    assert errors == {
        "no stored outputs of base for this workflow: run it, then score this version again"
    }
    assert len(nothing.rows_without_output()) == 4


def test_the_family_is_found_from_the_snapshots_and_the_latest_name_wins():
    renamed = [*SNAPSHOTS, snapshot("c" * 64, BASE, "fast", minutes=9)]  # fast redefined
    every = outputs(BASE) + outputs(FAST) + outputs("c" * 64)
    family = family_of(TERSE, renamed, every)
    assert family.own == "terse"
    assert sorted(family.outputs) == ["base", "fast"]  # terse's own outputs are not stored
    assert family.outputs["fast"][("r1", 0)].workflow_hash == "c" * 64
    other = family_of(OTHER, SNAPSHOTS, every)  # an earlier edit is a family of its own
    assert (other.own, other.outputs) == ("base", {})


@pytest.mark.parametrize("run_id", ["abc:row:with:colons:3"])
def test_run_ids_are_read_back_into_row_and_index(run_id):
    from n8n_deepeval_pipeline.tables.ids import row_of_run, run_index_of

    assert (row_of_run(run_id), run_index_of(run_id)) == ("row:with:colons", 3)
