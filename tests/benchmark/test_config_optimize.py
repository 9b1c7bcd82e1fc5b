"""The optimize section: defaults, the algorithm's options, field-precise refusals."""

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema
from tests.benchmark.test_config import problems, with_changes, write

TARGET = {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format"}
METRICS = [
    {"metric": "exact_match"},
    {"metric": "answer_relevancy", "label": "relevant"},
]


def test_defaults_optimise_the_deciding_metrics_with_gepa(tmp_path):
    document = with_changes(target=TARGET, metrics=METRICS, optimize={})
    benchmark = load_benchmark(write(tmp_path, document))
    config = benchmark.optimize
    assert (config.algorithm, config.node, config.parameter) == ("gepa", None, None)
    assert config.options.model_dump() == {
        "iterations": 5,
        "minibatch_size": 8,
        "pareto_size": 3,
        "patience": 3,
        "tie_breaker": "prefer_child",
    }  # fmt: skip  (DeepEval's GEPA defaults)
    assert (config.split.held_out, config.split.seed, config.adopt_when) == (0.3, 0, "significant")
    assert benchmark.optimized_labels == ["exact_match", "relevant"]


def test_the_chosen_algorithms_options_and_metrics(tmp_path):
    budget = {"workflowCalls": 50, "costUsd": 1.5}
    optimize = {"algorithm": "copro", "copro": {"depth": 2, "breadth": 3},
                "metrics": ["relevant"], "budget": budget}  # fmt: skip
    benchmark = load_benchmark(write(tmp_path, with_changes(target=TARGET, metrics=METRICS,
                                                            optimize=optimize)))  # fmt: skip
    assert benchmark.optimize.options.model_dump() == {
        "depth": 2, "breadth": 3, "minibatch_size": 25}  # fmt: skip
    assert benchmark.optimized_labels == ["relevant"]
    assert benchmark.optimize.budget.workflow_calls == 50


def test_mistakes_are_named_by_field(tmp_path):
    def said(optimize, **changes):
        document = with_changes(**{"target": TARGET, "metrics": METRICS, "optimize": optimize,
                                   **changes})  # fmt: skip
        return problems(tmp_path, document)

    assert said({"gepa": {"iterations": 0}}) == [
        "optimize.gepa.iterations: Input should be greater than or equal to 1"
    ]
    assert said({"algorithm": "copro", "gepa": {"iterations": 3}}) == [
        "optimize: Value error, gepa: options of another algorithm than 'copro'; set "
        "algorithm: gepa, or remove them"
    ]
    assert said({"algorithm": "random_search"})[0].startswith("optimize.algorithm: Input should be")
    assert said({"split": {"heldOut": 1}}) == [
        "optimize.split.heldOut: Input should be less than 1"
    ]
    assert said({"metrics": ["tone"]}) == [
        "(top level): Value error, optimize.metrics names unknown metric 'tone'; known: "
        "['exact_match', 'relevant']"
    ]
    assert said({}, target={"type": "recorded", "outputs": "outputs.jsonl"}) == [
        "(top level): Value error, optimize: candidates are set on the workflow's harness "
        "copy: use target type n8n_workflow"
    ]


def test_the_published_schema_describes_the_section():
    schema = benchmark_json_schema()
    section = schema["$defs"]["OptimizeConfig"]["properties"]
    assert set(section) == {
        "node", "parameter", "algorithm", "gepa", "miprov2", "copro", "simba",
        "metrics", "split", "budget", "model", "concurrency", "adoptWhen"}  # fmt: skip
    assert section["algorithm"]["enum"] == ["gepa", "miprov2", "copro", "simba"]
    assert schema["$defs"]["GepaOptions"]["properties"]["minibatchSize"]["default"] == 8
