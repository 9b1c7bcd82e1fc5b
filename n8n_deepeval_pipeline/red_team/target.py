"""The workflow as the red team attacks it, and the step's answer to each attack message.

An ``n8n_workflow`` target is attacked through its harness copy with every node that
would act on a real service mocked (``mocks: services`` is implied): a tool an attack
makes the agent call answers from the mock and never runs; a node that cannot be mocked
(a sub-node that is neither a tool nor on the main path) refuses the run, by name. A
node the benchmark mocks per dataset row answers the services' response instead: an
attack has no row. Each message is one call of the copy's webhook in the attack run's
session; the agent's tool calls come from its answer, else from the call's execution.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from n8n_deepeval_pipeline.benchmark.n8n_target import Mocks, NodeMock, WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.executions import execution_steps, executions_of
from n8n_deepeval_pipeline.n8n_api.harness_run import harness_problems, unmocked_services
from n8n_deepeval_pipeline.n8n_api.webhook import TargetError, WebhookCaller
from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    AgentTool,
    StepsShapeError,
    parse_intermediate_steps,
    tool_calls,
)
from n8n_deepeval_pipeline.red_team.protocol import TargetCall, TargetReply, ToolCallRecord
from n8n_deepeval_pipeline.tables.rows import DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.workflow.mocks import SERVICES_RESPONSE, check_mocks, service_nodes

# A session's steps in the execution of its nth message (1-based).
StepsOf = Callable[[str, int], list[Any] | None]
_ROW = "red-team"


def attacked_target(target: WorkflowTarget) -> WorkflowTarget:
    """The target with every service node mocked; a per-row mock answers as a service does."""
    nodes = {
        name: NodeMock(response=SERVICES_RESPONSE) if mock.per_row else mock
        for name, mock in target.mocks.nodes.items()
    }
    return target.model_copy(
        update={"mocks": Mocks(services=True, nodes=nodes), "messages_column": None}
    )


def attack_problems(
    target: WorkflowTarget, workflow: dict[str, Any], variants: bool = True
) -> list[str]:
    """What keeps the red team from attacking the workflow without acting on the world.

    ``variants``: check the target's variants against ``workflow`` (the workflow itself;
    a variant's own graph, attacked as a version of its own, is checked without them).
    """
    start, end = target.start_node_name, target.end_node_name
    unmockable = [
        f"{node}; it cannot be mocked (only main-path nodes and tools can), so the red team "
        "would act on the world"
        for node in service_nodes(workflow, start, end)
        if check_mocks(workflow, start, end, [node.name])
    ]
    if unmockable:
        return unmockable
    attacked = attacked_target(target)
    problems = harness_problems(attacked, workflow, variants)
    still = unmocked_services(attacked, workflow)
    return problems + [f"{node}, unmocked" for node in still]


class AttackTarget:
    """Answers the red team's messages, each with one call of the workflow's webhook.

    ``mocked``: the tool names the harness copy mocks (their calls are marked); ``tools``:
    what the agent has, for the descriptions the judge reads; ``steps_of``: the agent's
    steps in a session's newest execution, for answers that carry none.
    """

    def __init__(
        self,
        caller: WebhookCaller,
        workflow_hash: str,
        tools: list[AgentTool],
        mocked: set[str],
        steps_of: StepsOf | None = None,
    ) -> None:
        self.caller = caller
        self.workflow_hash = workflow_hash
        self.descriptions = {tool.name: tool.description for tool in tools}
        self.mocked = mocked
        self.steps_of = steps_of
        self._sessions: dict[str, str] = {}  # ours → the one the workflow answered with
        self._sent: dict[str, int] = {}  # messages sent in each session

    def __call__(self, call: TargetCall) -> TargetReply:
        session = self._sessions.get(call.session_id, call.session_id)
        self._sent[call.session_id] = sent = self._sent.get(call.session_id, 0) + 1
        row = DatasetRow(
            workflow_hash=self.workflow_hash,
            row_id=_ROW,
            position=0,
            input=call.message,
            raw={"input": call.message},
        )
        run = ExpandedRun(
            workflow_hash=self.workflow_hash,
            run_id=f"{self.workflow_hash}:{_ROW}:{call.session_id}",
            case_id=f"{self.workflow_hash}:{_ROW}",
            run_index=0,
            row_id=_ROW,
            run_name=_ROW,
        )
        try:
            answer = self.caller.answer(row, run, session)
        except TargetError as error:
            return TargetReply(call_id=call.call_id, error=str(error))
        if answer.session_id:
            self._sessions[call.session_id] = answer.session_id
        steps = answer.intermediate_steps
        if steps is None and self.steps_of is not None:
            steps = self.steps_of(answer.session_id or session, sent)
        try:
            records = self.records(steps)
        except StepsShapeError as error:
            return TargetReply(call_id=call.call_id, error=f"intermediateSteps: {error}")
        return TargetReply(call_id=call.call_id, content=answer.output, tools_called=records)

    def records(self, steps: list[Any] | None) -> list[ToolCallRecord]:
        """The agent's tool calls, described and marked mocked where the copy answered them."""
        return [
            ToolCallRecord(
                name=call.name,
                input_parameters=call.input_parameters,
                output=call.output,
                description=self.descriptions.get(call.name) or None,
                mocked=call.name in self.mocked,
            )
            for call in tool_calls(parse_intermediate_steps(steps) or [])
        ]


def steps_from_executions(
    client: N8nClient, workflow_id: str, recent: int, wait_s: float = 3.0
) -> StepsOf:
    """A session's steps in the execution of its nth message, among the ``recent`` last.

    n8n saves an execution a moment after the webhook answers: it is looked for again
    until ``wait_s`` has passed (None then: no steps are known).
    """

    def steps_of(session: str, nth: int) -> list[Any] | None:
        deadline = time.monotonic() + wait_s
        while True:
            found = executions_of(client.executions(workflow_id, limit=recent), session)
            if len(found) >= nth:
                return execution_steps(found[nth - 1])
            if time.monotonic() > deadline:
                return None
            time.sleep(0.25)

    return steps_of
