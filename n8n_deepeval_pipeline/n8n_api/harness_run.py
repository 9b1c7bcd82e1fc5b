"""The harness copy's life on n8n: created and published for one run, removed by that run.

Copies are named ``[n8n-deepeval harness] <benchmark> <version> <id> <owner>``, the owner
being the host and process that made the copy and the time its run must be over by. A
copy belongs to its run: another run of the benchmark (a ``--filter`` trial, a sensor or
schedule run overlapping a CLI run) removes it only when it is stale, that is when the
process that made it is gone (on this host) or its deadline has passed (made on another
host), never for its prefix alone. n8n deletes a workflow's executions with it; a copy
made to be kept (``target.keepHarnessCopy``) is named ``[n8n-deepeval harness, kept] …``,
which no run removes, and is only unpublished when its run ends.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2

from n8n_deepeval_pipeline.benchmark.n8n_target import DEFAULT_BODY, WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.mcp_servers import mcp_servers
from n8n_deepeval_pipeline.n8n_data.agent_steps import tool_name
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.workflow.graph import WorkflowGraph
from n8n_deepeval_pipeline.workflow.harness import (
    MOCKS_FIELD,
    Replacement,
    check_start_and_end,
    default_input,
    feeder,
    harness_copy,
    kept_nodes,
)
from n8n_deepeval_pipeline.workflow.mcp_nodes import is_mcp_client, mcp_nodes
from n8n_deepeval_pipeline.workflow.mocks import (
    SERVICES_RESPONSE,
    MockAnswer,
    ServiceNode,
    check_mocks,
    mocked_nodes,
    service_nodes,
)
from n8n_deepeval_pipeline.workflow.variants import same_workflow_problems, variant_problems

HARNESS_PREFIX = "[n8n-deepeval harness]"
KEPT_PREFIX = "[n8n-deepeval harness, kept]"  # never a stale copy: the user removes it
# A run past its own time limit by this much is gone, even on a host this one cannot see.
STALE_MARGIN_S = 900.0
_OWNER = re.compile(r" host=(?P<host>\S+) pid=(?P<pid>\d+) until=(?P<until>\d+)$")


class HarnessNotServedError(RuntimeError):
    """The copy was published but n8n never started serving its webhook."""


@dataclass(frozen=True)
class Owner:
    """The process a copy belongs to, and when its run must be over."""

    host: str
    pid: int
    until: int

    @classmethod
    def this_process(cls, time_limit_s: float) -> Owner:
        """The owner for a run of the calling process that may take ``time_limit_s``."""
        until = int(time.time() + time_limit_s + STALE_MARGIN_S)
        return cls(socket.gethostname(), os.getpid(), until)

    def tag(self) -> str:
        """How the owner is written at the end of a copy's name."""
        return f"host={self.host} pid={self.pid} until={self.until}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def is_stale(name: str, now: float, alive: Callable[[int], bool] = _alive) -> bool:
    """Whether the copy's run is over.

    On this host, when its process is gone; made on another host, where its process cannot
    be seen, when its deadline has passed. A copy without an owner was left by a version
    that did not record one: stale.
    """
    match = _OWNER.search(name)
    if match is None:
        return True
    if match["host"] == socket.gethostname():
        return not alive(int(match["pid"]))
    return now > int(match["until"])


def remove_stale_copies(client: N8nClient, benchmark: str) -> list[str]:
    """Remove this benchmark's copies whose runs are over; their names."""
    prefix, now = f"{HARNESS_PREFIX} {benchmark} ", time.time()
    stale = [
        workflow
        for workflow in client.workflows()
        if str(workflow.get("name", "")).startswith(prefix) and is_stale(workflow["name"], now)
    ]
    for workflow in stale:
        client.remove_workflow(str(workflow["id"]))
    return [str(workflow["name"]) for workflow in stale]


def mock_answers(target: WorkflowTarget, workflow: dict[str, Any]) -> dict[str, MockAnswer]:
    """Node name → what it answers instead of running.

    The nodes the benchmark names, every MCP Client Tool whose server it does not call
    safe, and with ``services`` every other node that acts on a real service.
    """
    mocks = target.mocks
    answers = {
        name: MockAnswer(response=mock.response, per_row=mock.per_row)
        for name, mock in mocks.nodes.items()
    }
    for node in _kept_mcp_clients(target, workflow):
        if not _safe(target, node):
            answers.setdefault(node, MockAnswer(response=SERVICES_RESPONSE))
    if mocks.services:
        for service in service_nodes(workflow, target.start_node_name, target.end_node_name):
            answers.setdefault(service.name, MockAnswer(response=SERVICES_RESPONSE))
    return answers


def _kept_mcp_clients(target: WorkflowTarget, workflow: dict[str, Any]) -> list[str]:
    kept = kept_nodes(workflow, target.start_node_name, target.end_node_name)
    return WorkflowGraph(workflow).names(lambda node: is_mcp_client(node) and node["name"] in kept)


def _safe(target: WorkflowTarget, node: str) -> bool:
    settings = target.mcp_servers.get(node)
    return settings is not None and settings.safe


@dataclass(frozen=True)
class HarnessMocks:
    """What the copy is made with: the stand-ins, the MCP servers, the mocked tools' names.

    ``servers``: every MCP Client Tool's server, by node name (what a run's test case
    says the agent had); ``mocked_tools``: the tool names the mocks answer to.
    """

    replacements: dict[str, Replacement]
    servers: dict[str, McpServer]
    mocked_tools: set[str]


def harness_mocks(target: WorkflowTarget, workflow: dict[str, Any]) -> HarnessMocks:
    """The mocks of the copy, MCP servers listed (or read from the benchmark) first."""
    answers = mock_answers(target, workflow)
    clients = set(_kept_mcp_clients(target, workflow))
    servers = mcp_servers(mcp_nodes(workflow, clients), target.mcp_servers)
    replacements = mocked_nodes(workflow, answers, servers)
    # An MCP node's stand-ins are named as the agent knows its tools; any other mock, as n8n
    # names the node's tool.
    mocked_tools = {
        name
        for mocked, replacement in replacements.items()
        for name in (
            [stand_in["name"] for stand_in in replacement]
            if isinstance(replacement, list)
            else [tool_name(mocked)]
        )
    }
    return HarnessMocks(replacements, servers, mocked_tools)


def unmocked_services(target: WorkflowTarget, workflow: dict[str, Any]) -> list[ServiceNode]:
    """The nodes of the copy that will still act on a real service on every run."""
    mocked = set(mock_answers(target, workflow))
    return service_nodes(workflow, target.start_node_name, target.end_node_name, mocked)


def harness_problems(
    target: WorkflowTarget, workflow: dict[str, Any], variants: bool = True
) -> list[str]:
    """What keeps the target from running through a harness copy, in plain words.

    ``variants``: check the target's variants against ``workflow`` (the workflow itself;
    a variant's own graph is checked without them).
    """
    start, end = target.start_node_name, target.end_node_name
    problems = (
        check_start_and_end(workflow, start, end)
        or check_mocks(workflow, start, end, list(mock_answers(target, workflow)))
        or _mcp_server_problems(target, workflow)
    )
    if not problems:  # the body needs the trigger, which a wrong start node may not have
        try:
            harness_body(target, workflow)
        except ValueError as error:
            problems.append(str(error).removeprefix("target."))
    if not variants:
        return problems
    # A variant is applied only once every node and parameter it names is there.
    varied = variant_problems(workflow, target.variants) or same_workflow_problems(
        workflow, target.variants
    )
    return problems + [f"variants: {problem}" for problem in varied]


def _mcp_server_problems(target: WorkflowTarget, workflow: dict[str, Any]) -> list[str]:
    """Names under ``mcpServers`` that are no MCP Client Tool of the copy."""
    clients = set(_kept_mcp_clients(target, workflow))
    return [
        f'mcpServers: "{name}" is not an MCP Client Tool node that runs between '
        f'"{target.start_node_name}" and "{target.end_node_name}"'
        for name in target.mcp_servers
        if name not in clients
    ]


def harness_body(target: WorkflowTarget, workflow: dict[str, Any]) -> Any:
    """The body template of a run's request, with the row's mock responses.

    It is what the replaced trigger outputs for the row: ``target.input``, else the
    trigger's own shape.
    """
    body = target.input
    if body is None:
        body = default_input(feeder(workflow, target.start_node_name))
    columns = {
        name: mock.column or judge_mock_column(name)
        for name, mock in target.mocks.nodes.items()
        if mock.per_row
    }
    if not columns:
        return body
    body = DEFAULT_BODY if body is None else body
    if not isinstance(body, dict):
        raise ValueError(
            "target.mocks: a response read from a column or written by the judge needs an "
            "object input"
        )
    cells = {name: f"{{{{ row.get({json.dumps(column)}) }}}}" for name, column in columns.items()}
    return {**body, MOCKS_FIELD: cells}


def judge_mock_column(name: str) -> str:
    """The row field the judge's response for node ``name`` travels in, as a column would."""
    return f"__judgeMock:{name}"


def judge_mocked(target: WorkflowTarget) -> list[str]:
    """The nodes whose responses the judge writes, by name."""
    return [name for name, mock in target.mocks.nodes.items() if mock.judge]


def with_judge_mocks(
    rows: list[DatasetRow], written: dict[str, dict[str, str]]
) -> list[DatasetRow]:
    """The rows carrying the judge's responses (row id → node → JSON text) as columns."""
    return [
        row.model_copy(
            update={
                "raw": {
                    **row.raw,
                    **{
                        judge_mock_column(name): text
                        for name, text in written.get(row.row_id, {}).items()
                    },
                }
            }
        )
        for row in rows
    ]


@contextmanager
def harness_webhook(
    client: N8nClient,
    base_url: str,
    workflow: dict[str, Any],
    target: WorkflowTarget,
    label: str,
    time_limit_s: float,
    replacements: dict[str, Replacement] | None = None,
) -> Iterator[tuple[str, str]]:
    """A published harness copy for the duration of the block: (its id, its webhook URL).

    Then it is removed with its executions; with ``target.keepHarnessCopy`` it is only
    unpublished, and kept under a name no run removes.
    """
    run_id = uuid.uuid4().hex
    path = f"n8n-deepeval-{run_id}"
    start, end = target.start_node_name, target.end_node_name
    copy = harness_copy(workflow, start, end, path, str(uuid.uuid4()), replacements)
    owner = Owner.this_process(time_limit_s)
    prefix = KEPT_PREFIX if target.keep_harness_copy else HARNESS_PREFIX
    copy["name"] = f"{prefix} {label} {run_id[:8]} {owner.tag()}"
    copy_id = client.create_workflow(copy)
    try:
        client.publish_workflow(copy_id)
        url = f"{base_url.rstrip('/')}/webhook/{path}"
        wait_until_served(url)
        yield copy_id, url
    finally:
        if target.keep_harness_copy:
            client.unpublish_workflow(copy_id)
        else:
            client.remove_workflow(copy_id)


def kept_copy_note(base_url: str, copy_id: str) -> str:
    """Where a kept copy and its executions are found once the run is over."""
    return (
        f"harness copy {copy_id} is kept in n8n, unpublished, with its executions "
        f"({base_url.rstrip('/')}/workflow/{copy_id}/executions): delete it there when done"
    )


def wait_until_served(url: str, timeout_s: float = 30.0) -> None:
    """Wait until n8n serves the POST webhook, asking with a GET so nothing is executed.

    Published webhooks register a moment later; until then n8n answers that the webhook
    is not registered at all, and afterwards that it is not registered *for GET*.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            answer = httpx2.get(url, timeout=5.0)
        except httpx2.TransportError:
            answer = None
        if answer is not None and (
            answer.status_code != 404 or "not registered for GET" in answer.text
        ):
            return
        time.sleep(0.25)
    raise HarnessNotServedError(f"n8n did not serve the harness copy's webhook in {timeout_s} s")
