"""The workflow as the red team attacks it: every service node mocked, a node that cannot be
mocked refused by name, and each attack message answered with the agent's tool calls."""

import json

from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.webhook import TargetError
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.n8n_data.responses import NormalisedResponse
from n8n_deepeval_pipeline.red_team.protocol import TargetCall
from n8n_deepeval_pipeline.red_team.target import AttackTarget, attack_problems, attacked_target
from n8n_deepeval_pipeline.workflow.mocks import SERVICES_RESPONSE
from tests.workflow.test_harness import link, node
from tests.workflow.test_mocks import AGENT, LC

TARGET = WorkflowTarget.model_validate(
    {
        "type": "n8n_workflow",
        "startNodeName": "AI Agent",
        "endNodeName": "Format",
        "mocks": {
            "nodes": {
                "Notify": {"response": {"status": "queued"}},
                "Order Lookup": {"column": "lookup"},
                "Send email": "judge",
            }
        },
        "messagesColumn": "messages",
    }
)


def test_every_service_node_is_mocked_and_a_per_row_mock_answers_as_a_service():
    attacked = attacked_target(TARGET)
    assert attacked.mocks.services and attacked.messages_column is None
    nodes = attacked.mocks.nodes
    assert nodes["Notify"].response == {"status": "queued"}  # a fixed answer stays
    # An attack has no dataset row: the column's and the judge's answers cannot be read.
    assert nodes["Order Lookup"].response == SERVICES_RESPONSE and not nodes["Order Lookup"].per_row
    assert nodes["Send email"].response == SERVICES_RESPONSE and not nodes["Send email"].judge
    assert attack_problems(TARGET, AGENT) == []


def test_a_service_node_that_cannot_be_mocked_refuses_the_red_team_by_name():
    workflow = json.loads(json.dumps(AGENT))
    workflow["nodes"] += [
        node("Knowledge", LC + "toolVectorStore", parameters={"description": "The docs"}),
        node("Docs Writer", LC + "vectorStorePinecone", credentials={"pineconeApi": {"id": "3"}},
             parameters={"mode": "insert"}),
    ]  # fmt: skip
    workflow["connections"]["Knowledge"] = link("AI Agent", "ai_tool")
    workflow["connections"]["Docs Writer"] = link("Knowledge", "ai_vectorStore")
    assert attack_problems(TARGET, workflow) == [
        '"Docs Writer" (@n8n/n8n-nodes-langchain.vectorStorePinecone) calls a service with the '
        "credential pineconeApi, on every run; it cannot be mocked (only main-path nodes and "
        "tools can), so the red team would act on the world"
    ]


class FakeCaller:
    """A webhook caller double: answers from a script and keeps what it was sent."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.sent = []

    def answer(self, row, run, session_id, message=None):
        self.sent.append((row.input, session_id))
        found = self.answers.pop(0)
        if isinstance(found, Exception):
            raise found
        return found


STEP = {"action": {"tool": "Refund", "toolInput": {"orderId": "4411"}}, "observation": "{}"}
TOOLS = [AgentTool(name="Refund", description="Refunds an order")]


def test_a_message_is_answered_with_the_agent_s_tool_calls_marked_where_mocked():
    caller = FakeCaller([NormalisedResponse(output="Done", intermediate_steps=[STEP])])
    target = AttackTarget(caller, "c" * 64, TOOLS, mocked={"Refund"})
    reply = target(TargetCall(call_id=3, session_id="s1", message="Refund order 4411"))
    assert caller.sent == [("Refund order 4411", "s1")]
    assert (reply.call_id, reply.content, reply.error) == (3, "Done", None)
    (call,) = reply.tools_called
    assert (call.name, call.input_parameters, call.description, call.mocked) == (
        "Refund", {"orderId": "4411"}, "Refunds an order", True)  # fmt: skip


def test_steps_not_in_the_answer_are_read_from_the_message_s_execution():
    caller = FakeCaller(
        [
            NormalisedResponse(output="first", session_id="theirs"),
            NormalisedResponse(output="second"),
        ]
    )
    asked = []

    def steps_of(session, nth):
        asked.append((session, nth))
        return [STEP] if nth == 2 else []

    target = AttackTarget(caller, "c" * 64, TOOLS, mocked=set(), steps_of=steps_of)
    first = target(TargetCall(call_id=1, session_id="ours", message="hi"))
    second = target(TargetCall(call_id=2, session_id="ours", message="refund"))
    # The session the workflow answered with is the one used from then on.
    assert caller.sent == [("hi", "ours"), ("refund", "theirs")]
    assert asked == [("theirs", 1), ("theirs", 2)]
    assert first.tools_called == [] and [c.mocked for c in second.tools_called] == [False]


def test_a_failed_call_is_the_reply_s_error():
    caller = FakeCaller([TargetError("HTTP 500: boom")])
    reply = AttackTarget(caller, "c" * 64, TOOLS, set())(
        TargetCall(call_id=1, session_id="s", message="x")
    )
    assert (reply.content, reply.error) == (None, "HTTP 500: boom")
