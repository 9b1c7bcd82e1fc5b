"""A sensor tick's plan: cursor by execution id, sampling, the hourly cap, idle sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from n8n_deepeval_pipeline.benchmark.online import OnlineConfig
from n8n_deepeval_pipeline.online.cursor import (
    OnlineCursor,
    SeenExecution,
    plan_tick,
    sampled,
)

NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
STARTED = OnlineCursor(started=True)


def seen(number: int, status: str = "success", mode: str = "webhook", **extra: object):
    fields = {"started_at": NOON + timedelta(seconds=number), **extra}
    return SeenExecution(id=number, status=status, mode=mode, **fields)


def config(**fields: object) -> OnlineConfig:
    return OnlineConfig.model_validate({"metrics": ["m"], **fields})


def keys(tick) -> list[str]:
    return [item.key for item in tick.items]


def test_two_ticks_and_a_restart_score_every_execution_exactly_once():
    first = plan_tick(STARTED, [seen(1), seen(2)], config(), NOON)
    assert keys(first) == ["1", "2"] and first.cursor.last_id == 2
    # n8n lists newest first and the old ones again: only the new ones are handed on
    second = plan_tick(first.cursor, [seen(4), seen(3), seen(2), seen(1)], config(), NOON)
    assert keys(second) == ["3", "4"]
    restarted = OnlineCursor.read(second.cursor.model_dump_json())  # a new process
    again = plan_tick(restarted, [seen(4), seen(3), seen(2)], config(), NOON)
    assert keys(again) == [] and again.cursor.last_id == 4


def test_a_running_execution_is_held_and_scored_once_it_ends_while_later_ones_go_on():
    tick = plan_tick(STARTED, [seen(1), seen(2, status="waiting"), seen(3)], config(), NOON)
    assert keys(tick) == ["1", "3"] and tick.cursor.last_id == 3
    assert tick.cursor.pending == [2]
    restarted = OnlineCursor.read(tick.cursor.model_dump_json())
    still = plan_tick(restarted, [seen(2, status="running")], config(), NOON)
    assert keys(still) == [] and still.cursor.pending == [2]
    ended = plan_tick(still.cursor, [seen(4), seen(2)], config(), NOON)
    assert keys(ended) == ["2", "4"] and ended.cursor.pending == []
    # listed again (n8n lists the old ones too): decided already, not scored again
    assert keys(plan_tick(ended.cursor, [seen(n) for n in (1, 2, 3, 4)], config(), NOON)) == []


def test_manual_evaluation_and_failed_runs_are_passed_over_and_counted():
    executions = [
        seen(1, mode="manual"),
        seen(2, mode="evaluation"),
        seen(3, status="error"),
        seen(4, mode="trigger"),
    ]
    tick = plan_tick(STARTED, executions, config(), NOON)
    assert keys(tick) == ["4"] and tick.cursor.last_id == 4
    assert (tick.not_production, tick.not_scored_status) == (2, 1)
    with_manual = plan_tick(STARTED, executions, config(includeManual=True), NOON)
    assert keys(with_manual) == ["1", "4"]


def test_the_pipelines_own_calls_are_neither_scored_nor_a_session_and_are_counted():
    """A simulation run while the sensor ticks: its sessions are the pipeline's own."""
    executions = [
        seen(1, session="user-a"),
        seen(2, session="h:sim:0:thread", from_pipeline=True),
        seen(3, from_pipeline=True),
        seen(4, session="user-a"),
    ]
    tick = plan_tick(STARTED, executions, config(), NOON, single_turn=True, conversational=True)
    assert keys(tick) == ["1", "4"] and tick.from_pipeline == 2
    assert set(tick.cursor.open_sessions) == {"user-a"} and tick.cursor.last_id == 4
    assert tick.not_production == 0  # counted as the pipeline's, not as manual runs


def test_sampling_is_a_hash_of_the_id_so_a_restart_samples_the_same_ones():
    chosen = [sampled(str(number), 0.3) for number in range(20_000)]
    assert sum(chosen) / len(chosen) == pytest.approx(0.3, abs=0.015)
    assert chosen == [sampled(str(number), 0.3) for number in range(20_000)]
    assert all(sampled(str(number), 1.0) for number in range(1000))
    executions = [seen(number) for number in range(1, 201)]
    tick = plan_tick(STARTED, executions, config(sampleRate=0.25), NOON)
    expected = [str(n) for n in range(1, 201) if sampled(str(n), 0.25)]
    assert keys(tick) == expected and tick.not_sampled == 200 - len(expected)
    assert tick.cursor.last_id == 200  # the ones left out are decided too


def test_the_hourly_cap_holds_across_ticks_and_resets_with_the_next_hour():
    cap = config(maxPerHour=3)
    first = plan_tick(STARTED, [seen(n) for n in range(1, 6)], cap, NOON)
    assert keys(first) == ["1", "2", "3"] and first.capped == 2 and first.cursor.last_id == 5
    same_hour = plan_tick(first.cursor, [seen(6)], cap, NOON + timedelta(minutes=59))
    assert keys(same_hour) == [] and same_hour.capped == 1
    next_hour = plan_tick(same_hour.cursor, [seen(7)], cap, NOON + timedelta(minutes=61))
    assert keys(next_hour) == ["7"]


def test_a_chat_session_is_one_item_once_idle_with_its_executions_in_order():
    idle = config(sessionIdleMinutes=10)
    first = plan_tick(
        STARTED, [seen(2, session="a"), seen(1, session="a"), seen(3, session="b")], idle, NOON,
        single_turn=False, conversational=True,
    )  # fmt: skip
    assert first.items == [] and set(first.cursor.open_sessions) == {"a", "b"}
    # a later message of session a keeps it open; b has been quiet for 10 minutes
    later = NOON + timedelta(minutes=10, seconds=3)
    second = plan_tick(first.cursor, [seen(4, session="a", started_at=later)], idle, later,
                       single_turn=False, conversational=True)  # fmt: skip
    assert [(i.kind, i.key, i.execution_ids) for i in second.items] == [("session", "b", [3])]
    restarted = OnlineCursor.read(second.cursor.model_dump_json())
    done = plan_tick(restarted, [], idle, later + timedelta(minutes=10),
                     single_turn=False, conversational=True)  # fmt: skip
    assert [(i.key, i.execution_ids) for i in done.items] == [("a", [1, 2, 4])]
    assert done.cursor.open_sessions == {}
    assert plan_tick(done.cursor, [], idle, later + timedelta(hours=1),
                     conversational=True).items == []  # fmt: skip


def test_a_chat_that_goes_on_after_it_was_scored_is_scored_again_whole():
    """It was scored again as a fragment holding only the new message (knowledge retention
    0.0 on it, and the chat counted twice)."""
    chat = config(sessionIdleMinutes=10, sessionResumeDays=2)
    turns = {"single_turn": False, "conversational": True}
    first = plan_tick(STARTED, [seen(1, session="a"), seen(2, session="a")], chat, NOON, **turns)
    later = NOON + timedelta(minutes=15)
    scored = plan_tick(first.cursor, [], chat, later, **turns)
    assert [(i.key, i.execution_ids) for i in scored.items] == [("a", [1, 2])]
    # the user comes back an hour later (a new process: the cursor read back)
    back = NOON + timedelta(hours=1)
    restarted = OnlineCursor.read(scored.cursor.model_dump_json())
    resumed = plan_tick(restarted, [seen(3, session="a", started_at=back)], chat, back, **turns)
    assert resumed.items == [] and resumed.cursor.open_sessions["a"].execution_ids == [1, 2, 3]
    again = plan_tick(resumed.cursor, [], chat, back + timedelta(minutes=10), **turns)
    (item,) = again.items
    assert (item.key, item.execution_ids, item.started_at) == (
        "a",
        [1, 2, 3],
        NOON + timedelta(seconds=1),
    )
    assert item.day == scored.items[0].day  # the same day's partition: its rows replaced
    # past sessionResumeDays it is a conversation of its own, and the old one is forgotten
    days = back + timedelta(days=2, minutes=10)
    apart = plan_tick(again.cursor, [seen(4, session="a", started_at=days)], chat, days, **turns)
    assert apart.cursor.open_sessions["a"].execution_ids == [4]
    assert apart.cursor.scored_sessions == {}


def test_a_capped_chat_is_scored_whole_when_it_goes_on():
    chat = config(sessionIdleMinutes=10, maxPerHour=1)
    turns = {"single_turn": False, "conversational": True}
    first = plan_tick(STARTED, [seen(1, session="a"), seen(2, session="b")], chat, NOON, **turns)
    capped = plan_tick(first.cursor, [], chat, NOON + timedelta(minutes=15), **turns)
    assert [i.key for i in capped.items] == ["a"] and capped.capped == 1
    back = NOON + timedelta(hours=2)
    resumed = plan_tick(capped.cursor, [seen(3, session="b", started_at=back)], chat, back, **turns)
    again = plan_tick(resumed.cursor, [], chat, back + timedelta(minutes=10), **turns)
    assert [(i.key, i.execution_ids) for i in again.items] == [("b", [2, 3])]
