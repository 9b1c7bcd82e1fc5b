"""The seed's options through the plan and a worker: n8n preset expressions, and Turn
Faithfulness's retrieval context from its config."""

import json

import pytest

from n8n_deepeval_pipeline import (
    CATALOG,
    AgentOutput,
    Benchmark,
    DatasetRow,
    EvaluationItem,
    ExpandedRun,
    JudgeSpec,
)
from n8n_deepeval_pipeline.tables.evaluation_plan import EvaluationPlan
from n8n_deepeval_pipeline.worker.test_case_builder import FIELD_SOURCES
from tests.conftest import evaluate_all, make_task
from tests.worker.prompt_recording_judge import PromptRecordingJudge

pytestmark = pytest.mark.slow

HASH = "c" * 64
PRESETS = [
    {
        "metric": "correctness",
        "actualAnswer": "={{ $json.result.answer }}",
        "expectedAnswer": "={{ $json.expected_output }}",
    },
    {
        "metric": "helpfulness",
        "userQuery": "=Customer asks: {{ $json['customer question'] }}",
        "actualAnswer": "={{ $json.result.answer + ' (' + $json.result.confidence + ')' }}",
    },
]


def recording_judge(tmp_path, server):
    return JudgeSpec(
        provider="openai-compatible",
        model="loopback-judge",
        base_url=server.base_url,
        cache=False,
        state_dir=str(tmp_path / "judge"),
    )


def preset_plan(judge: JudgeSpec) -> tuple[EvaluationPlan, list[ExpandedRun]]:
    benchmark = Benchmark.model_validate(
        {
            "name": "presets",
            "workflow": "workflow.json",
            "dataset": {"path": "rows.csv", "columnMapping": {}},
            "target": {"type": "recorded", "outputs": "outputs.jsonl"},
            "metrics": PRESETS,
        }
    )
    raw = {"id": "r1", "customer question": "What do two bags cost?", "expected_output": "179"}
    row = DatasetRow(workflow_hash=HASH, row_id="r1", position=1, raw=raw)
    runs = [
        ExpandedRun(
            workflow_hash=HASH,
            run_id=f"{HASH}:r1:{index}",
            case_id=f"{HASH}:r1",
            run_index=index,
            row_id="r1",
            run_name="presets",
        )
        for index in range(2)
    ]
    answers = [
        {"result": {"answer": "Two bags cost 179 dollars.", "confidence": 0.9}},
        {"reply": "179"},  # the workflow answered another shape on the second run
    ]
    outputs = [
        AgentOutput(workflow_hash=HASH, run_id=run.run_id, actual_output=json.dumps(answer))
        for run, answer in zip(runs, answers, strict=True)
    ]
    return EvaluationPlan(benchmark, runs, [row], outputs, judge, 60), runs


def test_preset_expressions_fill_what_the_judge_sees(dry_run_pool):
    plan, runs = preset_plan(JudgeSpec())
    correctness, helpfulness = plan.tasks  # the second run's answer has no result
    assert (correctness.item.actual_output, correctness.item.expected_output) == (
        "Two bags cost 179 dollars.",
        "179",
    )
    assert helpfulness.item.input == "Customer asks: What do two bags cost?"
    assert helpfulness.item.actual_output == "Two bags cost 179 dollars. (0.9)"
    results = evaluate_all(dry_run_pool, plan.tasks)
    for result in results:
        assert result.error is None, result.error
        assert result.score in {0.2, 0.4, 0.6, 0.8, 1.0} and result.judge_calls > 0
    rows = [plan.row_for(result) for result in results]
    assert [(r.run_id, r.metric, r.dry_run) for r in rows] == [
        (runs[0].run_id, "correctness", True),
        (runs[0].run_id, "helpfulness", True),
    ]


def test_an_expression_that_finds_nothing_is_a_missing_input_row_naming_it():
    plan, runs = preset_plan(JudgeSpec())
    assert plan.total == 4
    missing = plan.rows_without_output()
    assert [(r.run_id, r.metric, r.error_kind, r.success) for r in missing] == [
        (runs[1].run_id, "correctness", "missing_input", False),
        (runs[1].run_id, "helpfulness", "missing_input", False),
    ]
    assert missing[0].error.startswith(
        "missing input: actualAnswer '={{ $json.result.answer }}' found nothing in this "
        "run's item ($json.result.answer is absent or null; the item's fields: "
    )
    assert "reply" in missing[0].error and "evalContext" in missing[0].error
    assert "$json.result.answer is absent" in missing[1].error


def test_the_judge_prompt_holds_the_evaluated_expressions(dry_run_pool, tmp_path):
    server = PromptRecordingJudge().start()
    try:
        plan, _ = preset_plan(recording_judge(tmp_path, server))
        results = evaluate_all(dry_run_pool, plan.tasks)
    finally:
        server.stop()
    assert [result.error for result in results] == [None, None]
    prompts = "\n".join(server.prompts)
    assert "Answer: Two bags cost 179 dollars.\n\nReference answer: 179" in prompts
    assert (
        "Request: Customer asks: What do two bags cost?\n\n"
        "Response: Two bags cost 179 dollars. (0.9)"
    ) in prompts


CONTEXT = "Order A3301: 2 sleeping bags at 89.50 each."
NO_CONTEXT = EvaluationItem(
    input="What is the total for the two bags?",
    actual_output="The two sleeping bags cost 179 dollars in total.",
    turns=[
        {"role": "user", "content": "What is the total for the two bags?"},
        {"role": "assistant", "content": "The two sleeping bags cost 179 dollars in total."},
    ],
)


def test_turn_faithfulness_reads_the_retrieval_context_of_its_config(dry_run_pool, tmp_path):
    entry = CATALOG["turn_faithfulness"]
    with_context = entry.config_model.model_validate(
        {"metric": "turn_faithfulness", "retrievalContext": [CONTEXT]}
    )
    bare = entry.config_model.model_validate({"metric": "turn_faithfulness"})
    server = PromptRecordingJudge().start()
    judge = recording_judge(tmp_path, server)
    try:
        judged, missing = evaluate_all(
            dry_run_pool,
            [
                make_task(with_context.model_dump(), NO_CONTEXT, 0, judge=judge),
                make_task(bare.model_dump(), NO_CONTEXT, 1, judge=judge),
            ],
        )
    finally:
        server.stop()
    assert judged.error is None, judged.error
    assert 0.0 <= judged.score <= 1.0 and judged.judge_calls > 0
    assert any(CONTEXT in prompt for prompt in server.prompts)
    assert missing.error_kind == "missing_input"
    assert FIELD_SOURCES["turn_retrieval_context"] in missing.error
    assert "the metric's retrievalContext" in missing.error


def test_a_turns_own_retrieval_context_wins_over_the_config(dry_run_pool, tmp_path):
    own = "Memory says: the bags are 89.50 each."
    item = NO_CONTEXT.model_copy(
        update={
            "turns": [
                NO_CONTEXT.turns[0],
                {**NO_CONTEXT.turns[1], "retrievalContext": [own]},
            ]
        }
    )
    config = CATALOG["turn_faithfulness"].config_model.model_validate(
        {"metric": "turn_faithfulness", "retrievalContext": [CONTEXT]}
    )
    server = PromptRecordingJudge().start()
    try:
        (result,) = evaluate_all(
            dry_run_pool,
            [make_task(config.model_dump(), item, judge=recording_judge(tmp_path, server))],
        )
    finally:
        server.stop()
    assert result.error is None, result.error
    prompts = "\n".join(server.prompts)
    assert own in prompts and CONTEXT not in prompts
