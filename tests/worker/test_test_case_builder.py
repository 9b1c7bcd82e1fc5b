"""The test cases the builder makes from n8n-shaped items: an empty context list is kept
(and judged), an absent one is missing; a run without chat history is one exchange."""

import pytest

from n8n_deepeval_pipeline import CATALOG
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.worker.test_case_builder import MissingInputError, build_test_case
from tests.worker.test_metric_runs import ITEM, config_for

NO_HISTORY = ITEM.model_copy(update={"turns": None})


def build(slug, item):
    return build_test_case(CATALOG[slug], config_for(slug), item)


def test_a_run_without_history_becomes_its_input_and_output_as_two_turns():
    conversation = build("turn_relevancy", NO_HISTORY)
    assert [(turn.role, turn.content) for turn in conversation.turns] == [
        ("user", ITEM.input),
        ("assistant", ITEM.actual_output),
    ]
    user, assistant = conversation.turns
    assert (user.retrieval_context, user.tools_called) == (None, None)
    assert assistant.retrieval_context == ITEM.retrieval_context
    assert [call.name for call in assistant.tools_called] == ["order_lookup", "calculator"]
    assert conversation.scenario == ITEM.scenario


def test_recorded_history_still_wins_over_the_run_exchange():
    conversation = build("turn_relevancy", ITEM)
    assert len(conversation.turns) == 4
    assert conversation.turns[0].content == "Hi, I ordered sleeping bags, order A3301."


def test_no_history_and_no_input_leaves_the_turns_missing():
    with pytest.raises(MissingInputError) as caught:
        build("turn_relevancy", NO_HISTORY.model_copy(update={"input": None}))
    assert caught.value.fields == ["turns"]


@pytest.mark.parametrize(
    ("slug", "field"),
    [("citation_faithfulness", "retrieval_context"), ("hallucination", "context")],
)
def test_an_empty_context_list_is_kept_and_an_absent_one_is_missing(slug, field):
    assert getattr(build(slug, ITEM.model_copy(update={field: []})), field) == []
    with pytest.raises(MissingInputError) as caught:
        build(slug, ITEM.model_copy(update={field: None}))
    assert caught.value.fields == [field]


def test_an_agent_that_called_no_tool_is_judged_on_a_trace_and_absent_steps_are_missing():
    tools = [AgentTool(name="order_lookup", description="Finds orders."), AgentTool(name="refund")]
    no_calls = ITEM.model_copy(update={"intermediate_steps": [], "available_tools": tools})
    case = build("task_completion", no_calls)
    assert case._trace_dict["tools_called"] == []
    assert case._trace_dict["available_tools"] == ["order_lookup", "refund"]
    assert [span["type"] for span in case._trace_dict["children"]] == ["llm"]
    with pytest.raises(MissingInputError) as caught:
        build("task_completion", ITEM.model_copy(update={"intermediate_steps": None}))
    assert caught.value.fields == ["trace"]


def test_the_trace_carries_the_sessions_earlier_messages_before_this_run():
    case = build("task_completion", ITEM)
    messages = case._trace_dict["children"][0]["input"]
    # The memory's last answer is this run's output: it is the run, not its history.
    assert [m["role"] for m in messages] == ["human", "ai", "human", "human"] + ["Tool Input"] * 2
    assert messages[0] == {"role": "human", "content": "Hi, I ordered sleeping bags, order A3301."}
    assert messages[3] == {"role": "human", "content": ITEM.input}


def test_a_simulated_conversation_gives_each_turn_the_tools_it_called():
    step = {"action": {"tool": "Calculator", "toolInput": {"input": "6*7"}, "log": "calc"},
            "observation": '[{"response":"42"}]'}  # fmt: skip
    turns = [
        {"role": "user", "content": "What is 6*7?"},
        {"role": "assistant", "content": "42.", "intermediateSteps": [step]},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "Bye.", "intermediateSteps": []},
    ]
    item = NO_HISTORY.model_copy(
        update={"turns": turns, "intermediate_steps": [step], "actual_output": "Bye."}
    )
    conversation = build("tool_use", item)
    tools = [[call.name for call in turn.tools_called or []] for turn in conversation.turns]
    assert tools == [[], ["Calculator"], [], []]
    (call,) = conversation.turns[1].tools_called
    assert (call.input_parameters, call.output) == ({"input": "6*7"}, '[{"response":"42"}]')
