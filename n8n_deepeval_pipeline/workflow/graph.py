"""A workflow as a graph: its nodes by name and its typed links (main, ai_tool, ai_memory, …)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

LANGCHAIN = "@n8n/n8n-nodes-langchain."
STICKY_NOTE = "n8n-nodes-base.stickyNote"


@dataclass(frozen=True)
class Link:
    """One connection: ``source``'s output of ``kind`` into ``target``."""

    source: str
    kind: str  # main, ai_languageModel, ai_tool, ai_memory, …
    target: str


class WorkflowGraph:
    """The nodes (sticky notes left out) and connections of a workflow, read leniently."""

    def __init__(self, workflow: Mapping[str, Any]) -> None:
        raw = [node for node in workflow.get("nodes") or [] if isinstance(node, Mapping)]
        self.all_names = {str(node.get("name", "")) for node in raw}
        self.nodes: dict[str, dict[str, Any]] = {
            str(node.get("name", "")): dict(node) for node in raw if node.get("type") != STICKY_NOTE
        }
        self.links = list(links(workflow.get("connections") or {}))

    def names(self, predicate: Callable[[dict[str, Any]], bool]) -> list[str]:
        """The names of the nodes that satisfy ``predicate``, sorted."""
        return sorted(name for name, node in self.nodes.items() if predicate(node))

    def linked(self, kind: str, *, into: bool) -> set[str]:
        """The targets (``into``) or the sources of ``kind`` links between existing nodes."""
        return {
            link.target if into else link.source
            for link in self.links
            if link.kind == kind and link.source in self.nodes and link.target in self.nodes
        }


def links(connections: Any) -> Iterator[Link]:
    """Every link of n8n's ``{source: {kind: [[{node, type, index}]]}}``; odd shapes skipped."""
    if not isinstance(connections, Mapping):
        return
    for source, outputs in connections.items():
        if not isinstance(outputs, Mapping):
            continue
        for kind, branches in outputs.items():
            for branch in branches if isinstance(branches, list) else []:
                for link in branch if isinstance(branch, list) else []:
                    if isinstance(link, Mapping) and "node" in link:
                        yield Link(str(source), str(kind), str(link["node"]))


def node_type(node: Mapping[str, Any]) -> str:
    """The node's full type (``@n8n/n8n-nodes-langchain.agent``)."""
    return str(node.get("type", ""))


def short_type(node: Mapping[str, Any]) -> str:
    """The type without its package (``agent``)."""
    return node_type(node).rsplit(".", 1)[-1]


def is_disabled(node: Mapping[str, Any]) -> bool:
    """Whether the node is switched off in the editor."""
    return node.get("disabled") is True


def is_tool(node: Mapping[str, Any]) -> bool:
    """LangChain ``tool…`` nodes and any ``…Tool`` node (HTTP Request Tool, app tools)."""
    short = short_type(node)
    return (node_type(node).startswith(LANGCHAIN) and short.startswith("tool")) or short.endswith(
        "Tool"
    )
