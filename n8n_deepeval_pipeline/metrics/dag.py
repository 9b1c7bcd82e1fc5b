"""DAG and Conversational DAG graphs written in a benchmark file.

```yaml
dag:
  nodes:
    extract: {type: task, instructions: Extract the total., outputLabel: Total,
              evaluationParams: [ACTUAL_OUTPUT], children: [correct]}
    correct: {type: binaryJudgement, criteria: Is it the expected total?,
              evaluationParams: [EXPECTED_OUTPUT], children: [right, wrong]}
    right: {type: verdict, verdict: true, score: 10}
    wrong: {type: verdict, verdict: false, score: 0}
```
Nodes are ``task``, ``binaryJudgement``, ``nonBinaryJudgement`` and ``verdict``; a
verdict has a ``score`` (0–10) or a ``child`` node id. Conversational graphs may give
task and judgement nodes a ``turnWindow: [start, end]``. The whole graph is checked
here (ids, children, verdict sets, cycles, parameters), before any worker sees it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

SINGLE_TURN_DAG_PARAMS = frozenset(
    {"INPUT", "ACTUAL_OUTPUT", "EXPECTED_OUTPUT", "CONTEXT", "RETRIEVAL_CONTEXT",
     "TOOLS_CALLED", "EXPECTED_TOOLS"}
)  # fmt: skip
MULTI_TURN_DAG_PARAMS = frozenset({"ROLE", "CONTENT", "RETRIEVAL_CONTEXT", "TOOLS_CALLED"})
_DEEPEVAL_TYPES = {
    "task": "TaskNode",
    "binaryJudgement": "BinaryJudgementNode",
    "nonBinaryJudgement": "NonBinaryJudgementNode",
    "verdict": "VerdictNode",
}


class DagNode(BaseModel):
    """One node; which fields apply depends on ``type``."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    type: Literal["task", "binaryJudgement", "nonBinaryJudgement", "verdict"] = Field(
        description="task (the judge extracts something), binaryJudgement (yes or no), "
        "nonBinaryJudgement (one of its verdicts) or verdict (an outcome)."
    )
    instructions: str | None = Field(default=None, description="A task's instructions.")
    output_label: str | None = Field(
        default=None, description="A task's name for what it extracted, for its children."
    )
    criteria: str | None = Field(default=None, description="A judgement's question.")
    label: str | None = Field(default=None, description="A name for the node (DeepEval's).")
    evaluation_params: list[str] | None = Field(
        default=None,
        description="The test-case fields (or, in a conversational DAG, turn fields) the "
        "node reads.",
    )
    children: list[str] = Field(
        default_factory=list, description="The ids of the nodes after a task or judgement."
    )
    turn_window: tuple[int, int] | None = Field(
        default=None, description="Conversational DAG: [start, end], the turns the node reads."
    )
    verdict: bool | str | None = Field(
        default=None,
        description="A verdict's outcome: true or false under a binary judgement, a word "
        "under a non-binary one.",
    )
    score: int | None = Field(
        default=None, ge=0, le=10, description="A verdict's score, 0-10 (or give child)."
    )
    child: str | None = Field(
        default=None, description="A verdict's next node, instead of a score."
    )

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> DagNode:
        required = {
            "task": ("instructions", "output_label"),
            "binaryJudgement": ("criteria",),
            "nonBinaryJudgement": ("criteria",),
            "verdict": ("verdict",),
        }[self.type]
        missing = [to_camel(name) for name in required if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.type} node needs {', '.join(missing)}")
        if self.type == "verdict" and (self.score is None) == (self.child is None):
            raise ValueError("a verdict node needs exactly one of 'score' or 'child'")
        if self.type == "verdict" and self.children:
            raise ValueError("a verdict node has no 'children' (use 'child')")
        if self.type != "verdict" and not self.children:
            raise ValueError(f"a {self.type} node needs children")
        return self


class DagGraph(BaseModel):
    """A decision graph: node id → node."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: dict[str, DagNode] = Field(min_length=1, description="Node id → node.")

    @model_validator(mode="after")
    def _well_formed(self) -> DagGraph:
        for node_id, node in self.nodes.items():
            for ref in [*node.children, *([node.child] if node.child else [])]:
                if ref not in self.nodes:
                    raise ValueError(f"node {node_id!r} refers to unknown node {ref!r}")
            kinds = [self.nodes[ref].type for ref in node.children]
            if node.type in ("binaryJudgement", "nonBinaryJudgement") and set(kinds) != {"verdict"}:
                raise ValueError(f"judgement node {node_id!r} must have only verdict children")
            if node.type == "binaryJudgement":
                verdicts = sorted(str(self.nodes[ref].verdict) for ref in node.children)
                if verdicts != ["False", "True"]:
                    raise ValueError(
                        f"binary judgement {node_id!r} needs one true and one false verdict"
                    )
            if node.type == "nonBinaryJudgement":
                labels = [self.nodes[ref].verdict for ref in node.children]
                if not all(isinstance(label, str) for label in labels) or len(set(labels)) != len(
                    labels
                ):
                    raise ValueError(
                        f"non-binary judgement {node_id!r} needs verdicts with distinct text labels"
                    )
        self._check_acyclic()
        return self

    def _check_acyclic(self) -> None:
        state: dict[str, str] = {}

        def visit(node_id: str) -> None:
            if state.get(node_id) == "open":
                raise ValueError(f"the graph has a cycle through node {node_id!r}")
            if state.get(node_id) == "done":
                return
            state[node_id] = "open"
            node = self.nodes[node_id]
            for ref in [*node.children, *([node.child] if node.child else [])]:
                visit(ref)
            state[node_id] = "done"

        for node_id in self.nodes:
            visit(node_id)

    def check_params(self, allowed: frozenset[str], conversational: bool) -> None:
        """Evaluation params must suit the graph kind; turn windows only in conversations."""
        for node_id, node in self.nodes.items():
            unknown = sorted(set(node.evaluation_params or []) - allowed)
            if unknown:
                raise ValueError(
                    f"node {node_id!r}: evaluationParams {unknown} not allowed; "
                    f"use {sorted(allowed)}"
                )
            if node.turn_window is not None and not conversational:
                raise ValueError(f"node {node_id!r}: turnWindow is for conversational DAGs only")
            if node.turn_window is not None and not 0 <= node.turn_window[0] < node.turn_window[1]:
                raise ValueError(f"node {node_id!r}: turnWindow must be [start, end], start < end")

    def evaluation_params(self) -> set[str]:
        """Every evaluation param any node reads."""
        return {param for node in self.nodes.values() for param in node.evaluation_params or []}

    def to_deepeval_dict(self) -> dict[str, Any]:
        """The document ``DeepAcyclicGraph.from_dict`` reads."""
        nodes: dict[str, Any] = {}
        for node_id, node in self.nodes.items():
            spec: dict[str, Any] = {"type": _DEEPEVAL_TYPES[node.type]}
            if node.type == "verdict":
                spec["verdict"] = node.verdict
                if node.score is not None:
                    spec["score"] = node.score
                else:
                    spec["child"] = {"type": "node", "ref": node.child}
            else:
                spec.update(
                    {
                        key: value
                        for key, value in {
                            "instructions": node.instructions,
                            "output_label": node.output_label,
                            "criteria": node.criteria,
                            "label": node.label,
                            "turn_window": list(node.turn_window) if node.turn_window else None,
                            "evaluation_params": [p.lower() for p in node.evaluation_params]
                            if node.evaluation_params
                            else None,
                        }.items()
                        if value is not None
                    }
                )
                spec["children"] = list(node.children)
            nodes[node_id] = spec
        return {"nodes": nodes}
