"""What a benchmark needs to know about a workflow before anyone writes one.

Its trigger; its agents and their system messages; the node the trigger feeds (the start
node of n8n's config evals, never the trigger itself) and the node whose output is the
answer (the end node); the fields of the trigger's item the start node reads (the
dataset's columns, the user's message first); and the agents' sub-nodes that decide the
metrics: tools, memory, retrieval, MCP Client Tools; and the nodes that make images
(OpenAI's and Gemini's image nodes, generating or editing). ``init`` proposes a benchmark
from it and ``dataset from-executions`` reads the same fields out of past executions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.n8n_data.expressions import Segments, item_references, whole_reference
from n8n_deepeval_pipeline.workflow.agent_tools import AGENT_TYPES, agent_tools
from n8n_deepeval_pipeline.workflow.graph import LANGCHAIN, WorkflowGraph, node_type, short_type
from n8n_deepeval_pipeline.workflow.harness import is_trigger
from n8n_deepeval_pipeline.workflow.image_nodes import ImageOperation, image_operation
from n8n_deepeval_pipeline.workflow.mcp_nodes import is_mcp_client

CHAT_TRIGGER = LANGCHAIN + "chatTrigger"
WEBHOOK = "n8n-nodes-base.webhook"
# Nodes that take their prompt from the item's chatInput unless told otherwise.
_PROMPTED = AGENT_TYPES | {LANGCHAIN + "chainLlm", LANGCHAIN + "chainRetrievalQa"}
# The user's message when a node reads it implicitly (promptType "auto").
CHAT_INPUT: Segments = ("chatInput",)
# Where a Chat Trigger's item (and a memory reading its input) names the session.
CHAT_SESSION: Segments = ("sessionId",)
# The session is the pipeline's (one per run): never a dataset column.
SESSION_FIELDS = frozenset({"sessionId", "session_id"})
_UNSAFE_COLUMN = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class FieldRead:
    """A field of the trigger's item the start node reads, and the column that holds it."""

    path: Segments
    column: str


@dataclass(frozen=True)
class Anatomy:
    """The parts of a workflow a benchmark of it is built from."""

    trigger: str | None
    trigger_type: str
    agents: list[str]
    instructions: list[str]  # the agents' system messages, in agent-name order
    start: str | None
    end: str | None
    reads: list[FieldRead]  # the user's message first, in column ``input``
    tools: list[AgentTool]
    memories: list[str]
    retrievers: list[str]
    mcp_clients: list[str] = field(default_factory=list)  # the agents' MCP Client Tool nodes
    # The nodes that make images, and how: (name, "generate" | "edit").
    image_nodes: list[tuple[str, ImageOperation]] = field(default_factory=list)
    # Where in the trigger's item a chat session is named: what the memory keys by.
    session: Segments | None = None
    no_session: str | None = None  # why there is none

    @property
    def columns(self) -> list[FieldRead]:
        """The dataset's columns: ``reads``, or a guess when the start node names no field.

        Code that reads its item as a whole gets the message as ``chatInput``, or a
        Webhook's body, kept twice: as text in ``input``, and in ``body`` as it came, to
        be sent back so.
        """
        if self.reads:
            return self.reads
        if self.trigger_type == WEBHOOK:
            return [FieldRead(("body",), "input"), FieldRead(("body",), "body")]
        return [FieldRead(CHAT_INPUT, "input")]

    @property
    def is_chat(self) -> bool:
        """Whether users talk to it in sessions (a Chat Trigger): a row is a conversation."""
        return self.trigger_type == CHAT_TRIGGER


def anatomy(workflow: Mapping[str, Any]) -> Anatomy:
    """The workflow's trigger, agents, proposed start and end node, reads and sub-nodes."""
    graph = WorkflowGraph(workflow)
    agents = graph.names(lambda node: node_type(node) in AGENT_TYPES)
    trigger = _trigger(graph, agents)
    start = _fed_by(graph, trigger) if trigger else None
    sub_nodes = _sub_nodes(graph, agents)
    session, no_session = _session(graph, trigger) if trigger else (None, "it has no trigger")
    return Anatomy(
        trigger=trigger,
        trigger_type=node_type(graph.nodes[trigger]) if trigger else "",
        agents=agents,
        instructions=[text for name in agents if (text := _system_message(graph.nodes[name]))],
        start=start,
        end=_end(graph, start, set(agents)) if start else None,
        reads=_reads(graph, trigger, start) if trigger and start else [],
        tools=agent_tools(workflow),
        memories=sorted(name for name, kind in sub_nodes if kind == "ai_memory"),
        retrievers=graph.names(_retrieves),
        mcp_clients=sorted(
            {
                name
                for name, _ in sub_nodes
                if name in graph.nodes and is_mcp_client(graph.nodes[name])
            }
        ),
        image_nodes=_image_nodes(graph),
        session=session,
        no_session=no_session,
    )


def _image_nodes(graph: WorkflowGraph) -> list[tuple[str, ImageOperation]]:
    """OpenAI's and Gemini's nodes that generate or edit images, by name."""
    found = []
    for name, node in sorted(graph.nodes.items()):
        operation = image_operation(node)
        if operation is not None:
            found.append((name, operation))
    return found


def _session(graph: WorkflowGraph, trigger: str) -> tuple[Segments | None, str | None]:
    """The field of the trigger's item a chat session is named by, or why there is none.

    An agent's memory keys its sessions: by ``sessionKey`` (Define below) or by the
    input's ``sessionId`` (the default, what a Chat Trigger sends). A key that is one field
    of the trigger's item (``$json.body.sessionId`` read by an agent the trigger feeds,
    or ``$('Webhook').item.json.body.sessionId``) names the session of each execution.
    """
    kind = node_type(graph.nodes[trigger])
    links = [
        link for link in graph.links if link.kind == "ai_memory" and link.source in graph.nodes
    ]
    reasons: list[str] = []
    for link in sorted(links, key=lambda found: found.source):
        fed = trigger in {
            up.source for up in graph.links if up.kind == "main" and up.target == link.target
        }
        path, why = _memory_key(graph.nodes[link.source], trigger, kind, fed)
        if path is not None:
            return path, None
        reasons.append(f'memory "{link.source}" {why}')
    if kind == CHAT_TRIGGER:
        return CHAT_SESSION, None
    if not reasons:
        return None, "its agent has no memory node, so its executions are not conversations"
    return None, "; ".join(reasons)


def _memory_key(
    memory: Mapping[str, Any], trigger: str, trigger_kind: str, fed_by_trigger: bool
) -> tuple[Segments | None, str]:
    """The trigger's field a memory node keys sessions by, or what it keys them by instead."""
    parameters = memory.get("parameters") or {}
    custom = parameters.get("sessionIdType") == "customKey" or (
        float(memory.get("typeVersion") or 1) < 1.2 and "sessionKey" in parameters
    )
    if not custom:  # n8n reads the input item's sessionId
        if fed_by_trigger and trigger_kind != WEBHOOK:
            return CHAT_SESSION, ""
        return None, (
            f"takes the session from the input's sessionId, which the trigger {trigger} "
            f"({trigger_kind}) does not send"
        )
    key = str(parameters.get("sessionKey") or "")
    reference = whole_reference(key)
    mine = reference is not None and (
        reference.node == trigger or (reference.node is None and fed_by_trigger)
    )
    if reference is not None and mine and reference.segments:
        return reference.segments, ""
    if not key.startswith("="):
        return None, f"keys every execution to the one session {key!r}"
    return None, (
        f"keys sessions by {key}, which is not one field of the trigger's item "
        f"($json.body.sessionId, or $('{trigger}').item.json.body.sessionId)"
    )


def _system_message(node: Mapping[str, Any]) -> str | None:
    """An agent's system message (an expression's text as written), None when it sets none."""
    options = (node.get("parameters") or {}).get("options")
    message = options.get("systemMessage") if isinstance(options, Mapping) else None
    if not isinstance(message, str):
        return None
    return message.removeprefix("=").strip() or None


def _trigger(graph: WorkflowGraph, agents: list[str]) -> str | None:
    """The trigger whose main path reaches an agent (else the first trigger by name)."""
    triggers = graph.names(is_trigger)
    reaching = [name for name in triggers if set(agents) & _downstream(graph, name)]
    return next(iter(reaching + triggers), None)


def _successors(graph: WorkflowGraph, name: str) -> list[str]:
    return [
        link.target
        for link in graph.links
        if link.kind == "main" and link.source == name and link.target in graph.nodes
    ]


def _downstream(graph: WorkflowGraph, name: str) -> set[str]:
    seen, frontier = {name}, [name]
    while frontier:
        for target in _successors(graph, frontier.pop()):
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def _fed_by(graph: WorkflowGraph, trigger: str) -> str | None:
    return next(iter(_successors(graph, trigger)), None)


def _end(graph: WorkflowGraph, start: str, agents: set[str]) -> str:
    """The last node of the chain from ``start``; at a fork, the last agent before it.

    A branch (an If after the agent) outputs the branch's item, not the answer, so the
    agent is the better guess there.
    """
    chain, current = [start], start
    while len(after := _successors(graph, current)) == 1 and after[0] not in chain:
        current = after[0]
        chain.append(current)
    if len(after) > 1:
        return next((name for name in reversed(chain) if name in agents), current)
    return current


def _sub_nodes(graph: WorkflowGraph, parents: list[str]) -> list[tuple[str, str]]:
    """(sub-node, link kind) of every sub-node wired into ``parents``, directly or not."""
    found: list[tuple[str, str]] = []
    frontier = set(parents)
    while frontier:
        links = [link for link in graph.links if link.kind != "main" and link.target in frontier]
        new = [(link.source, link.kind) for link in links if (link.source, link.kind) not in found]
        found += new
        frontier = {name for name, _ in new}
    return found


def _retrieves(node: Mapping[str, Any]) -> bool:
    """Vector stores (as a tool or a retriever), retrievers and retrieval chains."""
    short = short_type(node)
    return node_type(node).startswith(LANGCHAIN) and (
        short.startswith(("vectorStore", "retriever"))
        or short in ("toolVectorStore", "chainRetrievalQa")
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _reads(graph: WorkflowGraph, trigger: str, start: str) -> list[FieldRead]:
    """The fields of the trigger's item the start node reads, its prompt's first.

    Any node may also read them by the trigger's name
    (``$('When chat message received').item.json.chatInput``).
    """
    node = graph.nodes[start]
    parameters = node.get("parameters") or {}
    prompt = parameters.get("text") if isinstance(parameters, Mapping) else None
    implicit = node_type(node) in _PROMPTED and parameters.get("promptType") != "define"
    paths: list[Segments] = [CHAT_INPUT] if implicit else []
    sources = [prompt, parameters] + [n.get("parameters") for n in graph.nodes.values()]
    for index, source in enumerate(sources):
        for text in _strings(source):
            for reference in item_references(text):
                mine = reference.node is None and index < 2  # the start node's own $json
                if (mine or reference.node == trigger) and reference.segments:
                    paths.append(reference.segments)
    kept = [path for path in dict.fromkeys(paths) if str(path[-1]) not in SESSION_FIELDS]
    return _named(kept)


def _named(paths: list[Segments]) -> list[FieldRead]:
    """A column per path: ``input`` for the first (the message), else its last field name."""
    reads: list[FieldRead] = []
    taken: set[str] = set()
    for position, path in enumerate(paths):
        names = [str(segment) for segment in path if isinstance(segment, str)] or ["field"]
        column = "input" if position == 0 else _column(names[-1])
        if column in taken:
            column = _column("_".join(names))
        while column in taken:
            column += "_"
        taken.add(column)
        reads.append(FieldRead(path, column))
    return reads


def _column(name: str) -> str:
    """A name n8n Data Tables accept: letters, digits and _, starting with a letter."""
    safe = _UNSAFE_COLUMN.sub("_", name)
    return safe if safe[:1].isalpha() else f"field_{safe}"
