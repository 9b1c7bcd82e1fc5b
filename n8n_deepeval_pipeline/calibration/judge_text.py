"""What of a judge metric is text that an optimiser may rewrite, and the metric with a new text.

Only the words the benchmark file gives the judge can be rewritten:

- **G-Eval** and **Conversational G-Eval**: the ``criteria`` (the judge writes its own
  evaluation steps from them), or, where the file gives ``evaluationSteps`` instead, the
  steps, one per line;
- **DAG** and **Conversational DAG**: each task node's ``instructions`` and each judgement
  node's ``criteria``, written as one text with a ``[node id] instructions|criteria``
  header before each. The graph itself (its nodes, children, verdicts, scores, the fields
  each node reads) is the metric's logic, not its wording: it stays as it is, and a
  rewrite that drops, adds or renames a section is not a metric at all.

Everything else is kept: evaluation params, rubric, threshold, strict mode, the judge.
Every other judge-backed metric asks with DeepEval's own templates, whose words are not in
the file: there is nothing of it to rewrite (its threshold can be fitted instead), and an
Arena G-Eval picks a winner between two runs, which a person's pass or fail of one run
cannot check.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.metrics.catalog import entry_for
from n8n_deepeval_pipeline.metrics.custom import (
    ArenaGEvalConfig,
    ConversationalDagConfig,
    ConversationalGEvalConfig,
    DagConfig,
    GEvalConfig,
)
from n8n_deepeval_pipeline.metrics.dag import DagGraph
from n8n_deepeval_pipeline.metrics.options import MetricConfig

TextKind = Literal["criteria", "evaluation_steps", "dag_nodes"]
_CRITERIA_METRICS = (GEvalConfig, ConversationalGEvalConfig)
_GRAPH_METRICS = (DagConfig, ConversationalDagConfig)
_HEADER = re.compile(r"^\[(?P<node>[^\]\n]+)\] (?P<field>instructions|criteria)[ \t]*$", re.M)


class NotAlignable(ValueError):
    """A metric whose judge has no text of the file's to rewrite (the message says why)."""


class CandidateTextError(ValueError):
    """A rewritten text that does not make the metric again (the message says why)."""


class JudgeText(BaseModel):
    """A metric's rewritable text, and what it is."""

    model_config = ConfigDict(frozen=True)

    metric: str  # the metric's label
    kind: TextKind
    text: str

    @property
    def what(self) -> str:
        """The text's name, as the report says it."""
        return {
            "criteria": "criteria",
            "evaluation_steps": "evaluation steps",
            "dag_nodes": "node instructions and criteria",
        }[self.kind]


def judge_text(config: MetricConfig) -> JudgeText:
    """The text of ``config`` an optimiser may rewrite (``NotAlignable``: none, and why)."""
    label = config.result_label()
    if isinstance(config, _CRITERIA_METRICS):
        if config.evaluation_steps is not None:
            return JudgeText(
                metric=label, kind="evaluation_steps", text="\n".join(config.evaluation_steps)
            )
        return JudgeText(metric=label, kind="criteria", text=config.criteria or "")
    if isinstance(config, _GRAPH_METRICS):
        return JudgeText(metric=label, kind="dag_nodes", text=_graph_text(config.dag))
    raise NotAlignable(f"{label}: {_why_not(config)}")


def _why_not(config: MetricConfig) -> str:
    entry = entry_for(config)
    if isinstance(config, ArenaGEvalConfig):
        return (
            "an Arena G-Eval picks the better of two runs; a label passes or fails one run, "
            "so there is nothing to agree with"
        )
    if not entry.needs_judge:
        return f"{entry.name} calls no judge: there is no judge to align"
    return (
        f"{entry.name} asks its judge with DeepEval's own prompts, not with text of the "
        "benchmark file: only G-Eval and DAG metrics have criteria to rewrite (--adopt fits "
        "its threshold instead)"
    )


def _rewritable(graph: DagGraph) -> list[tuple[str, str, str]]:
    """(node id, field, text) of every task and judgement node, in the file's order."""
    found = []
    for node_id, node in graph.nodes.items():
        if node.type == "task":
            found.append((node_id, "instructions", node.instructions or ""))
        elif node.type != "verdict":
            found.append((node_id, "criteria", node.criteria or ""))
    return found


def _graph_text(graph: DagGraph) -> str:
    return "\n\n".join(f"[{node}] {field}\n{text}" for node, field, text in _rewritable(graph))


def _graph_with_text(graph: DagGraph, text: str) -> DagGraph:
    """The graph with each section's text at its node (``CandidateTextError``: sections changed)."""
    expected = [(node, field) for node, field, _ in _rewritable(graph)]
    headers = list(_HEADER.finditer(text))
    found = [(match["node"], match["field"]) for match in headers]
    if found != expected:
        wanted = ", ".join(f"[{node}] {field}" for node, field in expected)
        raise CandidateTextError(f"the text must keep the sections {wanted}, in that order")
    ends = [match.start() for match in headers[1:]] + [len(text)]
    nodes = dict(graph.nodes)
    for match, end in zip(headers, ends, strict=True):
        words = text[match.end() : end].strip()
        if not words:
            raise CandidateTextError(f"the section [{match['node']}] is empty")
        node = nodes[match["node"]]
        nodes[match["node"]] = node.model_copy(update={match["field"]: words})
    return DagGraph(nodes=nodes)


def with_text(config: MetricConfig, text: str) -> MetricConfig:
    """``config`` with its rewritable text replaced by ``text``, everything else kept."""
    kind = judge_text(config).kind
    if kind == "criteria":
        if not text.strip():
            raise CandidateTextError("the criteria are empty")
        return config.model_copy(update={"criteria": text.strip()})
    if kind == "evaluation_steps":
        steps = [line.strip() for line in text.splitlines() if line.strip()]
        if not steps:
            raise CandidateTextError("no evaluation step is left")
        return config.model_copy(update={"evaluation_steps": steps})
    assert isinstance(config, _GRAPH_METRICS)
    return config.model_copy(update={"dag": _graph_with_text(config.dag, text)})
