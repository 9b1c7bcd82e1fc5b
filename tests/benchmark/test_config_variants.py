"""Variants and head-to-head metrics in a benchmark file."""

from n8n_deepeval_pipeline import load_benchmark
from tests.benchmark.test_config import problems, with_changes, write

WORKFLOW_TARGET = {
    "type": "n8n_workflow",
    "startNodeName": "AI Agent",
    "endNodeName": "AI Agent",
    "variants": {
        "mini": {"OpenAI Chat Model": {"model": "gpt-4o-mini"}},
        "terse": {"AI Agent": {"options.systemMessage": "One sentence."}},
    },
    "prices": {"my-model": {"input": 0.2, "output": 0.8}},
}
ARENA = {
    "metric": "arena_g_eval",
    "name": "Helpful",
    "criteria": "Which answer helps the user more?",
    "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"],
}


def test_a_head_to_head_metric_decides_no_run_and_names_its_opponent(tmp_path):
    document = with_changes(
        target=WORKFLOW_TARGET,
        metrics=[{"metric": "exact_match"}, {**ARENA, "against": "mini"}],
    )
    benchmark = load_benchmark(write(tmp_path, document))
    assert benchmark.metric_labels == ["exact_match", "Helpful"]
    assert benchmark.counted_labels == ["exact_match"]
    assert list(benchmark.variants) == ["mini", "terse"]
    assert benchmark.metrics[1].against == "mini"
    assert benchmark.target.prices["my-model"].output == 0.8


def test_a_head_to_head_metric_needs_variants_and_a_known_opponent(tmp_path):
    assert problems(tmp_path, with_changes(metrics=[ARENA])) == [
        "(top level): Value error, metric 'Helpful' judges variants head to head: give the "
        "n8n_workflow target variants"
    ]
    unknown = with_changes(target=WORKFLOW_TARGET, metrics=[{**ARENA, "against": "fast"}])
    assert problems(tmp_path, unknown) == [
        "(top level): Value error, metric 'Helpful': against 'fast' is not one of base, mini, terse"
    ]
    counted = with_changes(
        target=WORKFLOW_TARGET, metrics=[ARENA], aggregate={"metrics": ["Helpful"]}
    )
    assert problems(tmp_path, counted) == [
        "(top level): Value error, aggregate.metrics: 'Helpful' judges one variant against "
        "another and decides no run"
    ]


def test_an_arena_compares_what_differs_between_runs(tmp_path):
    document = with_changes(
        target=WORKFLOW_TARGET,
        metrics=[{**ARENA, "evaluationParams": ["INPUT", "EXPECTED_OUTPUT"]}],
    )
    (problem,) = problems(tmp_path, document)
    assert "evaluationParams needs ACTUAL_OUTPUT or TOOLS_CALLED" in problem
    assert problem.startswith("metrics[0]")
