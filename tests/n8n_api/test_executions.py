"""Steps read back from n8n executions (the shape of GET /executions?includeData=true)."""

from n8n_deepeval_pipeline.n8n_api.executions import (
    execution_steps,
    executions_of,
    model_calls_by_session,
    steps_by_execution,
    steps_by_session,
)

STEPS = [{"action": {"tool": "calculator", "toolInput": {"input": "6*7"}}, "observation": "42"}]


def execution(session, agent_json):
    def node(json):
        return [{"data": {"main": [[{"json": json}]]}}]

    return {
        "id": "17",
        "data": {
            "resultData": {
                "runData": {
                    "Webhook": node({"headers": {}, "body": {"sessionId": session, "input": "x"}}),
                    "AI Agent": node(agent_json),
                    "Format": node({"text": "done"}),
                }
            }
        },
    }


def test_steps_are_found_by_the_session_the_pipeline_sent():
    executions = [
        execution("h:r1:0", {"output": "42", "intermediateSteps": STEPS}),
        execution("h:r1:1", {"output": "no tools", "intermediateSteps": []}),
        execution("h:r2:0", {"output": "steps off"}),  # Return Intermediate Steps off
        {"id": "18", "data": None},  # an execution n8n stored without data
    ]
    assert steps_by_session(executions) == {"h:r1:0": STEPS, "h:r1:1": []}


def tool_run(index, tool_input, items):
    return {"executionIndex": index, "inputOverride": {"ai_tool": [[{"json": tool_input}]]},
            "data": {"ai_tool": [[{"json": item} for item in items]]}}  # fmt: skip


def model_run(index):
    return {"executionIndex": index, "data": {"ai_languageModel": [[{"json": {"response": {}}}]]}}


def test_with_intermediate_steps_off_the_tool_sub_nodes_runs_are_the_steps():
    # The shape n8n 2.41 stores: Return Intermediate Steps off, two calls of two tools.
    stepless = execution("h:r3:0", {"output": "The answer is Order 17 shipped."})
    run_data = stepless["data"]["resultData"]["runData"]
    run_data["OpenAI Chat Model"] = [model_run(1), model_run(4)]
    run_data["Order Lookup"] = [tool_run(3, {"orderId": "17"}, [{"status": "shipped"}])]
    run_data["Calculator"] = [tool_run(2, {"input": "6*7"}, [{"response": "42"}])]
    no_tool = execution("h:r4:0", {"output": "Hello"})
    no_tool["data"]["resultData"]["runData"]["OpenAI Chat Model"] = [model_run(1)]
    assert steps_by_session([stepless, no_tool]) == {
        "h:r3:0": [
            {"action": {"tool": "Calculator", "toolInput": {"input": "6*7"}},
             "observation": '[{"response":"42"}]'},
            {"action": {"tool": "Order_Lookup", "toolInput": {"orderId": "17"}},
             "observation": '[{"status":"shipped"}]'},
        ],
        "h:r4:0": [],  # the model ran and called no tool
    }  # fmt: skip


def test_a_session_of_several_messages_has_the_steps_of_all_its_executions_in_order():
    # n8n lists the newest execution first: the ticket was opened by the first message.
    thanks = {**execution("h:r5:0", {"output": "You're welcome", "intermediateSteps": []})}
    ticket_steps = [{"action": {"tool": "Open_Ticket", "toolInput": {"printer": 12}},
                     "observation": '[{"ticket":"T-1"}]'}]  # fmt: skip
    ticket = execution("h:r5:0", {"output": "Opened T-1", "intermediateSteps": ticket_steps})
    thanks["id"], ticket["id"] = "31", "30"
    sum_steps = execution("h:r5:0", {"output": "42", "intermediateSteps": STEPS})
    sum_steps["id"] = "32"
    assert steps_by_session([sum_steps, thanks, ticket]) == {"h:r5:0": ticket_steps + STEPS}


def model_call_run(usage_key, prompt, completion):
    usage = {"promptTokens": prompt, "completionTokens": completion,
             "totalTokens": prompt + completion}  # fmt: skip
    answer = {"response": {"generations": [[{"text": "42"}]]}, usage_key: usage}
    return {"data": {"ai_languageModel": [[{"json": answer}]]}}


def test_model_calls_are_read_per_call_as_reported_else_as_n8n_estimated_them():
    with_models = execution("h:r1:0", {"output": "42"})
    run_data = with_models["data"]["resultData"]["runData"]
    # Two calls of one model node (a tool call, then the answer), one of another.
    run_data["OpenAI Chat Model"] = [
        model_call_run("tokenUsage", 80, 12),
        model_call_run("tokenUsage", 120, 9),
    ]
    run_data["Ollama Model"] = [model_call_run("tokenUsageEstimate", 40, 5)]
    run_data["Broken Model"] = [{"data": {"ai_languageModel": [[{"json": {"tokenUsage": {}}}]]}}]
    calls = model_calls_by_session([with_models, execution("h:r2:0", {"output": "none"})])
    assert [call.model_dump() for call in calls["h:r1:0"]] == [
        {
            "node": "OpenAI Chat Model",
            "prompt_tokens": 80,
            "completion_tokens": 12,
            "estimated": False,
        },
        {
            "node": "OpenAI Chat Model",
            "prompt_tokens": 120,
            "completion_tokens": 9,
            "estimated": False,
        },
        {"node": "Ollama Model", "prompt_tokens": 40, "completion_tokens": 5, "estimated": True},
    ]
    assert calls["h:r2:0"] == []


def test_a_session_s_executions_are_found_one_per_message_in_the_order_they_ran():
    # The red team reads the steps of a session's nth message, one execution each.
    second = execution("red-team-a001", {"output": "Done", "intermediateSteps": STEPS})
    first = execution("red-team-a001", {"output": "Hello", "intermediateSteps": []})
    other = execution("red-team-a002", {"output": "Hi", "intermediateSteps": []})
    first["id"], second["id"], other["id"] = "40", "41", "42"
    found = executions_of([other, second, first], "red-team-a001")  # newest first, as listed
    assert [e["id"] for e in found] == ["40", "41"]
    assert [execution_steps(e) for e in found] == [[], STEPS]
    assert executions_of([other], "red-team-a003") == []


def test_a_simulated_conversations_turns_each_get_their_own_executions_steps():
    thanks = execution("h:r6:0:thread", {"output": "You're welcome", "intermediateSteps": []})
    sums = execution("h:r6:0:thread", {"output": "42", "intermediateSteps": STEPS})
    other = execution("h:r6:1:thread", {"output": "Hi", "intermediateSteps": []})
    sums["id"], thanks["id"], other["id"] = "40", "41", "42"
    assert steps_by_execution([other, thanks, sums]) == {
        "h:r6:0:thread": [STEPS, []],  # the first message's execution first
        "h:r6:1:thread": [[]],
    }


def test_an_mcp_client_tools_run_is_the_step_of_the_tool_the_agent_named():
    # n8n 2.41: the node's input names the tool it was called as (``<node>_<tool>``).
    stepless = execution("h:r5:0", {"output": "Sunny."})
    run_data = stepless["data"]["resultData"]["runData"]
    run_data["OpenAI Chat Model"] = [model_run(1)]
    called = {"city": "75", "tool": "Weather_MCP_get_weather"}
    answered = [{"response": [{"type": "text", "text": "Sunny"}],
                 "structuredContent": {"result": "Sunny"}}]  # fmt: skip
    run_data["Weather MCP"] = [tool_run(2, called, answered)]
    assert steps_by_session([stepless])["h:r5:0"] == [
        {"action": {"tool": "Weather_MCP_get_weather", "toolInput": called},
         "observation": '[{"response":[{"type":"text","text":"Sunny"}],'
                        '"structuredContent":{"result":"Sunny"}}]'}
    ]  # fmt: skip
