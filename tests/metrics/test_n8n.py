import pytest

from n8n_deepeval_pipeline.metrics.n8n import (
    JudgeVerdict,
    categorization,
    judge_score,
    string_similarity,
    tools_used,
)
from n8n_deepeval_pipeline.n8n_data.agent_steps import tool_name


def test_string_similarity_is_one_minus_normalised_levenshtein():
    assert string_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert string_similarity("  same ", "same") == 1.0
    assert string_similarity("", "") == 1.0
    assert string_similarity("abc", "") == 0.0
    assert string_similarity("Yes", "yes") == pytest.approx(2 / 3)  # case-sensitive


def test_categorization_is_trimmed_exact_match():
    assert categorization("refund ", " refund") == 1.0
    assert categorization("Refund", "refund") == 0.0


def test_tools_used_is_share_of_expected_tools_called():
    assert tool_name("Get Events") == "Get_Events"
    assert tool_name("a" * 70) == "a" * 64
    assert tools_used(["Get Events", "calculator"], ["get_events", "get_events", "search"]) == 0.5
    assert tools_used(["calculator"], ["Calculator"]) == 1.0
    with pytest.raises(ValueError, match="at least one expected tool"):
        tools_used([], ["calculator"])


@pytest.mark.parametrize(
    ("score", "numeric", "boolean"), [(1, 0.2, 0.0), (3, 0.6, 0.0), (4, 0.8, 1.0), (5, 1.0, 1.0)]
)
def test_judge_scores_normalise_like_n8n_or_pass_fail(score, numeric, boolean):
    verdict = JudgeVerdict(extended_reasoning="r", reasoning_summary="s", score=score)
    assert judge_score(verdict, "numeric", 4) == pytest.approx(numeric)
    assert judge_score(verdict, "boolean", 4) == boolean


def test_judge_verdict_rejects_scores_outside_1_to_5():
    with pytest.raises(ValueError):
        JudgeVerdict(extended_reasoning="r", reasoning_summary="s", score=6)
