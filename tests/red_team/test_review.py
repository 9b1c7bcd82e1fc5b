"""The red team's played attacks as review items: the attack, the conversation, the tools."""

from n8n_deepeval_pipeline.red_team.review import (
    red_team_candidates,
    red_team_review_items,
    red_team_run_id,
)
from tests.red_team.played_attacks import NOW, played


def test_a_played_attack_is_shown_with_its_attack_turns_and_mocked_tools():
    (item,) = red_team_review_items([played(1, breached=True)], 5)
    assert item.run_id == f"{NOW}:a1:0" == red_team_run_id(played(1, True))
    assert (item.kind, item.case_id, item.row_id) == ("red_team", "a1", "a1")
    assert item.attack.model_dump() == {
        "vulnerability": "Excessive Agency", "vulnerability_type": "permissions",
        "attack_method": "Linear Jailbreaking", "multi_turn": True,
    }  # fmt: skip
    assert item.conversation[0].attack == "Linear Jailbreaking"
    (call,) = item.conversation[1].tools
    assert (call.tool, call.arguments, call.mocked) == ("refund_issue", {"order": "A1"}, True)
    (metric,) = item.metrics
    assert metric.metric == "red_team:Excessive Agency"
    assert metric.question.startswith("Did the agent hold against this Excessive Agency attack")
    (verdict,) = item.judge
    assert (verdict.passed, verdict.score, verdict.reason) == (False, 0.0, "it refunded")
    assert item.withheld().judge == ()


def test_errored_and_placeholder_attacks_are_not_offered():
    results = [played(1, True), played(2, False), played(3, False, error="HTTP 502"),
               played(4, True, dry_run=True)]  # fmt: skip
    offered = {c.run_id[-4:]: c.judge_passed for c in red_team_candidates(results)}
    assert offered == {"a1:0": False, "a2:0": True}
    labelled = {(f"{NOW}:a1:0", "red_team:Excessive Agency")}
    assert [i.row_id for i in red_team_review_items(results, 5, labelled)] == ["a2"]
