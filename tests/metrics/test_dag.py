import pytest
from pydantic import ValidationError

from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.metrics.dag import DagGraph

NODES = {
    "extract": {
        "type": "task",
        "instructions": "Extract the total.",
        "outputLabel": "Total",
        "evaluationParams": ["ACTUAL_OUTPUT"],
        "children": ["tone"],
    },
    "tone": {
        "type": "nonBinaryJudgement",
        "criteria": "How concise?",
        "children": ["short", "long"],
    },
    "short": {"type": "verdict", "verdict": "concise", "child": "correct"},
    "long": {"type": "verdict", "verdict": "verbose", "score": 4},
    "correct": {
        "type": "binaryJudgement",
        "criteria": "Right total?",
        "evaluationParams": ["EXPECTED_OUTPUT"],
        "children": ["yes", "no"],
    },
    "yes": {"type": "verdict", "verdict": True, "score": 10},
    "no": {"type": "verdict", "verdict": False, "score": 0},
}


def dag(nodes, slug="dag"):
    return CATALOG[slug].config_model.model_validate(
        {"metric": slug, "name": "d", "dag": {"nodes": nodes}}
    )


def test_a_valid_graph_converts_to_deepevals_document_and_names_its_fields():
    config = dag(NODES)
    assert config.fields_from_options() == ("actual_output", "expected_output")
    document = config.dag.to_deepeval_dict()
    assert document["nodes"]["extract"] == {
        "type": "TaskNode",
        "instructions": "Extract the total.",
        "output_label": "Total",
        "evaluation_params": ["actual_output"],
        "children": ["tone"],
    }
    assert document["nodes"]["short"] == {
        "type": "VerdictNode",
        "verdict": "concise",
        "child": {"type": "node", "ref": "correct"},
    }
    assert document["nodes"]["yes"] == {"type": "VerdictNode", "verdict": True, "score": 10}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"tone": {**NODES["tone"], "children": ["short", "ghost"]}},
            "node 'tone' refers to unknown node 'ghost'",
        ),
        (
            {"no": {"type": "verdict", "verdict": True, "score": 0}},
            "binary judgement 'correct' needs one true and one false verdict",
        ),
        (
            {"long": {"type": "verdict", "verdict": "concise", "score": 4}},
            "needs verdicts with distinct text labels",
        ),
        (
            {"yes": {"type": "verdict", "verdict": True}},
            "a verdict node needs exactly one of 'score' or 'child'",
        ),
        ({"yes": {"type": "verdict", "verdict": True, "score": 11}}, "less than or equal to 10"),
        ({"extract": {**NODES["extract"], "outputLabel": None}}, "a task node needs outputLabel"),
        (
            {"short": {"type": "verdict", "verdict": "concise", "child": "extract"}},
            "the graph has a cycle",
        ),
        (
            {"extract": {**NODES["extract"], "evaluationParams": ["CONTENT"]}},
            "evaluationParams ['CONTENT'] not allowed",
        ),
        (
            {"extract": {**NODES["extract"], "turnWindow": [0, 2]}},
            "turnWindow is for conversational DAGs only",
        ),
        (
            {"correct": {**NODES["correct"], "children": ["yes", "extract"]}},
            "must have only verdict children",
        ),
    ],
)
def test_broken_graphs_are_refused_with_the_node_named(change, message):
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dag({**NODES, **change})


def test_conversational_graphs_take_turn_windows_and_turn_params():
    nodes = {
        "ask": {
            "type": "binaryJudgement",
            "criteria": "All answered?",
            "evaluationParams": ["CONTENT", "ROLE"],
            "turnWindow": [0, 3],
            "children": ["y", "n"],
        },
        "y": {"type": "verdict", "verdict": True, "score": 10},
        "n": {"type": "verdict", "verdict": False, "score": 0},
    }
    config = dag(nodes, "conversational_dag")
    assert config.dag.to_deepeval_dict()["nodes"]["ask"]["turn_window"] == [0, 3]
    with pytest.raises(ValidationError, match="start < end"):
        dag({**nodes, "ask": {**nodes["ask"], "turnWindow": [2, 2]}}, "conversational_dag")
    with pytest.raises(ValidationError, match="not allowed"):
        dag({**nodes, "ask": {**nodes["ask"], "evaluationParams": ["INPUT"]}}, "conversational_dag")


def test_graph_model_is_reusable_on_its_own():
    assert set(DagGraph.model_validate({"nodes": NODES}).nodes) == set(NODES)
