"""A simulated conversation in the report: turn by turn on the page, whole in the JSON.

It was shown as its last answer with ``input: null``: no turns, no stopping reason, no
session, though the page said eval-results.json held every run in full.
"""

from __future__ import annotations

import json

import pytest

from n8n_deepeval_pipeline.report import render_html, results_json
from n8n_deepeval_pipeline.report.conversation import conversation_of
from n8n_deepeval_pipeline.report.model import fold_runs
from n8n_deepeval_pipeline.tables.rows import AgentOutput
from tests.report.sample import (
    BASELINE,
    CANDIDATE,
    CONVERSATION_CASE,
    EXPECTED_OUTCOME,
    LONG_TURN,
    OPENING,
    SCENARIO,
    SIMULATED_USER,
    conversation_report,
)


@pytest.fixture(scope="module")
def report():
    return conversation_report()


@pytest.fixture(scope="module")
def html(report):
    return render_html(report)


def test_eval_results_json_holds_each_conversation_whole_with_its_stop_reason_and_session(
    report,
):
    (case,) = results_json(report)["cases"]
    assert case["row_id"] == CONVERSATION_CASE and case["input"] is None
    assert (case["scenario"]["text"], case["expected_outcome"]["text"]) == (
        SCENARIO, EXPECTED_OUTCOME)  # fmt: skip
    assert case["user_description"]["text"] == SIMULATED_USER
    for index, run in enumerate(case["runs"]):
        conversation = run["conversation"]
        assert conversation["stop_reason"] == "turn_limit"
        assert (
            conversation["session_id"] == f"{CANDIDATE}:{CONVERSATION_CASE}:{index}:thread-{index}"
        )
        turns = conversation["turns"]
        assert [(t["role"], t["opening"]) for t in turns] == [
            ("user", True),
            ("assistant", False),
            ("user", False),
            ("assistant", False),
        ]
        assert turns[0]["content"] == OPENING
        assert turns[2]["content"] == LONG_TURN  # whole: longer than the page shows
        assert [t["latency_s"] for t in turns] == [None, 0.8, None, 1.4]
        (call,) = turns[3]["tool_calls"]
        assert (call["name"], call["mocked"], call["arguments"]["text"]) == (
            "Order_Lookup", True, '{"orderId": "A3301"}')  # fmt: skip
        assert run["output"]["text"] == turns[3]["content"] == "Refunds are not possible."
    baseline_stops = {r["conversation"]["stop_reason"] for r in case["baseline_runs"]}
    assert baseline_stops == {"outcome_reached"}


def test_the_page_shows_each_turn_why_it_stopped_and_every_session(html):
    assert "<dt>scenario</dt><dd>" + SCENARIO + "</dd>" in html
    assert "<dt>expected outcome</dt><dd>" + EXPECTED_OUTCOME + "</dd>" in html
    assert '<dt>user <span class="chip">opening</span></dt>' in html
    assert f"<dd>{OPENING}</dd>" in html
    assert "Refunds are not possible." in html  # the candidate's last answer
    assert "I opened refund R-118 for order A3301." in html  # beside the baseline's
    # the long turn: its beginning, and how long it is
    assert f"({len(LONG_TURN):,} characters in all)" in html and LONG_TURN not in html
    assert 'stopped: <span class="chip">turn limit</span>' in html
    assert 'stopped: <span class="chip">outcome reached</span>' in html
    # four runs that read the same, shown once, with each run's session
    for version in (BASELINE, CANDIDATE):
        for index in range(4):
            assert f"<code>{version}:{CONVERSATION_CASE}:{index}:thread-{index}</code>" in html
    assert "4 turns, 1 sent by the user in this run" in html
    # each answer's latency only for a run shown alone: these are four runs each
    assert '<span class="passes">0.80 s</span>' not in html
    assert '<span class="chip">mocked: never ran</span>' in html


def conversation_output(run_id: str, last: str, session: str) -> AgentOutput:
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": last}]
    return AgentOutput(
        workflow_hash="h", run_id=run_id, actual_output=last, turns=turns, session_id=session,
        stop_reason="outcome_reached",
    )  # fmt: skip


def test_conversations_that_read_the_same_are_folded_with_their_sessions(report):
    (case,) = report.cases
    same, other = case.runs[0], case.runs[1]
    # the same turns answered at another speed read the same
    slower = [turn.model_copy(update={"latency_s": 9.0}) for turn in other.conversation.turns]
    other = other.model_copy(
        update={"conversation": other.conversation.model_copy(update={"turns": tuple(slower)})}
    )
    differs = conversation_of(conversation_output("h:r:1", "another answer", "s-9"))
    groups = fold_runs((same, other, other.model_copy(update={"conversation": differs})))
    assert [len(group.runs) for group in groups] == [2, 1]
    assert groups[0].sessions == (same.conversation.session_id, other.conversation.session_id)
    assert groups[1].sessions == ("s-9",)


def test_turns_in_each_form_a_memory_stores_are_read_and_an_unreadable_history_is_left_out():
    turns = [
        {"type": "human", "data": {"content": "Where is order 7?"}},  # LangChain, stored
        {"type": "system", "data": {"content": "be brief"}},  # not a turn
        {"human": "And order 8?", "ai": "Order 8 ships today."},  # Chat Memory Manager
    ]
    output = AgentOutput(workflow_hash="h", run_id="h:r:0", actual_output="x", turns=turns)
    conversation = conversation_of(output)
    assert conversation is not None
    assert [(t.role, t.content) for t in conversation.turns] == [
        ("user", "Where is order 7?"), ("user", "And order 8?"),
        ("assistant", "Order 8 ships today.")]  # fmt: skip
    assert (conversation.stop_reason, conversation.session_id) == (None, None)
    unreadable = output.model_copy(update={"turns": [{"speaker": "bot"}]})
    assert conversation_of(unreadable) is None  # its answer is shown instead
    assert conversation_of(output.model_copy(update={"turns": None})) is None


def test_eval_results_json_is_plain_json(report):
    assert json.loads(json.dumps(results_json(report))) == results_json(report)
