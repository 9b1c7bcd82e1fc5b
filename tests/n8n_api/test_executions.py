"""Steps read back from n8n executions (the shape of GET /executions?includeData=true)."""

from n8n_deepeval_pipeline.n8n_api.executions import steps_by_session

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
