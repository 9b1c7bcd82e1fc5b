"""How a simulated conversation ends when something goes wrong, and never the whole run.

Each test plays goldens in the real simulator process (DeepEval's ConversationSimulator,
the pipeline's judge) against the loopback chatbot: a workflow that fails mid-way, a
simulated user who says nothing, a judge that fails, and the dry-run judge."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.simulation.conversation import SimulatedConversation
from n8n_deepeval_pipeline.simulation.golden import golden_runs
from n8n_deepeval_pipeline.simulation.launcher import simulate
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.tables.rows import DatasetRow
from n8n_deepeval_pipeline.tables.steps import expanded_runs
from n8n_deepeval_pipeline.testing.loopback_chatbot import LoopbackChatbot
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

pytestmark = pytest.mark.slow
HASH = "7" * 64
API_KEY = "sk-simulator-SECRET-91c2"


def play(
    judge: JudgeSpec, chatbot: LoopbackChatbot, goldens: list[dict[str, Any]], turns: int = 4
) -> list[SimulatedConversation]:
    rows = [
        DatasetRow(workflow_hash=HASH, row_id=f"g{index}", position=index + 1, raw={}, **golden)
        for index, golden in enumerate(goldens)
    ]
    request = SimulationRequest(
        runs=golden_runs(expanded_runs(rows, 1, "simulator"), rows),
        judge=judge,
        target=WebhookTarget(type="n8n_webhook", url=chatbot.url),
        url=chatbot.url,
        max_user_turns=turns,
    )
    conversations, _ = simulate(request)
    return conversations


def openai_judge(server: LoopbackJudge, state: Path, **changes: Any) -> JudgeSpec:
    return JudgeSpec(
        provider="openai",
        model="gpt-4.1",
        base_url=server.base_url,
        api_key=API_KEY,
        state_dir=str(state),
        **changes,
    )


@pytest.fixture
def chatbot():
    server = LoopbackChatbot(fail_on=2).start()  # every session's second message fails
    yield server
    server.stop()


def test_a_workflow_that_fails_mid_way_ends_its_conversation_as_a_target_error(
    chatbot: LoopbackChatbot, tmp_path: Path
) -> None:
    server = LoopbackJudge(latency_s=0.0).start()
    try:
        failed, opened = play(
            openai_judge(server, tmp_path / "judge"),
            chatbot,
            [
                {"scenario": "What is 6*7", "expected_outcome": "learns 42"},
                # the opening ends with the user's message: the workflow answers it first
                {"scenario": "Greets", "turns": [{"role": "user", "content": "What is 2+3?"}]},
            ],
        )
    finally:
        server.stop()
    assert failed.stop_reason == "target_error" and failed.error_kind == "target_error"
    assert failed.error == "HTTP 500: the agent failed"
    assert [(turn.role, turn.content[:30]) for turn in failed.turns] == [
        ("user", "[dry-run] user turn 1: What is"),
        ("assistant", "The answer is 42. (answer 1)"),
        ("user", "[dry-run] user turn 2: What is"),  # what the workflow failed to answer
    ]
    assert failed.judge_calls == 3  # two user turns and the check between them
    output = failed.agent_output(HASH, "openai:gpt-4.1", 4, None)
    assert output.error_kind == "target_error" and output.actual_output is None
    assert [(turn.role, turn.opening) for turn in opened.turns[:2]] == [
        ("user", True),
        ("assistant", False),
    ]
    assert opened.turns[1].content == "The answer is 5. (answer 1)"
    assert chatbot.memory[opened.session_id][0] == "What is 2+3?"


def test_a_simulated_user_who_says_nothing_twice_ends_the_conversation(
    chatbot: LoopbackChatbot, tmp_path: Path
) -> None:
    server = LoopbackJudge(latency_s=0.0, fixed={"simulated_input": " "}).start()
    try:
        (silent,) = play(openai_judge(server, tmp_path / "judge"), chatbot, [{"scenario": "Hi"}])
        prompts = [body["messages"][0]["content"][0]["text"] for body in server.bodies]
    finally:
        server.stop()
    assert (silent.stop_reason, silent.turns, silent.error) == ("empty_user_turn", [], None)
    assert silent.judge_calls == 2  # asked once more, saying why
    assert "Your previous answer had an empty `simulated_input`" in prompts[1]
    assert chatbot.memory == {}  # nothing was sent to the workflow


def test_a_judge_that_fails_ends_each_conversation_not_the_run(
    chatbot: LoopbackChatbot, tmp_path: Path
) -> None:
    server = LoopbackJudge(latency_s=0.0, fail_always=True).start()
    try:
        judge = openai_judge(server, tmp_path / "judge", retry=RetryPolicy(max_attempts=1))
        conversations = play(judge, chatbot, [{"scenario": "Hi"}, {"scenario": "Bye"}])
    finally:
        server.stop()
    for conversation in conversations:
        assert conversation.stop_reason == "judge_error" and conversation.turns == []
        assert conversation.error_kind == "judge_error"
        assert conversation.error is not None
        assert conversation.error.startswith("simulated user: openai judge at ")
        assert conversation.error.endswith("HTTP 500 injected 500 (after 1 attempt(s))")
        assert API_KEY not in conversation.error
    assert chatbot.memory == {}


def test_the_dry_run_judge_plays_without_any_server(chatbot: LoopbackChatbot) -> None:
    (played,) = play(JudgeSpec(), chatbot, [{"scenario": "Asks 6*7", "expected_outcome": "42"}])
    assert played.turns[0].content == "[dry-run] user turn 1: Asks 6*7"
    assert played.stop_reason in ("outcome_reached", "target_error")
    assert played.judge_calls >= 1


def _play_within(judge: JudgeSpec, chatbot: LoopbackChatbot, call_limit_s: float) -> Any:
    rows = [
        DatasetRow(workflow_hash=HASH, row_id=f"g{index}", position=index + 1, raw={},
                   scenario=scenario)
        for index, scenario in enumerate(("Hi", "Bye"))
    ]  # fmt: skip
    request = SimulationRequest(
        runs=golden_runs(expanded_runs(rows, 1, "simulator"), rows),
        judge=judge,
        target=WebhookTarget(type="n8n_webhook", url=chatbot.url),
        url=chatbot.url,
        max_user_turns=3,
        judge_call_limit_s=call_limit_s,
    )
    started = time.monotonic()
    conversations, _ = simulate(request)
    return conversations, time.monotonic() - started


def test_a_judge_refusing_for_ever_ends_each_conversation_as_rate_limited_in_time(
    chatbot: LoopbackChatbot, tmp_path: Path
) -> None:
    # 429s without any header, for ever: a simulation took 571 s with one call retrying
    # for 498 s, and its rows said judge_error.
    server = LoopbackJudge(latency_s=0.0, faults=["429"] * 100_000).start()
    try:
        judge = openai_judge(server, tmp_path / "judge", requests_per_minute=6)
        conversations, took = _play_within(judge, chatbot, call_limit_s=3.0)
    finally:
        server.stop()
    assert took < 60  # each call had the 3 s an evaluation would give it (and import time)
    for conversation in conversations:
        assert (conversation.stop_reason, conversation.turns) == ("judge_error", [])
        assert conversation.error_kind == "judge_rate_limited"  # as a score's row says it
        assert (
            "rate limit" in conversation.error or "no turn for a judge call" in conversation.error
        )
        output = conversation.agent_output(HASH, "openai:gpt-4.1", 3, None)
        assert output.error_kind == "judge_rate_limited"
    assert chatbot.memory == {}


def test_a_judge_refusing_the_key_ends_each_conversation_as_judge_auth(
    chatbot: LoopbackChatbot, tmp_path: Path
) -> None:
    server = LoopbackJudge(latency_s=0.0, reject_key=True).start()
    try:
        conversations, _ = _play_within(openai_judge(server, tmp_path / "judge"), chatbot, 30.0)
    finally:
        server.stop()
    for conversation in conversations:
        assert (conversation.stop_reason, conversation.error_kind) == ("judge_error", "judge_auth")
        assert "HTTP 401" in conversation.error and API_KEY not in conversation.error


def test_a_simulator_started_ahead_plays_the_simulation_and_none_is_left(
    chatbot: LoopbackChatbot, started_children: list[Any]
) -> None:
    from n8n_deepeval_pipeline.simulation import launcher

    with launcher.started_ahead():
        assert len(started_children) == 1  # before the request exists
        (played,) = play(JudgeSpec(), chatbot, [{"scenario": "Asks 6*7"}])
        assert len(started_children) == 1  # the simulation took it
    assert played.turns[0].content == "[dry-run] user turn 1: Asks 6*7"
    assert started_children[0].process.poll() == 0
    with launcher.started_ahead():
        pass  # none asked for one: it is stopped with the block, even mid-import
    assert started_children[1].process.poll() is not None
    scratch = started_children[1].scratch
    assert scratch is not None and not scratch.exists()


def test_a_simulator_started_ahead_with_the_judges_key_in_its_environment_is_not_used(
    chatbot: LoopbackChatbot, started_children: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from n8n_deepeval_pipeline.simulation import launcher

    key = "opensesame7731"  # nothing says it is a key but the judge's spec
    monkeypatch.setenv("SUPPORT_DESK_SETTING", key)
    judge = JudgeSpec(provider="dry-run", model="dry-run", api_key=key)
    with launcher.started_ahead():
        play(judge, chatbot, [{"scenario": "Asks 6*7"}])
        assert len(started_children) == 2
        assert "SUPPORT_DESK_SETTING" not in started_children[1].environment
