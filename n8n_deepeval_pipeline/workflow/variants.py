"""Variants of a workflow: the same graph with some node parameters set otherwise.

A variant is written as node name → parameter path → value, a path's parts separated by
dots (``options.systemMessage``, ``model``); a part that is a whole number indexes a list
(``messages.messageValues.0.message``, an LLM chain's first message). Set on a copy of the
whole workflow, so that
a variant has a workflowHash of its own (and so a partition and results of its own), and
its harness copy is made from it as the base's is from the base.

A parameter that holds one of n8n's resource locators (``{__rl: true, mode, value}``, how
a model node stores its ``model``) takes a plain value as the locator's ``value``: a user
writes ``model: gpt-4o-mini`` as the editor shows it, not the locator's shape.

The workflow and its variants form a family: the workflow is its ``base``, each member a
version (a partition) of its own. A variant that sets nothing new is the base itself, and
two variants that set the same are one workflow: both are refused, as they would share a
partition.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from n8n_deepeval_pipeline.workflow.hashing import version_key, workflow_hash

# node name → parameter path → value
NodeOverrides = Mapping[str, Mapping[str, Any]]


def path_parts(path: str) -> list[str]:
    """A parameter path's parts (``options.systemMessage`` → options, systemMessage)."""
    return path.split(".")


def _is_locator(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__rl") is True


def _child(holder: Any, part: str) -> Any:
    """What ``part`` names under ``holder``: a key of an object, an index of a list; None."""
    if isinstance(holder, list):
        index = int(part) if part.isdigit() else None
        return holder[index] if index is not None and index < len(holder) else None
    return holder.get(part) if isinstance(holder, Mapping) else None


def _set(parameters: dict[str, Any], parts: list[str], value: Any) -> None:
    """Set ``value`` at ``parts`` under ``parameters``, making the collections on the way.

    A list on the way is indexed by its part (checked to exist: ``variant_problems``).
    """
    holder: Any = parameters
    for part in parts[:-1]:
        holder = holder[int(part)] if isinstance(holder, list) else holder.setdefault(part, {})
    leaf = parts[-1]
    if isinstance(holder, list):
        holder[int(leaf)] = copy.deepcopy(value)
    elif _is_locator(holder.get(leaf)) and not isinstance(value, dict):
        # The cached name and URL the editor shows describe the old value: dropped.
        kept = {k: v for k, v in holder[leaf].items() if not k.startswith("cachedResult")}
        holder[leaf] = {**kept, "value": value}
    else:
        holder[leaf] = copy.deepcopy(value)


def apply_variant(workflow: Mapping[str, Any], overrides: NodeOverrides) -> dict[str, Any]:
    """A copy of ``workflow`` with the variant's parameters set (checked: see variant_problems)."""
    varied = copy.deepcopy(dict(workflow))
    nodes = {str(node.get("name")): node for node in varied.get("nodes") or []}
    for node_name, parameters in overrides.items():
        node = nodes[node_name]
        node_parameters = node.setdefault("parameters", {})
        for path, value in parameters.items():
            _set(node_parameters, path_parts(path), value)
    return varied


def _path_problem(parameters: Mapping[str, Any], path: str) -> str | None:
    """Why ``path`` cannot be set on a node with these parameters, or None.

    The first part must be a parameter the node has: n8n stores a node's parameters
    without their defaults but keeps its collections (``options: {}``), so a parameter
    that is nowhere is a typo far more often than an unset default. Deeper parts may be
    new (an option not set yet), but not under a value that is not an object, and a list
    is indexed only by an item it has.
    """
    parts = path_parts(path)
    if any(not part for part in parts):
        return f"parameter path {path!r} has an empty part"
    if parts[0] not in parameters:
        known = ", ".join(sorted(parameters)) or "none"
        return f"has no parameter {parts[0]!r} (its parameters: {known})"
    holder: Any = parameters
    for depth, part in enumerate(parts):
        where = ".".join(parts[: depth + 1])
        if isinstance(holder, list):
            if not part.isdigit() or int(part) >= len(holder):
                return f"parameter {where!r}: the list has no item {part} (it has {len(holder)})"
        elif not isinstance(holder, Mapping) or _is_locator(holder):
            above = ".".join(parts[:depth])
            return f"parameter {above!r} is not a collection, so {path!r} cannot be set"
        if depth == len(parts) - 1:
            return None
        holder = _child(holder, part)
        if holder is None:
            return None  # a collection not set yet: made when the variant is applied
    return None


def parameter_value(parameters: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` under a node's parameters (lists indexed), None where unset."""
    holder: Any = parameters
    for part in path_parts(path):
        holder = _child(holder, part)
        if holder is None:
            return None
    return holder


def variant_problems(
    workflow: Mapping[str, Any], variants: Mapping[str, NodeOverrides]
) -> list[str]:
    """Every node or parameter the variants name that the workflow lacks, with the variants."""
    nodes = {str(node.get("name")): node for node in workflow.get("nodes") or []}
    users: dict[str, list[str]] = defaultdict(list)  # problem → the variants that meet it
    for variant, overrides in variants.items():
        for node_name, parameters in overrides.items():
            node = nodes.get(node_name)
            if node is None:
                users[f"node {node_name!r} is not in the workflow"].append(variant)
                continue
            for path in parameters:
                problem = _path_problem(node.get("parameters") or {}, path)
                if problem is not None:
                    users[f"node {node_name!r} {problem}"].append(variant)
    return [f"{problem} (variants: {', '.join(named)})" for problem, named in users.items()]


BASE = "base"
"""How the workflow itself is named beside its variants (a variant cannot take the name)."""


@dataclass(frozen=True)
class Member:
    """The workflow or one of its variants: its name, graph, hash and partition key."""

    variant: str | None  # None: the workflow itself (the base)
    workflow: dict[str, Any]
    workflow_hash: str

    @property
    def name(self) -> str:
        """The variant's name, or ``base``."""
        return self.variant or BASE

    @property
    def key(self) -> str:
        """The partition key of this member's version."""
        return version_key(self.workflow_hash)


def family(workflow: Mapping[str, Any], variants: Mapping[str, NodeOverrides]) -> list[Member]:
    """The workflow (first) and each of its variants, in the order the benchmark names them."""
    base = Member(None, dict(workflow), workflow_hash(workflow))
    varied = [
        Member(name, applied, workflow_hash(applied))
        for name, overrides in variants.items()
        for applied in [apply_variant(workflow, overrides)]
    ]
    return [base, *varied]


def same_workflow_problems(
    workflow: Mapping[str, Any], variants: Mapping[str, NodeOverrides]
) -> list[str]:
    """Variants that are the workflow itself, or one another: they would share one version."""
    by_hash: dict[str, list[str]] = defaultdict(list)
    for member in family(workflow, variants):
        by_hash[member.workflow_hash].append(member.name)
    problems = []
    for names in by_hash.values():
        if len(names) < 2:
            continue
        if names[0] == BASE:
            problems.append(
                f"variant {', '.join(names[1:])} changes nothing: it is the workflow itself"
            )
        else:
            problems.append(f"variants {', '.join(names)} are the same workflow")
    return problems
