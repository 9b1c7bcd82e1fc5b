"""A simulated conversation as the run's output, and the golden each run plays."""

import pytest

from n8n_deepeval_pipeline.judging.schema_filler import fill_schema
from n8n_deepeval_pipeline.simulation.conversation import (
    SimulatedConversation,
    SimulatedTurn,
    conversation_session,
)
from n8n_deepeval_pipeline.simulation.golden import GoldenError, golden_runs
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.tables.steps import expanded_runs

HASH = "c" * 64
SUM = {"action": {"tool": "Calculator", "toolInput": {"input": "6*7"}}, "observation": "42"}


def conversation(**changes):
    turns = [
        SimulatedTurn(role="user", content="Hi", opening=True),
        SimulatedTurn(role="assistant", content="Hello!", opening=True),
        SimulatedTurn(role="user", content="What is 6*7?"),
        SimulatedTurn(role="assistant", content="42.", intermediate_steps=[SUM], latency_s=0.5),
        SimulatedTurn(role="user", content="Thanks"),
        SimulatedTurn(role="assistant", content="Bye.", latency_s=0.25),
    ]
    values = {
        "run_id": f"{HASH}:g1:0",
        "session_id": f"{HASH}:g1:0:thread",
        "turns": turns,
        "stop_reason": "outcome_reached",
        "latency_s": 3.21,
        "judge_calls": 4,
        "cached_calls": 1,
        "prompt_tokens": 900,
        "completion_tokens": 100,
    }
    return SimulatedConversation(**{**values, **changes})


def test_the_conversation_is_the_runs_output():
    output = conversation().agent_output(HASH, "openai:gpt-4.1", 5, 0.0123)
    assert output.actual_output == "Bye."
    assert output.intermediate_steps == [SUM]  # every known step, in order
    assert output.turns[0] == {"role": "user", "content": "Hi", "opening": True}
    assert output.turns[3] == {"role": "assistant", "content": "42.",
                               "intermediateSteps": [SUM], "latencyS": 0.5}  # fmt: skip
    assert (output.stop_reason, output.session_id, output.error) == (
        "outcome_reached", f"{HASH}:g1:0:thread", None
    )  # fmt: skip
    assert output.simulation == {
        "judge": "openai:gpt-4.1", "userTurns": 2, "maxUserTurns": 5, "judgeCalls": 4,
        "cachedCalls": 1, "judgeRetries": 0, "promptTokens": 900, "completionTokens": 100,
        "costUsd": 0.0123,
    }  # fmt: skip


def test_a_failed_turn_makes_the_run_a_target_error_that_keeps_the_turns_so_far():
    failed = conversation(
        turns=conversation().turns[:5],
        stop_reason="target_error",
        error="HTTP 500: the agent failed",
        error_kind="target_error",
    )
    output = failed.agent_output(HASH, "dry-run", 5, None)
    assert (output.error_kind, output.error) == (
        "target_error", "target_error: HTTP 500: the agent failed"
    )  # fmt: skip
    assert output.actual_output is None and output.turns[-1]["content"] == "Thanks"


def test_answers_without_steps_get_their_executions_in_order():
    stepless = conversation(
        turns=[
            turn.model_copy(update={"intermediate_steps": None}) for turn in conversation().turns
        ]
    )
    filled = stepless.with_execution_steps([[SUM], [], [SUM]])  # a third, failed call
    assert [turn.intermediate_steps for turn in filled.answers()] == [[SUM], []]
    assert filled.turns[1].intermediate_steps is None  # an opening turn called nothing
    # steps an answer carried are kept
    kept = conversation().with_execution_steps([[], [SUM]])
    assert [turn.intermediate_steps for turn in kept.answers()] == [[SUM], [SUM]]


def test_every_conversation_has_a_session_of_its_own():
    sessions = {conversation_session(f"{HASH}:g1:{i}", f"t{j}") for i in (0, 1) for j in (0, 1)}
    assert len(sessions) == 4


def test_each_run_plays_its_rows_golden_and_a_row_without_scenario_is_refused():
    rows = [
        DatasetRow(workflow_hash=HASH, row_id="g1", position=1, scenario="Asks 6*7", raw={},
                   turns='[{"type": "human", "data": {"content": "Hi"}}]'),
        DatasetRow(workflow_hash=HASH, row_id="g2", position=2, scenario="Asks the weather",
                   raw={}),
    ]  # fmt: skip
    goldens = golden_runs(expanded_runs(rows, 2, "sim"), rows)
    assert [golden.run_id[-4:] for golden in goldens] == ["g1:0", "g1:1", "g2:0", "g2:1"]
    assert [(turn.role, turn.content) for turn in goldens[0].opening] == [("user", "Hi")]
    assert goldens[2].opening == []
    blank = rows[1].model_copy(update={"scenario": " "})
    with pytest.raises(GoldenError, match=r"row 2 \(id 'g2'\): a conversational golden needs"):
        golden_runs(expanded_runs([blank], 1, "sim"), [blank])
    odd = rows[1].model_copy(update={"turns": [{"speaker": "bot"}]})
    with pytest.raises(GoldenError, match=r"row 2 \(id 'g2'\): the opening turns cannot be read"):
        golden_runs(expanded_runs([odd], 1, "sim"), [odd])


SIMULATED_INPUT = {
    "properties": {"simulated_input": {"type": "string"}},
    "required": ["simulated_input"],
    "type": "object",
}


def test_a_dry_simulated_user_follows_its_scenario_and_the_last_answer():
    # The two prompts of DeepEval's SimulationTemplate, cut to the lines that matter.
    first = 'Example Scenario: "A sick person."\nScenario: "Asks what 6*7 is"\nJSON Output:'
    assert fill_schema(SIMULATED_INPUT, b"seed", first) == {
        "simulated_input": "[dry-run] user turn 1: Asks what 6*7 is"
    }
    later = (
        'Example Scenario: "A user seeking tips."\nExample Previous Conversation:\n'
        '[{"role": "user", "content": "Hi"}]\n'
        'Scenario: "Asks what 6*7 is"\nPrevious Conversation:\n'
        '[\n    {\n        "role": "user",\n        "content": "What is 6*7?"\n    },\n'
        '    {\n        "role": "assistant",\n        "content": "The answer is 42, as the '
        'Calculator says."\n    }\n]\n\nJSON Output:'
    )
    assert fill_schema(SIMULATED_INPUT, b"seed", later) == {
        "simulated_input": "[dry-run] user turn 2: Asks what 6*7 is "
        "(after: The answer is 42, as the Calculator says)"  # 40 characters
    }
