"""Deterministic checks of one workflow version: its structure, AI wiring and security.

The evaluation framework's "Workflow checks", deterministic part. Each check reads the
workflow JSON alone (never a run) and says pass, fail or not applicable (nothing in this
workflow for it to grade, e.g. an agent check on a workflow without agents), with the
nodes it concerns. Check ids and categories follow the framework's where it has the same
check (``has_trigger``, ``no_unreachable_nodes``, ``agent_has_language_model``, …).

The checks are signals for the UI and the run summary: none of them decides whether a
benchmark run passes. Messages never quote a value found in a parameter: a hard-coded
credential is named by its node and parameter path only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.redaction import credential_values, is_credential_name
from n8n_deepeval_pipeline.workflow.graph import (
    LANGCHAIN,
    WorkflowGraph,
    is_disabled,
    is_tool,
    node_type,
    short_type,
)
from n8n_deepeval_pipeline.workflow.harness import is_trigger

CheckStatus = Literal["pass", "fail", "not_applicable"]
CheckCategory = Literal["structure", "connection_topology", "ai_nodes", "security"]
CATEGORIES: tuple[CheckCategory, ...] = (
    "structure",
    "connection_topology",
    "ai_nodes",
    "security",
)

# Root nodes that cannot run without a language model sub-node.
NEEDS_LANGUAGE_MODEL = frozenset(
    LANGCHAIN + name
    for name in (
        "agent",
        "agentTool",
        "chainLlm",
        "chainRetrievalQa",
        "chainSummarization",
        "informationExtractor",
        "sentimentAnalysis",
        "textClassifier",
    )
)
# Inbound triggers and the ``authentication`` value that leaves them open. The chat
# trigger listens outside the editor only when it is made public.
_INBOUND_TRIGGERS = frozenset(
    {
        "n8n-nodes-base.webhook",
        "n8n-nodes-base.formTrigger",
        LANGCHAIN + "chatTrigger",
        LANGCHAIN + "mcpTrigger",
    }
)
_OPEN = ("", "none")
# Header names whose literal value is a credential whatever their wording.
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})


class CheckResult(BaseModel):
    """One check on one workflow version."""

    model_config = ConfigDict(frozen=True)

    check_id: str
    category: CheckCategory
    status: CheckStatus
    message: str
    nodes: list[str]


def _listed(names: list[str]) -> str:
    return ", ".join(names)


def _result(
    spec: CheckSpec, status: CheckStatus, message: str, nodes: list[str] | None = None
) -> CheckResult:
    return CheckResult(
        check_id=spec.check_id,
        category=spec.category,
        status=status,
        message=message,
        nodes=nodes or [],
    )


@dataclass(frozen=True)
class CheckSpec:
    """A check of the catalog: its id, category, what it asks, and how it grades."""

    check_id: str
    category: CheckCategory
    description: str
    grade: Callable[[CheckSpec, WorkflowGraph], CheckResult]


def _unique_ids(checks: tuple[CheckSpec, ...]) -> tuple[CheckSpec, ...]:
    ids = [check.check_id for check in checks]
    duplicates = sorted({check_id for check_id in ids if ids.count(check_id) > 1})
    if duplicates:
        raise ValueError(f"duplicate workflow check ids: {', '.join(duplicates)}")
    return checks


# --- structure --------------------------------------------------------------------------


def _has_trigger(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    triggers = graph.names(is_trigger)
    enabled = [name for name in triggers if not is_disabled(graph.nodes[name])]
    if enabled:
        return _result(spec, "pass", f"started by {_listed(enabled)}", enabled)
    if triggers:
        return _result(spec, "fail", "every trigger node is disabled", triggers)
    return _result(spec, "fail", "no trigger node: nothing starts this workflow")


def _no_disabled_nodes(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    disabled = graph.names(is_disabled)
    if disabled:
        return _result(spec, "fail", f"{len(disabled)} disabled node(s)", disabled)
    return _result(spec, "pass", "no node is disabled")


# --- connection topology ------------------------------------------------------------------


def _no_dangling_connections(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    dangling = [
        link
        for link in graph.links
        if link.source not in graph.all_names or link.target not in graph.all_names
    ]
    if not dangling:
        return _result(spec, "pass", "every connection joins two existing nodes")
    missing = sorted(
        {name for link in dangling for name in (link.source, link.target)} - graph.all_names
    )
    shown = "; ".join(f"{link.source} → {link.target} ({link.kind})" for link in dangling)
    return _result(spec, "fail", f"connections to nodes that do not exist: {shown}", missing)


def _no_unreachable_nodes(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    triggers = graph.names(is_trigger)
    if not triggers:
        return _result(spec, "not_applicable", "no trigger to start from")
    after: dict[str, set[str]] = {}
    feeding: dict[str, set[str]] = {}  # a node's sub-nodes (models, tools, memories, …)
    for link in graph.links:
        after.setdefault(link.source, set()).add(link.target)
        if link.kind != "main":
            feeding.setdefault(link.target, set()).add(link.source)
    reached, frontier = set(triggers), list(triggers)
    while frontier:
        node = frontier.pop()
        for following in after.get(node, set()) | feeding.get(node, set()):
            if following not in reached:
                reached.add(following)
                frontier.append(following)
    unreachable = sorted(set(graph.nodes) - reached)
    if unreachable:
        return _result(spec, "fail", "not reachable from any trigger", unreachable)
    return _result(spec, "pass", "every node is reachable from a trigger")


# --- AI nodes -----------------------------------------------------------------------------


def _agent_has_language_model(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    roots = graph.names(lambda node: node_type(node) in NEEDS_LANGUAGE_MODEL)
    if not roots:
        return _result(spec, "not_applicable", "no agent or chain node")
    with_model = graph.linked("ai_languageModel", into=True)
    missing = [name for name in roots if name not in with_model]
    if missing:
        return _result(spec, "fail", "no language model connected (ai_languageModel)", missing)
    return _result(spec, "pass", "every agent and chain node has a language model", roots)


def _is_memory(node: Mapping[str, Any]) -> bool:
    """LangChain ``memory…`` nodes, but not the Chat Memory Manager (a main node)."""
    short = short_type(node)
    return (
        node_type(node).startswith(LANGCHAIN)
        and short.startswith("memory")
        and short != "memoryManager"
    )


def _sub_nodes_connected(
    kind: str, noun: str, is_kind: Callable[[Mapping[str, Any]], bool]
) -> Callable[[CheckSpec, WorkflowGraph], CheckResult]:
    """A check that every sub-node of one kind is connected to a node through ``kind``."""

    def grade(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
        emitting = {link.source for link in graph.links if link.kind == kind}
        subjects = graph.names(lambda node: is_kind(node) or node.get("name") in emitting)
        if not subjects:
            return _result(spec, "not_applicable", f"no {noun} node")
        connected = graph.linked(kind, into=False)
        loose = [name for name in subjects if name not in connected]
        if loose:
            return _result(spec, "fail", f"{noun} not connected to any node ({kind})", loose)
        return _result(spec, "pass", f"every {noun} is connected ({kind})", subjects)

    return grade


# --- security -----------------------------------------------------------------------------


def _is_literal(value: Any) -> bool:
    """A value typed in as it is: not an n8n expression (``=…``, ``{{ … }}``)."""
    return (
        isinstance(value, str) and bool(value) and not value.startswith("=") and "{{" not in value
    )


def _is_reference(value: str) -> bool:
    """A credential-shaped match that names a variable (``$env.KEY``, ``{{ … }}``)."""
    return value.startswith("$") or "{{" in value


def is_secret_name(name: Any) -> bool:
    """Whether a field, header or parameter of this name holds a credential (Authorization too)."""
    return isinstance(name, str) and (
        is_credential_name(name) or name.strip().lower() in _AUTH_HEADERS
    )


def hard_coded_credentials(parameters: Any, path: str = "") -> Iterator[str]:
    """Parameter paths holding a credential: by its shape anywhere, by its name when typed in.

    Shapes are those ``redaction`` hides (bearer tokens, URL user-info, key query parameters,
    quoted JSON key fields, ``sk-`` keys); names are fields and ``{name, value}`` entries
    (headers, query and body parameters, Set assignments) called like a credential whose
    value is a literal, not an expression.
    """
    if isinstance(parameters, Mapping):
        if is_secret_name(parameters.get("name")) and _is_literal(parameters.get("value")):
            yield f"{path}.value".lstrip(".")
        for key, value in parameters.items():
            inner = f"{path}.{key}".lstrip(".")
            if key != "value" and is_secret_name(key) and _is_literal(value):
                yield inner
            else:
                yield from hard_coded_credentials(value, inner)
    elif isinstance(parameters, list):
        for index, value in enumerate(parameters):
            yield from hard_coded_credentials(value, f"{path}[{index}]")
    elif isinstance(parameters, str):
        found = credential_values(parameters, prose=False)
        if any(not _is_reference(value) for value in found):
            yield path


def _no_hardcoded_credentials(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    if not graph.nodes:
        return _result(spec, "not_applicable", "no node")
    found = {
        name: list(dict.fromkeys(hard_coded_credentials(node.get("parameters") or {})))
        for name, node in sorted(graph.nodes.items())
    }
    found = {name: paths for name, paths in found.items() if paths}
    if not found:
        return _result(spec, "pass", "no credential typed into node parameters")
    where = "; ".join(f"{name}: {', '.join(paths)}" for name, paths in found.items())
    message = f"credential hard-coded in parameters (use n8n credentials): {where}"
    return _result(spec, "fail", message, list(found))


def _inbound(node: Mapping[str, Any]) -> bool:
    if node_type(node) not in _INBOUND_TRIGGERS or is_disabled(node):
        return False
    if node_type(node) == LANGCHAIN + "chatTrigger":
        return (node.get("parameters") or {}).get("public") is True
    return True


def _open(node: Mapping[str, Any]) -> bool:
    return (node.get("parameters") or {}).get("authentication") in (*_OPEN, None)


def _inbound_triggers_authenticated(spec: CheckSpec, graph: WorkflowGraph) -> CheckResult:
    inbound = graph.names(_inbound)
    if not inbound:
        return _result(spec, "not_applicable", "no webhook, form, MCP or public chat trigger")
    open_ = [name for name in inbound if _open(graph.nodes[name])]
    if open_:
        return _result(spec, "fail", "webhook without inbound authentication", open_)
    return _result(spec, "pass", "every inbound trigger requires authentication", inbound)


CHECKS: tuple[CheckSpec, ...] = _unique_ids((
    CheckSpec("has_trigger", "structure", "An enabled trigger node starts the workflow.",
              _has_trigger),
    CheckSpec("no_disabled_nodes", "structure", "No node is disabled.", _no_disabled_nodes),
    CheckSpec("no_dangling_connections", "connection_topology",
              "Every connection joins two nodes that exist.", _no_dangling_connections),
    CheckSpec("no_unreachable_nodes", "connection_topology",
              "Every node is reachable from a trigger (a sub-node through the node it serves).",
              _no_unreachable_nodes),
    CheckSpec("agent_has_language_model", "ai_nodes",
              "Every agent and chain node has a language model connected (ai_languageModel).",
              _agent_has_language_model),
    CheckSpec("tools_connected", "ai_nodes",
              "Every tool node is connected to an agent (ai_tool).",
              _sub_nodes_connected("ai_tool", "tool", is_tool)),
    CheckSpec("memory_properly_connected", "ai_nodes",
              "Every memory node is connected to an agent or chain (ai_memory).",
              _sub_nodes_connected("ai_memory", "memory", _is_memory)),
    CheckSpec("no_hardcoded_credentials", "security",
              "No credential, API key, bearer token or password typed into node parameters.",
              _no_hardcoded_credentials),
    CheckSpec("inbound_triggers_authenticated", "security",
              "Every webhook, form, MCP and public chat trigger requires authentication.",
              _inbound_triggers_authenticated),
))  # fmt: skip


def check_workflow(workflow: Mapping[str, Any]) -> list[CheckResult]:
    """Every check of the catalog on the workflow, in catalog order."""
    graph = WorkflowGraph(workflow)
    return [check.grade(check, graph) for check in CHECKS]
