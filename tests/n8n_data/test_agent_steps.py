import json

import pytest

from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    AgentTool,
    StepsShapeError,
    called_tool_names,
    marked_mocked,
    parse_intermediate_steps,
    synthetic_trace,
    tool_calls,
)

LOOKUP = {
    "action": {
        "tool": "order_lookup",
        "toolInput": {"orderId": "A1"},
        "log": "Invoking: `order_lookup`",
        "toolCallId": "call_1",
        "messageLog": [{"lc": 1}],
    },
    "observation": '{"status":"shipped"}',
}
CALC = {"action": {"tool": "calculator", "toolInput": "2 * 89.5", "log": ""}, "observation": "179"}


def test_no_steps_recorded_is_none_and_an_empty_list_is_no_calls():
    assert parse_intermediate_steps(None) is None
    assert parse_intermediate_steps("") is None
    assert tool_calls(parse_intermediate_steps([])) == []


def test_one_step_with_object_input():
    (call,) = tool_calls(parse_intermediate_steps([LOOKUP]))
    assert call.name == "order_lookup"
    assert call.input_parameters == {"orderId": "A1"}
    assert call.output == '{"status":"shipped"}'
    assert call.reasoning == "Invoking: `order_lookup`"


def test_several_steps_with_string_inputs_json_text_and_unnamed_tool():
    steps = [CALC, {**CALC, "action": {"toolInput": '{"x": 1}'}}, LOOKUP]
    calls = tool_calls(parse_intermediate_steps(json.dumps(steps)))
    assert [c.name for c in calls] == ["calculator", "tool_2", "order_lookup"]
    assert calls[0].input_parameters == {"input": "2 * 89.5"}
    assert calls[1].input_parameters == {"x": 1}
    assert calls[0].reasoning is None


def test_snake_case_variant_is_accepted():
    (call,) = tool_calls(
        parse_intermediate_steps([{"action": {"tool": "t", "tool_input": {"a": 1}}}])
    )
    assert call.input_parameters == {"a": 1}


def test_synthetic_trace_has_an_llm_span_per_log_and_a_tool_span_per_call():
    trace = synthetic_trace(parse_intermediate_steps([LOOKUP, CALC]), "question", "answer")
    assert (trace["type"], trace["name"], trace["input"], trace["output"]) == (
        "agent",
        "n8n_ai_agent",
        "question",
        "answer",
    )
    assert [(s["type"], s["name"]) for s in trace["children"]] == [
        ("llm", "reasoning_1"),
        ("tool", "order_lookup"),
        ("tool", "calculator"),
    ]
    assert trace["children"][1]["input"] == {"orderId": "A1"}
    assert trace["children"][2]["output"] == "179"
    assert trace["tools_called"] == ["order_lookup", "calculator"]


@pytest.mark.parametrize("value", ["{not json", {"action": {}}, [1]])
def test_shapes_n8n_never_produces_are_refused(value):
    with pytest.raises(StepsShapeError):
        parse_intermediate_steps(value)


def test_actions_and_openai_tool_calls_are_read_as_steps():
    actions = [{"tool": "order_lookup", "input": {"orderId": "A1"}, "output": "shipped"}]
    (call,) = tool_calls(parse_intermediate_steps(actions))
    assert (call.name, call.input_parameters, call.output) == (
        "order_lookup",
        {"orderId": "A1"},
        "shipped",
    )
    openai = [
        {"id": "c1", "name": "calculator", "arguments": '{"expression": "6*7"}'},
        {"type": "function", "function": {"name": "lookup", "arguments": {"q": "x"}}},
    ]
    calls = tool_calls(parse_intermediate_steps(openai))
    assert [(c.name, c.input_parameters) for c in calls] == [
        ("calculator", {"expression": "6*7"}),
        ("lookup", {"q": "x"}),
    ]


TOOLS = [
    AgentTool(name="calculator", description="Does sums."),
    AgentTool(name="order_lookup", description="Finds an order by id."),
    AgentTool(name="send_email", description="Sends an e-mail."),
]


def test_trace_lists_every_tool_the_agent_had_with_its_definition_and_the_history():
    history = [{"role": "human", "content": "hi"}, {"role": "ai", "content": "hello"}]
    trace = synthetic_trace(
        parse_intermediate_steps([LOOKUP]), "where is A1?", "shipped", TOOLS, history
    )
    assert trace["available_tools"] == ["calculator", "order_lookup", "send_email"]
    assert trace["tools_called"] == ["order_lookup"]
    first = trace["children"][0]
    assert first["type"] == "llm"
    assert first["input"][:3] == [*history, {"role": "human", "content": "where is A1?"}]
    definitions = first["input"][3:]
    assert [m["role"] for m in definitions] == ["Tool Input"] * 3
    assert definitions[2]["content"] == str(
        {"type": "function", "function": {"name": "send_email", "description": "Sends an e-mail."}}
    )
    assert first["output"] == "Invoking: `order_lookup`"


def test_an_agent_that_called_no_tool_has_a_trace_without_tool_spans():
    trace = synthetic_trace(parse_intermediate_steps([]), "2+2?", "4", TOOLS)
    assert trace["tools_called"] == []
    assert trace["available_tools"] == ["calculator", "order_lookup", "send_email"]
    assert [(s["type"], s["output"]) for s in trace["children"]] == [("llm", "4")]


def test_without_the_workflow_only_the_called_tools_are_known():
    trace = synthetic_trace(parse_intermediate_steps([CALC, LOOKUP, CALC]), "q", "a")
    assert trace["available_tools"] == ["calculator", "order_lookup"]


def test_the_steps_of_mocked_tools_are_marked_and_still_scored():
    steps = [
        {"action": {"tool": "Order_Lookup", "toolInput": {"orderId": "17"}}, "observation": "ok"},
        {"action": {"tool": "Calculator", "toolInput": "6*7"}, "observation": "42"},
    ]
    marked = marked_mocked(steps, {"Order_Lookup"})
    assert [step.get("mocked") for step in marked or []] == [True, None]
    assert called_tool_names(marked) == ["Order_Lookup", "Calculator"]
    assert marked_mocked(None, {"Order_Lookup"}) is None  # no steps: nothing to mark
