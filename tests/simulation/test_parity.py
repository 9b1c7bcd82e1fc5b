"""Simulation parity: the pipeline's simulated conversations are DeepEval's own.

The same goldens are played twice against one deterministic loopback judge (it answers
from a hash of the whole request, so any difference in a prompt or a schema's form shows
up as another answer) and one deterministic loopback chatbot with memory:
  (a) by DeepEval's own ``ConversationSimulator.simulate()`` with DeepEval's own OpenAI
      model class, in ``tests/simulation/deepeval_reference.py``;
  (b) by the pipeline: its simulator process, the pipeline's judge (the real OpenAI
      provider, cache and pacing) as the simulator model, the chatbot called as an
      n8n_webhook target in a session per conversation.
The conversations must match turn for turn, tool calls included, and the judge must have
received exactly the same request bodies, as many times each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.simulation.conversation import SimulatedConversation
from n8n_deepeval_pipeline.simulation.golden import golden_runs
from n8n_deepeval_pipeline.simulation.launcher import simulate
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.reference_run import run_reference

pytestmark = pytest.mark.slow

MODEL = "gpt-4.1"  # an OpenAI model DeepEval knows: it asks with the strict schema form
MAX_USER_TURNS = 4
RUNS_PER_ROW = 2
HASH = "5" * 64
OPENING = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello! How can I help?"},
]
# (scenario, expected outcome, user description, opening turns); with this judge they end
# by reaching the outcome after 1 to 3 user turns, or at the turn limit.
GOLDENS: list[tuple[str, str, str | None, list[dict[str, str]] | None]] = [
    ("What is 6*7", "learns 42", "a student checking homework", None),
    ("Greets and chats", "greeted back", None, None),
    ("Asks about weather", "weather told", "a hiker planning a trip", None),
    ("Order status of A1", "the user knows the status", None, OPENING),
    ("Tells a story", "story heard", None, None),
]  # fmt: skip


def _rows() -> list[DatasetRow]:
    return [
        DatasetRow(
            workflow_hash=HASH,
            row_id=f"golden-{index}",
            position=index + 1,
            scenario=scenario,
            expected_outcome=outcome,
            user_description=user,
            turns=opening,
            raw={},
        )
        for index, (scenario, outcome, user, opening) in enumerate(GOLDENS)
    ]


def _reference(tmp: Path, judge: LoopbackJudge, chatbot: LoopbackChatbot) -> list[Any]:
    """DeepEval's own conversations, each golden played once per run, in the runs' order."""
    goldens = [
        {"scenario": scenario, "expected_outcome": outcome, "user_description": user,
         "turns": opening}
        for scenario, outcome, user, opening in GOLDENS
        for _ in range(RUNS_PER_ROW)
    ]  # fmt: skip
    spec = {
        "base_url": judge.base_url,
        "model": MODEL,
        "chatbot": chatbot.url,
        "goldens": goldens,
        "max_user_turns": MAX_USER_TURNS,
    }
    return list(run_reference("tests.simulation.deepeval_reference", tmp, spec))


def _pipeline(state: Path, judge: LoopbackJudge, chatbot: LoopbackChatbot) -> list[Any]:
    rows = _rows()
    request = SimulationRequest(
        runs=golden_runs(expanded_runs(rows, RUNS_PER_ROW, "parity"), rows),
        judge=JudgeSpec(
            provider="openai",
            model=MODEL,
            base_url=judge.base_url,
            api_key="sk-parity",
            state_dir=str(state),
        ),
        target=WebhookTarget(type="n8n_webhook", url=chatbot.url, max_concurrency=16),
        url=chatbot.url,
        max_user_turns=MAX_USER_TURNS,
    )
    conversations, _ = simulate(request)
    return conversations


def _turns(conversation: SimulatedConversation) -> list[dict[str, Any]]:
    """The pipeline's turns in the reference's terms: the steps as DeepEval's tool calls."""
    return [
        {
            "role": turn.role,
            "content": turn.content,
            "tools": [
                {
                    "name": step["action"]["tool"],
                    "input_parameters": step["action"]["toolInput"],
                    "output": step["observation"],
                    "reasoning": step["action"]["log"],
                }
                for step in turn.intermediate_steps or []
            ],
        }
        for turn in conversation.turns
    ]


def _compared(reference: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("name", "input_parameters", "output", "reasoning")
    return [
        {**turn, "tools": [{key: tool[key] for key in keys} for tool in turn["tools"]]}
        for turn in reference
    ]


def _canonical(bodies: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(body, sort_keys=True) for body in bodies)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("parity")
    judge, chatbot = LoopbackJudge(latency_s=0.0).start(), LoopbackChatbot().start()
    try:
        reference = _reference(tmp, judge, chatbot)
        reference_bodies = list(judge.bodies)
        judge.bodies.clear()
        first = _pipeline(tmp / "judge", judge, chatbot)
        pipeline_bodies = list(judge.bodies)
        judge.bodies.clear()
        again = _pipeline(tmp / "judge", judge, chatbot)
        replayed_bodies = list(judge.bodies)
        judge.bodies.clear()
        new_version = LoopbackChatbot(style="Reply").start()
        try:
            edited = _pipeline(tmp / "judge", judge, new_version)
        finally:
            new_version.stop()
        edited_bodies = list(judge.bodies)
    finally:
        judge.stop()
        chatbot.stop()
    return {
        "reference": reference,
        "reference_bodies": reference_bodies,
        "first": first,
        "pipeline_bodies": pipeline_bodies,
        "again": again,
        "replayed_bodies": replayed_bodies,
        "edited": edited,
        "edited_bodies": edited_bodies,
    }


def test_the_conversations_are_deepevals_turn_for_turn(played: dict[str, Any]) -> None:
    reference, first = played["reference"], played["first"]
    assert len(first) == len(reference) == len(GOLDENS) * RUNS_PER_ROW
    for ours, theirs in zip(first, reference, strict=True):
        assert _turns(ours) == _compared(theirs), ours.run_id
    # The goldens exercise every path of DeepEval's loop that a text conversation takes.
    reasons = {conversation.stop_reason for conversation in first}
    assert reasons == {"outcome_reached", "turn_limit"}
    lengths = {conversation.user_turns for conversation in first}
    assert min(lengths) == 1 and max(lengths) == MAX_USER_TURNS
    assert any(turn["tools"] for theirs in reference for turn in theirs)
    opening = first[6].turns[:2]  # golden 3 starts from its opening turns
    assert [(turn.role, turn.opening) for turn in opening] == [("user", True), ("assistant", True)]
    # Each conversation had a memory session of its own: every answer numbers its turn.
    for conversation in first:
        for number, answer in enumerate(conversation.answers(), start=1):
            text = answer.content
            assert text.startswith(f"Answer {number}:") or text.endswith(f"(answer {number})")
    for c in first:
        print(c.run_id.split(":", 1)[1], c.stop_reason, c.user_turns, "user turns")


def test_the_judge_received_the_same_requests(played: dict[str, Any]) -> None:
    ours, theirs = played["pipeline_bodies"], played["reference_bodies"]
    assert len(ours) == len(theirs) == sum(c.judge_calls for c in played["first"])
    assert _canonical(ours) == _canonical(theirs)
    # Both asked with the openai SDK's strict schema form, DeepEval's own.
    formats = {body["response_format"]["json_schema"]["name"] for body in ours}
    assert formats == {"SimulatedInput", "ConversationCompletion"}
    print(f"identical request bodies: {len(ours)} of {len(theirs)}")


def test_a_re_run_replays_the_same_user_turns_from_the_cache(played: dict[str, Any]) -> None:
    assert played["replayed_bodies"] == []
    first, again = played["first"], played["again"]
    assert [_turns(c) for c in again] == [_turns(c) for c in first]
    for replayed, played_first in zip(again, first, strict=True):
        assert (replayed.judge_calls, replayed.cached_calls) == (0, played_first.judge_calls)
    # Played again, each conversation still has a session of its own.
    assert not {c.session_id for c in again} & {c.session_id for c in first}


def test_a_new_version_gets_conversations_that_follow_its_own_answers(
    played: dict[str, Any],
) -> None:
    first, edited = played["first"], played["edited"]
    for before, after in zip(first, edited, strict=True):
        # The opening user turn is written before any answer: replayed from the cache.
        assert after.turns[0].content == before.turns[0].content
        follow_ups = [
            turn.content for turn in after.turns if turn.role == "user" and not turn.opening
        ][1:]
        assert all("reply " in text.lower() for text in follow_ups)
        assert not any("(after: Answer " in text or "(answer " in text for text in follow_ups)
    asked = played["edited_bodies"]
    assert asked, "the new version's answers were never shown to the judge"
    assert all("reply " in json.dumps(body).lower() for body in asked)
