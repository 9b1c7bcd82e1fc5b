"""DeepEval's RAG metrics in the catalog: camelCase options from YAML, DeepEval's own
required fields, bad options refused with the option named, and "did you mean" for a
mistyped slug."""

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from n8n_deepeval_pipeline import CATALOG, BenchmarkConfigError
from n8n_deepeval_pipeline.benchmark.config import parse_benchmark
from n8n_deepeval_pipeline.metrics.catalog import suggest_slug

# slug → (DeepEval class, the fields DeepEval 4.3.1 lists in its _required_params)
RAG = {
    "answer_relevancy": ("AnswerRelevancyMetric", ("input", "actual_output")),
    "faithfulness": ("FaithfulnessMetric", ("input", "actual_output", "retrieval_context")),
    "contextual_precision": (
        "ContextualPrecisionMetric",
        ("input", "expected_output", "retrieval_context"),
    ),
    "contextual_recall": (
        "ContextualRecallMetric",
        ("input", "expected_output", "retrieval_context"),
    ),
    "contextual_relevancy": ("ContextualRelevancyMetric", ("input", "retrieval_context")),
}
BENCHMARK = {
    "name": "faq_bot",
    "workflow": "workflow.json",
    "dataset": {"path": "rows.csv"},
    "target": {"type": "recorded", "outputs": "outputs.jsonl"},
}


def validate(text: str):
    """A metric config as a benchmark file writes it."""
    options = yaml.safe_load(text)
    return CATALOG[options["metric"]].config_model.model_validate(options)


def benchmark_problems(*metrics: dict) -> list[str]:
    with pytest.raises(BenchmarkConfigError) as caught:
        parse_benchmark({**BENCHMARK, "metrics": list(metrics)}, Path("/tmp/faq.yaml"))
    return caught.value.problems


@pytest.mark.parametrize("slug", sorted(RAG))
def test_each_rag_metric_is_a_judged_deepeval_metric_needing_deepevals_fields(slug):
    entry = CATALOG[slug]
    implementation, fields = RAG[slug]
    assert entry.category == "rag"
    assert entry.implementation == f"deepeval.metrics.{implementation}"
    assert entry.needs_judge and not (entry.needs_trace or entry.needs_turns)
    assert entry.direction == "higher_is_better" and not entry.complement_score
    assert entry.required_fields == fields
    assert entry.fields_needed(entry.config_model(metric=slug)) == fields


@pytest.mark.parametrize("slug", sorted(RAG))
def test_common_options_validate_from_camel_case_yaml(slug):
    config = validate(
        f"""
        metric: {slug}
        label: {slug}_strict
        threshold: 0.7
        strictMode: true
        includeReason: false
        asyncMode: false
        verboseMode: true
        """
    )
    assert (config.threshold, config.strict_mode, config.include_reason) == (0.7, True, False)
    assert (config.async_mode, config.verbose_mode) == (False, True)
    assert config.result_label() == f"{slug}_strict"
    defaults = CATALOG[slug].config_model(metric=slug).model_dump(by_alias=True)
    assert (defaults["threshold"], defaults["includeReason"], defaults["asyncMode"]) == (
        0.5,
        True,
        True,
    )


def test_faithfulness_takes_deepevals_truth_limit_and_ambiguity_penalty():
    config = validate(
        """
        metric: faithfulness
        truthsExtractionLimit: 5
        penalizeAmbiguousClaims: true
        """
    )
    assert (config.truths_extraction_limit, config.penalize_ambiguous_claims) == (5, True)
    defaults = validate("metric: faithfulness").model_dump(by_alias=True)
    assert (defaults["truthsExtractionLimit"], defaults["penalizeAmbiguousClaims"]) == (None, False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"metric": "faithfulness", "truthsExtractionLimit": 0},
            "metrics[0] (faithfulness).truthsExtractionLimit: Input should be greater than or "
            "equal to 1",
        ),
        (
            {"metric": "faithfulness", "penalizeAmbiguousClaims": "sometimes"},
            "metrics[0] (faithfulness).penalizeAmbiguousClaims: Input should be a valid boolean",
        ),
        (
            {"metric": "answer_relevancy", "threshold": 1.5},
            "metrics[0] (answer_relevancy).threshold: Input should be less than or equal to 1",
        ),
        (
            # Only Faithfulness has the option in DeepEval: elsewhere it is a typo.
            {"metric": "contextual_precision", "penalizeAmbiguousClaims": True},
            "metrics[0] (contextual_precision).penalizeAmbiguousClaims: unknown field",
        ),
        (
            {"metric": "contextual_recall", "include_reasons": False},
            "metrics[0] (contextual_recall).include_reasons: unknown field",
        ),
        (
            # A Python class cannot be named in a benchmark file.
            {"metric": "contextual_relevancy", "evaluationTemplate": "my.Template"},
            "metrics[0] (contextual_relevancy).evaluationTemplate: unknown field",
        ),
    ],
)
def test_bad_options_are_refused_with_metric_and_option_named(options, message):
    (problem,) = benchmark_problems(options)
    assert problem.startswith(message), problem


def test_bad_options_fail_the_config_model_alone_too():
    with pytest.raises(ValidationError) as caught:
        validate("{metric: faithfulness, truthsExtractionLimit: -1}")
    assert caught.value.errors()[0]["loc"] == ("truthsExtractionLimit",)


def test_a_mistyped_slug_gets_the_closest_one_at_the_metric_field():
    problems = benchmark_problems(
        {"metric": "bias"}, {"metric": "bias"}, {"metric": "faithfullness"}
    )
    assert problems == [
        "metrics[2].metric: unknown metric 'faithfullness'; did you mean 'faithfulness'? "
        "(n8n-deepeval metrics lists all)"
    ]


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("faithfullness", "faithfulness"),
        ("answerRelevancy", "answer_relevancy"),
        ("Answer Relevancy", "answer_relevancy"),
        ("contextual_precission", "contextual_precision"),
        ("ContextualRecallMetric", "contextual_recall"),
        ("G-Eval", "g_eval"),
        ("PIILeakage", "pii_leakage"),
    ],
)
def test_the_suggestion_folds_camel_case_display_names_and_typos(name, slug):
    assert suggest_slug(name) == slug


def test_a_slug_like_no_other_lists_the_valid_ones():
    (problem,) = benchmark_problems({"metric": "ragas"})
    assert problem.startswith("metrics[0].metric: unknown metric 'ragas'; expected one of: ")
    assert "'" not in problem.split("expected one of: ")[1]
    assert set(problem.split("expected one of: ")[1].split(", ")) == set(CATALOG)
