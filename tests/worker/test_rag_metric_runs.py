"""DeepEval's RAG metrics through their real DeepEval classes: built with the config's
options, run in a worker with the dry-run judge on a RAG FAQ bot's run, and answered
with missing_input when the retrieval context or the expected output is absent."""

import inspect

import pytest

from n8n_deepeval_pipeline import CATALOG, EvaluationItem, JudgeSpec
from n8n_deepeval_pipeline.judging.judge import PipelineJudge, UsageCounter
from n8n_deepeval_pipeline.metrics.options import RUNTIME_OPTIONS
from n8n_deepeval_pipeline.worker.metric_builder import construct_metric, import_implementation
from n8n_deepeval_pipeline.worker.test_case_builder import FIELD_SOURCES
from tests.conftest import evaluate_all, make_task
from tests.metrics.test_rag import RAG

pytestmark = pytest.mark.slow

SLUGS = sorted(RAG)
# A FAQ bot's run: the passages its vector-store tool returned are the retrieval context.
FAQ = EvaluationItem(
    input="How long do I have to return a tent?",
    actual_output="You can return a tent within 30 days, unused and with the receipt.",
    expected_output="Tents can be returned within 30 days if unused, with proof of purchase.",
    retrieval_context=[
        "Returns: unused items can be returned within 30 days with a receipt.",
        "Shipping is free on orders over 50 dollars.",
    ],
)


def rag_config(slug, **options):
    return CATALOG[slug].config_model.model_validate({"metric": slug, **options})


def test_every_rag_option_is_a_constructor_parameter_of_its_deepeval_class():
    for slug in SLUGS:
        entry = CATALOG[slug]
        accepted = inspect.signature(import_implementation(entry).__init__).parameters
        options = set(entry.config_model.model_fields) - RUNTIME_OPTIONS
        assert options <= set(accepted), (slug, options - set(accepted))


def test_the_builder_passes_the_camel_case_options_to_the_deepeval_instance():
    judge = PipelineJudge(JudgeSpec(), UsageCounter())
    options = {"truthsExtractionLimit": 3, "penalizeAmbiguousClaims": True, "includeReason": False}
    metric = construct_metric(CATALOG["faithfulness"], rag_config("faithfulness", **options), judge)
    assert type(metric).__name__ == "FaithfulnessMetric"
    assert (metric.truths_extraction_limit, metric.penalize_ambiguous_claims) == (3, True)
    assert (metric.include_reason, metric.model) == (False, judge)
    strict = construct_metric(
        CATALOG["contextual_recall"], rag_config("contextual_recall", strictMode=True), judge
    )
    assert (type(strict).__name__, strict.strict_mode, strict.threshold) == (
        "ContextualRecallMetric",
        True,
        1,
    )


def test_each_rag_metric_runs_in_a_worker_and_gives_a_judged_score(dry_run_pool):
    configs = [rag_config(slug) for slug in SLUGS]
    configs.append(
        rag_config("faithfulness", truthsExtractionLimit=1, penalizeAmbiguousClaims=True)
    )
    configs.append(rag_config("answer_relevancy", strictMode=True, label="relevant_strict"))
    tasks = [make_task(c.model_dump(), FAQ, i) for i, c in enumerate(configs)]
    for config, result in zip(configs, evaluate_all(dry_run_pool, tasks), strict=True):
        assert result.error is None and result.error_kind is None, (config, result.error)
        assert 0.0 <= result.score <= 1.0, (config, result.score)
        assert result.reason and result.judge_calls > 0, config
    assert result.score in {0.0, 1.0}  # strict mode scores 1 or 0


def test_an_empty_retrieval_context_is_judged_not_missing(dry_run_pool):
    empty = FAQ.model_copy(update={"retrieval_context": []})
    readers = [slug for slug in SLUGS if "retrieval_context" in CATALOG[slug].required_fields]
    tasks = [make_task({"metric": slug}, empty, i) for i, slug in enumerate(readers)]
    for slug, result in zip(readers, evaluate_all(dry_run_pool, tasks), strict=True):
        assert result.error is None and 0.0 <= result.score <= 1.0, (slug, result.error)


@pytest.mark.parametrize(
    ("field", "update"),
    [
        ("retrieval_context", {"retrieval_context": None}),
        ("expected_output", {"expected_output": None}),
        ("actual_output", {"actual_output": None}),
        ("input", {"input": None}),
    ],
)
def test_a_missing_input_gives_missing_input_naming_the_field(dry_run_pool, field, update):
    readers = [slug for slug in SLUGS if field in CATALOG[slug].required_fields]
    others = [slug for slug in SLUGS if slug not in readers]
    item = FAQ.model_copy(update=update)
    tasks = [make_task({"metric": slug}, item, i) for i, slug in enumerate(readers + others)]
    results = evaluate_all(dry_run_pool, tasks)
    for slug, result in zip(readers, results[: len(readers)], strict=True):
        assert result.error_kind == "missing_input", (slug, result)
        assert result.error == f"missing input: {FIELD_SOURCES[field]}", slug
        assert result.judge_calls == 0, slug  # refused before any judge call
    # A metric DeepEval does not ask the field of is still judged without it.
    for slug, result in zip(others, results[len(readers) :], strict=True):
        assert result.error is None, (slug, field, result.error)
