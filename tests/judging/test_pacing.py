"""Pacing: the rate-limit headers each provider sends, and the fitted concurrency."""

import asyncio
import time
from datetime import UTC, datetime

import pytest

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.judging.pacer import HeldBack, NoTurnInTime, Pacer, TokenEstimates
from n8n_deepeval_pipeline.judging.pacing import QUIET_S, Concurrency, RateLimits
from n8n_deepeval_pipeline.judging.shared_state import SharedState

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def test_openai_and_azure_headers_with_durations():
    limits = RateLimits.from_headers(
        {
            "x-ratelimit-remaining-requests": "59",
            "x-ratelimit-remaining-tokens": "149000",
            "x-ratelimit-reset-requests": "1s",
            "x-ratelimit-reset-tokens": "6m0.5s",
        },
        NOW,
    )
    assert limits == RateLimits(59, 149000, 1.0, 360.5)
    assert RateLimits.from_headers(
        {"x-ratelimit-reset-requests": "20ms"}, NOW
    ).reset_requests_s == (pytest.approx(0.02))


def test_anthropic_headers_with_rfc3339_resets():
    limits = RateLimits.from_headers(
        {
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-tokens-remaining": "12000",
            "anthropic-ratelimit-requests-reset": "2026-12-01T12:00:30Z",
            "anthropic-ratelimit-tokens-reset": "2026-12-01T12:01:00+00:00",
        },
        NOW,
    )
    assert limits == RateLimits(0, 12000, 30.0, 60.0)
    assert limits.pause_s(tokens_needed=500) == 30.0  # no request left until the reset


def test_a_spent_token_budget_pauses_until_its_reset_and_no_headers_say_nothing():
    limits = RateLimits(remaining_requests=10, remaining_tokens=300, reset_tokens_s=4.0)
    assert limits.pause_s(tokens_needed=200) == 0.0
    assert limits.pause_s(tokens_needed=400) == 4.0
    assert not RateLimits.from_headers({"content-type": "application/json"}).told
    assert RateLimits.from_headers({"x-ratelimit-remaining-requests": "junk"}) == RateLimits()


def test_concurrency_grows_fast_then_halves_once_per_burst_then_grows_by_one_per_window():
    fitted = Concurrency.start(ceiling=88)
    assert fitted.slots == 44
    for _ in range(12):
        fitted = fitted.succeeded()
    assert fitted.slots == 56  # slow start: +1 per answer
    fitted = Concurrency(limit=44.0, ceiling=256)
    fitted = fitted.overloaded(now=100.0)
    assert (fitted.slots, fitted.threshold) == (22, 22.0)
    assert fitted.overloaded(now=100.5).slots == 22  # the same burst of 429s: halved once
    expected = 22.0
    for _ in range(22):  # one window of answers after the first overload: about +1
        fitted = fitted.succeeded()
        expected += 1 / expected
    assert fitted.limit == pytest.approx(expected) and 22.9 < expected < 23.0
    assert fitted.overloaded(now=200.0).limit == pytest.approx(fitted.limit / 2)
    assert Concurrency.start(ceiling=2).succeeded().succeeded().slots == 2  # never past it
    assert Concurrency.start(ceiling=1).slots == 1
    assert Concurrency(limit=1.0, ceiling=8).overloaded(now=5.0).slots == 1  # never below 1


def test_every_worker_shares_one_judges_pacing(tmp_path):
    first, second = SharedState(tmp_path / "s.sqlite"), SharedState(tmp_path / "s.sqlite")
    for _ in range(3):
        first.record_outcome("judge-a", ceiling=64, overloaded=False)
    assert second.concurrency("judge-a", ceiling=64).slots == 35  # 32 + 3
    second.record_outcome("judge-a", 64, True, RateLimits(remaining_requests=0, reset_requests_s=9))
    assert first.concurrency("judge-a", ceiling=64).slots == 17
    assert first.pacing_view()["judge-a"] == {
        "concurrency": 17,
        "remaining_requests": 0,
        "remaining_tokens": None,
    }
    first.pause("judge-a", 5.0)
    assert 4.5 < second.paused_for("judge-a") <= 5.0
    assert second.concurrency("judge-b", ceiling=64).slots == 1  # paced apart: first, a probe


def test_a_success_that_changes_nothing_does_not_wait_for_another_workers_write(tmp_path):
    import sqlite3

    state, other = SharedState(tmp_path / "s.sqlite"), SharedState(tmp_path / "s.sqlite")
    for _ in range(40):  # from half the ceiling up to it
        state.record_outcome("judge-a", ceiling=64, overloaded=False)
    state.record_failure("judge-a", "HTTP 500", threshold=5, cool_down_s=30)
    state.record_success("judge-a")  # ends the run of failures: written
    state._db.execute("pragma busy_timeout = 50")
    other._db.execute("begin immediate")  # another worker mid-write
    try:
        # At the ceiling, no run of failures: nothing to write, so nothing to wait for.
        assert state.record_outcome("judge-a", ceiling=64, overloaded=False).slots == 64
        state.record_success("judge-a")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            state.record_failure("judge-a", "HTTP 500", threshold=5, cool_down_s=30)
    finally:
        other._db.execute("commit")
    assert state.breaker_open("judge-a") == (False, "HTTP 500")
    assert other.concurrency("judge-a", ceiling=64).slots == 64


def test_tokens_per_minute_are_booked_evenly_and_corrected_from_the_answer(tmp_path):
    state = SharedState(tmp_path / "s.sqlite")
    # 1000 tokens a minute, a minute's burst: 700 now books the next 42 s
    assert state.take_paced("j", "tokens", 1000, 700, burst=1000) == 0.0
    wait = state.take_paced("j", "tokens", 1000, 400, burst=1000)
    assert 5.5 < wait <= 6.0  # 42 + 24 - 60 s
    state.repay_paced("j", "tokens", 1000, -200)  # the answer said 500: 12 s back
    assert state.take_paced("j", "tokens", 1000, 400, burst=1000) == 0.0
    # a call bigger than the whole burst still goes once nothing is booked ahead
    assert state.take_paced("k", "tokens", 1000, 5000, burst=1000) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("budget", "limit", "told"),
    [("requests", 600, (600, None)), ("tokens", 200000, (None, 200000))],
)
def test_a_rate_limited_judge_is_paced_without_a_429_storm_and_no_score_is_lost(
    tmp_path, budget, limit, told
):
    """A provider allowing 600 requests a minute in bursts of 10 (or 200,000 tokens in
    bursts of 3,333: about 10 calls a second), far fewer than the pool has in flight: the
    pool slows to the provider's budget from its headers and 429s, and loses nothing."""
    from n8n_deepeval_pipeline import JudgeSpec, WorkerPool
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
    from tests.conftest import evaluate_all, make_task
    from tests.worker.test_metric_runs import ITEM

    server = LoopbackJudge(latency_s=0.05, burst_s=1.0, **{f"{budget}_per_minute": limit}).start()
    judge = JudgeSpec(
        provider="openai", model="gpt-4.1", base_url=server.base_url, api_key="sk-t",
        cache=False, state_dir=str(tmp_path / "judge"), max_in_flight=64,
    )  # fmt: skip
    items = [ITEM.model_copy(update={"actual_output": f"Total {i}."}) for i in range(40)]
    tasks = [make_task({"metric": "bias"}, item, i, judge) for i, item in enumerate(items)]
    pool = WorkerPool(size=2, timeout_s=300)
    try:
        results = evaluate_all(pool, tasks)
    finally:
        pool.close()
        server.stop()
    assert [r.error for r in results] == [None] * 40
    answered = sum(r.judge_calls for r in results)
    assert server.requests - server.rate_limited == answered
    # Beyond the burst, calls wait for the budget's reset instead of hammering the
    # provider: a few 429s while the first answers' headers arrive.
    assert server.rate_limited <= 0.1 * answered, (server.rate_limited, answered)
    view = SharedState(tmp_path / "judge" / "judge.sqlite").pacing_view()[judge.identity]
    assert view[f"remaining_{budget}"] is not None
    assert SharedState(tmp_path / "judge" / "judge.sqlite").told_limits(judge.identity) == told


def test_token_estimates_are_corrected_by_the_usage_answers_reported():
    estimates = TokenEstimates()
    assert estimates.corrected(600) == 600  # no answer yet: the estimate itself
    estimates.learn(600, 350)  # the answer budget was counted, a short answer came
    assert estimates.corrected(900) == 650
    estimates.learn(400, 200)  # errors -250 and -200: their mean
    assert estimates.corrected(900) == 675
    for _ in range(60):  # then weighted to the last ten or so: it follows a change
        estimates.learn(600, 590)
    assert estimates.corrected(600) == 590
    assert estimates.corrected(5) == 1  # never free


def _pacer(tmp_path, clock=None, **limits):
    """A pacer whose shared state reads ``clock`` (a list holding the time; the real time
    if None). Frozen, a full window never stays full long enough to widen."""
    spec = JudgeSpec(
        provider="openai", model="gpt-4.1", api_key="sk-t", max_in_flight=16, **limits
    )  # fmt: skip
    read = time.time if clock is None else (lambda: clock[0])
    return Pacer(spec, SharedState(tmp_path / SharedState.FILE_NAME, clock=read), tmp_path)


async def _sixteen_calls(
    pacer: Pacer, answer: bool = False, clock: list[float] | None = None
) -> list[tuple[int, int]]:
    """16 calls of a judge that has not answered: (calls gone, calls held back) once every
    call that may go has gone; with ``answer``, again after one answer; with ``clock``,
    again after it moved on by ``QUIET_S`` with no answer and no refusal."""
    entered, release = 0, asyncio.Event()

    async def call() -> None:
        nonlocal entered
        async with pacer.call(100):
            entered += 1
            await release.wait()

    tasks = [asyncio.create_task(call()) for _ in range(16)]
    await asyncio.sleep(0.5)  # every call that may go has gone by then
    seen = [(entered, HeldBack.calls)]
    if answer:
        pacer.answered(None, 100)
        await asyncio.sleep(0.5)
        seen.append((entered, HeldBack.calls))
    if clock is not None:
        clock[0] += QUIET_S
        await asyncio.sleep(0.5)
        seen.append((entered, HeldBack.calls))
    release.set()
    await asyncio.gather(*tasks)
    assert (entered, HeldBack.calls) == (16, 0)
    return seen


@pytest.mark.parametrize(
    ("limits", "at_once"),
    [({}, 4), ({"requests_per_minute": 60000}, 8), ({"tokens_per_minute": 1000000}, 8)],
)
def test_before_its_first_answer_a_judge_sends_a_few_calls_or_half_its_ceiling_if_configured(
    tmp_path, limits, at_once
):
    """Unknown limits: 4 calls until the first answer's headers tell them (one call left a
    2 s judge idle for 2 s); configured limits pace the calls from the first one (kept
    evenly: limits high enough that the 8 calls in flight, not the pace, bind here)."""
    clock = None if limits else [0.0]  # configured limits are booked as time goes by
    ((gone, _),) = asyncio.run(_sixteen_calls(_pacer(tmp_path, clock, **limits)))
    assert gone == at_once


def test_calls_the_pacing_keeps_waiting_are_counted_as_held_back_until_they_go(tmp_path):
    """The pool reads this count to stop giving a worker more evaluations. 16 calls of a
    judge with unknown limits: 4 go, 12 wait for the first answer; an answer that tells no
    limits grows the probing concurrency by 3 (four times as many each round trip, not
    half the ceiling at once: that burst is what a judge limiting silently refuses), so 7
    go and 9 wait."""
    seen = asyncio.run(_sixteen_calls(_pacer(tmp_path, [0.0]), answer=True))
    assert seen == [(4, 12), (7, 9)]


def test_a_window_full_for_a_quarter_second_without_a_refusal_takes_four_times_as_many(
    tmp_path,
):
    """A provider refuses a call over its rate on arrival: a probing judge whose 4 calls
    filled its window and drew no refusal for ``QUIET_S`` has room, so 16 go (as a round
    trip's answers would let go, without waiting 2 s for them at a slow judge)."""
    clock = [0.0]
    seen = asyncio.run(_sixteen_calls(_pacer(tmp_path, clock), clock=clock))
    assert seen == [(4, 12), (16, 0)]


@pytest.mark.parametrize("told", [False, True])
def test_a_window_never_widens_by_time_after_a_refusal_or_once_limits_are_told(tmp_path, told):
    """After a refusal the judge is fitted (halved, then additive increase); once its
    headers told its limits it is paced by them: in neither case does time alone widen."""
    clock = [100.0]
    pacer = _pacer(tmp_path, clock)
    ceiling = pacer.spec.max_in_flight
    if told:
        limits = RateLimits(100, 10_000, 1.0, 1.0, limit_requests=500, limit_tokens=90_000)
        pacer.state.record_outcome(
            pacer.judge, ceiling, False, limits, start=Concurrency.start(ceiling)
        )
    else:
        pacer.state.record_outcome(
            pacer.judge, ceiling, True, start=pacer._start(None), sent_at=0.0
        )
    before = pacer.state.concurrency(pacer.judge, ceiling).limit
    for _ in range(3):
        clock[0] += QUIET_S
        widened = pacer.state.widen_when_quiet(pacer.judge, ceiling, pacer._start(None))
        assert widened.limit == before
    assert before == (9 if told else 2)  # half the ceiling and one answer; 4 halved


def test_tokens_a_call_did_not_use_are_booked_by_the_next_one_not_lost(tmp_path):
    """Two calls estimated at 30 tokens use 10 each: the first books 30, the second (10
    expected once corrected) takes its 10 from the 20 the first left unused, and keeps 10
    for the next; nothing is given back to the shared booking, where a repay behind the
    present is lost."""
    pacer = _pacer(tmp_path, tokens_per_minute=600)  # 0.1 s a token, a minute's burst

    async def two_calls() -> None:
        for _ in range(2):
            async with pacer.call(30) as call:
                call.tokens = 10

    asyncio.run(two_calls())
    # booked 30, then 0 of the 10 expected (from the 20 left): 30 ahead, 10 of it credit
    wait = pacer.state.take_paced(pacer.judge, "tokens", 600, 0, burst=1)
    assert 2.5 < wait <= 2.9  # 30 tokens booked ahead, less one token's burst
    assert pacer.estimates.corrected(30) == 10


def test_a_budget_a_call_short_pauses_for_the_missing_part_at_the_told_rate():
    """A provider refills continuously (OpenAI): one request short at 600 a minute is
    0.1 s, not the reset (the time until the whole budget is back), which is the most."""
    limits = RateLimits(
        remaining_requests=0, remaining_tokens=100, reset_requests_s=1.0, reset_tokens_s=0.9,
        limit_requests=600, limit_tokens=200000,
    )  # fmt: skip
    assert limits.pause_s(tokens_needed=100) == pytest.approx(0.1)  # the request
    assert limits.pause_s(tokens_needed=1100) == pytest.approx(0.3)  # 1000 tokens short
    assert limits.pause_s(tokens_needed=10**6) == 0.9  # never past the reset


def test_a_call_bigger_than_the_burst_is_told_to_wait_until_the_booking_ahead_ends(tmp_path):
    """Not until its own booking would end: every waiting call slept one call too long,
    and tokens paced from the headers (a burst of one token) idled half the time."""
    state = SharedState(tmp_path / "s.sqlite")
    assert state.take_paced("j", "tokens", 6000, 300, burst=1) == 0.0  # 3 s booked
    wait = state.take_paced("j", "tokens", 6000, 300, burst=1)
    assert 2.5 < wait <= 3.0  # the 3 s ahead of it, not 6


def test_a_configured_limit_is_kept_evenly_and_a_lower_told_one_wins(tmp_path):
    """No minute's burst: 600 a minute is one call every 0.1 s from the first (a provider
    enforcing its limit over a second refused half the calls a burst sent); a provider
    telling 300 a minute is kept at 300."""
    pacer = _pacer(tmp_path, requests_per_minute=600)
    asyncio.run(_one_call(pacer))
    wait = pacer.state.book_request(pacer.judge, 600.0, held=False)
    assert 0.05 < wait <= 0.1  # the next call's turn: one interval after the first
    told = _pacer(tmp_path / "told", requests_per_minute=600)
    told.state.record_outcome(told.judge, 16, False, RateLimits(5, limit_requests=300))
    asyncio.run(_one_call(told))
    assert 0.15 < told.state.book_request(told.judge, 600.0, held=False) <= 0.2


async def _one_call(pacer: Pacer) -> None:
    async with pacer.call(100):
        pass


def test_a_call_with_no_turn_before_its_deadline_says_so_instead_of_waiting(tmp_path):
    """One call a minute: the second call's turn is a minute away, past its evaluation's
    deadline; it gives up then, naming the pace, rather than run into the pool's timeout."""
    pacer = _pacer(tmp_path, requests_per_minute=1)
    asyncio.run(_one_call(pacer))

    async def late_call() -> None:
        async with pacer.call(100, deadline=time.monotonic() + 0.2):
            pytest.fail("the call went before its turn")

    with pytest.raises(NoTurnInTime, match=r"deadline \(paced at 1 requests a minute\)"):
        asyncio.run(late_call())
    assert HeldBack.calls == 0
