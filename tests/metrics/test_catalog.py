"""The catalog as data: every seed metric, its defaults, direction and required options."""

import pytest
from pydantic import ValidationError

from n8n_deepeval_pipeline.metrics.catalog import CATALOG

SEED_METRICS = {
    "custom": ["g_eval", "dag", "conversational_g_eval", "conversational_dag"],
    "agentic": [
        "task_completion",
        "step_efficiency",
        "argument_correctness",
        "tool_correctness",
        "plan_adherence",
        "plan_quality",
    ],
    "multi-turn": [
        "turn_relevancy",
        "role_adherence",
        "knowledge_retention",
        "conversation_completeness",
        "goal_accuracy",
        "tool_use",
        "topic_adherence",
        "turn_faithfulness",
        "turn_contextual_precision",
        "turn_contextual_recall",
        "turn_contextual_relevancy",
    ],
    "safety": ["bias", "toxicity", "non_advice", "misuse", "pii_leakage", "role_violation"],
    "others": ["summarization", "prompt_alignment", "hallucination"],
    "community": ["citation_faithfulness", "agent_loop_detection", "tool_permission"],
}
EXTRA = {
    "rag": [
        "answer_relevancy",
        "faithfulness",
        "contextual_precision",
        "contextual_recall",
        "contextual_relevancy",
    ],
    "others": ["exact_match", "pattern_match", "json_correctness"],
    "n8n": ["correctness", "helpfulness", "string_similarity", "categorization", "tools_used"],
    "custom": ["arena_g_eval"],  # head to head between variants
    "mcp": ["mcp_use", "mcp_task_completion", "multi_turn_mcp_use"],
    "images": [
        "text_to_image",
        "image_editing",
        "image_coherence",
        "image_helpfulness",
        "image_reference",
    ],
}


def test_every_seed_metric_and_the_extras_are_in_their_category():
    seed = [slug for slugs in SEED_METRICS.values() for slug in slugs]
    assert len(seed) == 33
    for category, slugs in [*SEED_METRICS.items(), *EXTRA.items()]:
        for slug in slugs:
            assert CATALOG[slug].category == category, slug
    assert len(CATALOG) == 33 + 8 + 5 + 1 + 3 + 5


def test_directions_and_threshold_defaults_follow_the_seed():
    lower = {slug for slug, entry in CATALOG.items() if entry.direction == "lower_is_better"}
    assert lower == {"bias", "toxicity", "hallucination", "misuse"}
    defaults = {
        slug: entry.config_model.model_fields["threshold"].default
        for slug, entry in CATALOG.items()
    }
    assert defaults["citation_faithfulness"] == 1.0
    assert defaults["tool_permission"] == 1.0
    assert {defaults[s] for s in SEED_METRICS["multi-turn"] + SEED_METRICS["safety"]} == {0.5}


def test_seed_option_names_and_defaults():
    def defaults(slug, **options):
        config = CATALOG[slug].config_model.model_validate({"metric": slug, **options})
        return config.model_dump(by_alias=True)

    assert defaults("turn_relevancy")["windowSize"] == 10
    assert defaults("conversation_completeness")["windowSize"] == 3
    faithfulness = defaults("turn_faithfulness")
    assert (faithfulness["penalizeAmbiguousClaims"], faithfulness["truthsExtractionLimit"]) == (
        False,
        None,
    )
    assert defaults("summarization")["n"] == 5
    loop = defaults("agent_loop_detection")
    assert (loop["repetitionThreshold"], loop["similarityThreshold"]) == (3, 0.85)
    assert (
        loop["checkToolRepetition"]
        and loop["checkReasoningStagnation"]
        and loop["checkCallGraphCycles"]
    )
    bias = defaults("bias")
    assert (bias["includeReason"], bias["asyncMode"], bias["strictMode"], bias["cleanSession"]) == (
        True,
        True,
        False,
        False,
    )
    assert defaults("conversational_g_eval", name="c", criteria="x")["evaluationParams"] == [
        "CONTENT"
    ]
    assert defaults("tool_correctness")["shouldExactMatch"] is False


@pytest.mark.parametrize(
    ("slug", "options", "message"),
    [
        ("tool_use", {}, "availableTools: Field required"),
        ("topic_adherence", {}, "relevantTopics: Field required"),
        ("non_advice", {}, "adviceTypes: Field required"),
        ("misuse", {}, "domain: Field required"),
        ("role_violation", {}, "role: Field required"),
        ("prompt_alignment", {}, "promptInstructions: Field required"),
        ("pattern_match", {}, "pattern: Field required"),
        ("json_correctness", {}, "expectedSchema: Field required"),
        ("g_eval", {"criteria": "c", "evaluationParams": ["INPUT"]}, "name: Field required"),
        ("g_eval", {"name": "n", "criteria": "c"}, "evaluationParams: Field required"),
        (
            "g_eval",
            {"name": "n", "evaluationParams": ["INPUT"]},
            "g_eval needs exactly one of 'criteria'",
        ),
        (
            "conversational_g_eval",
            {"name": "n"},
            "conversational_g_eval needs exactly one of 'criteria'",
        ),
        ("dag", {"name": "n"}, "dag: Field required"),
        (
            "conversational_dag",
            {"dag": {"nodes": {"v": {"type": "verdict", "verdict": True, "score": 1}}}},
            "name: Field required",
        ),
        ("tool_permission", {}, "tool_permission needs 'allowedTools' or 'deniedTools'"),
        ("tool_use", {"availableTools": []}, "availableTools: List should have at least 1 item"),
        (
            "pattern_match",
            {"pattern": "(unclosed"},
            "pattern: Value error, not a valid regular expression",
        ),
        (
            "helpfulness",
            {"inputPrompt": "Q: {user_query}"},
            "helpfulness: inputPrompt must contain {actual_answer}",
        ),
        ("json_correctness", {"expectedSchema": {"type": "tuple"}}, "unsupported type 'tuple'"),
    ],
)
def test_required_options_are_enforced_with_metric_and_option_named(slug, options, message):
    with pytest.raises(ValidationError) as caught:
        CATALOG[slug].config_model.model_validate({"metric": slug, **options})
    text = "\n".join(
        f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"]
        for e in caught.value.errors(include_url=False)
    )
    assert message in text


def test_every_config_model_has_the_common_options():
    for slug, entry in CATALOG.items():
        fields = entry.config_model.model_fields
        assert {"threshold", "strict_mode", "verbose_mode", "clean_session", "label"} <= set(
            fields
        ), slug
        if entry.needs_judge and entry.implementation is not None:
            assert {"include_reason", "async_mode"} & set(fields), slug


def test_every_metric_deepeval_exports_is_in_the_catalog_or_left_out_with_a_reason():
    import inspect

    import deepeval.metrics

    from n8n_deepeval_pipeline.metrics.left_out import LEFT_OUT

    exported = {
        name
        for name, value in vars(deepeval.metrics).items()
        if inspect.isclass(value)
        and (name.endswith("Metric") or name.endswith("Eval"))
        and not name.startswith("Base")
    }
    # By class name: Citation Faithfulness is in deepeval.metrics.community, not exported above.
    catalogued = {
        entry.implementation.rpartition(".")[2]
        for entry in CATALOG.values()
        if entry.implementation
        and entry.implementation.startswith("deepeval.metrics.")
        and entry.implementation.count(".") == 2
    }
    left_out = {left.implementation.rpartition(".")[2] for left in LEFT_OUT}
    assert exported == catalogued | left_out
    assert not catalogued & left_out
    assert all(len(left.why) > 40 for left in LEFT_OUT)
