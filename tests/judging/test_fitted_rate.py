"""The request rate fitted to a judge that tells no budget: its rules, and its convergence on
a simulated provider it is told nothing about (a simulated clock: no timing)."""

import pytest

from n8n_deepeval_pipeline.judging.pacing import WINDOW_S, Concurrency, FittedRate
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from tests.judging.simulated_pacing import simulate

T0 = 1000.0


def _sent(fit: FittedRate, count: int, start: float, every: float, held: bool = True):
    for index in range(count):
        fit = fit.sent(start + index * every, held)
    return fit


def test_the_first_refusal_paces_from_the_calls_in_flight_and_the_next_measures_the_rate():
    fit = FittedRate()
    assert not fit.fitting and fit.sent(T0, held=False) == fit  # never refused: not counted
    fit = fit.refusal(T0, sent_at=T0 - 0.01, first_per_s=26.0)
    assert (fit.per_s, fit.since, fit.admitted, fit.measured) == (26.0, T0, 0, None)
    # A second at 26 a second against a provider letting in 9 a second: 17 refused.
    for index in range(26):
        at = T0 + 0.01 + index / 26
        fit = fit.sent(at, held=True)
        if index % 3 != 0:
            fit = fit.refusal(at + 0.002, sent_at=at, first_per_s=0)
    assert fit.admitted == 9 and fit.per_s == 26.0  # refused within the window: once only
    fit = fit.sent(T0 + 0.995, held=True).refusal(T0 + 1.0, sent_at=T0 + 0.995, first_per_s=0)
    assert fit.measured == pytest.approx(9.0)  # 9 let in over the second since
    assert fit.per_s == pytest.approx(0.9 * 9.0)  # a little under, so the bucket refills
    assert (fit.since, fit.admitted, fit.best) == (T0 + 1.0, 0, fit.measured)


def test_a_clean_window_that_waited_grows_the_pace_by_a_step_of_the_measured_rate():
    fit = FittedRate(per_s=9.0, since=T0, measured=10.0, best=10.0, window_at=T0, decreased_at=T0)
    assert fit.window_s == WINDOW_S  # 9 calls a second: a second holds enough of them
    grown = _sent(fit, 9, T0 + 0.05, 0.1).rolled(T0 + 1.0)  # calls waited for their turn
    assert grown.per_s == pytest.approx(9.5)
    assert (grown.clean_per_s, grown.clean_windows, grown.window_at) == (9.0, 1, T0 + 1.0)
    # calls that did not wait (the judge had fewer to send): no sign of more room
    assert _sent(fit, 9, T0 + 0.05, 0.1, held=False).rolled(T0 + 1.0).per_s == 9.0
    refused = _sent(fit, 5, T0 + 0.05, 0.1).refusal(T0 + 0.5, sent_at=T0 + 0.45, first_per_s=0)
    assert refused.per_s == 9.0  # within the window of the last decrease
    assert refused.rolled(T0 + 1.0).per_s == 9.0  # and its window was not clean
    slow = FittedRate(per_s=0.5, since=T0, measured=0.5, window_at=T0)
    assert slow.window_s == 8.0  # at half a call a second a window holds four calls


def test_after_ten_clean_windows_in_a_row_the_measure_is_stale_and_the_pace_probes():
    fit = FittedRate(per_s=5.0, since=T0, measured=5.0, best=5.0, window_at=T0)
    for window in range(1, 11):
        fit = fit.sent(T0 + window - 0.5, held=True).rolled(T0 + window)
    # nine steps of 5 % of the measured 5, then the tenth clean window probes
    assert fit.measured is None and fit.clean_windows == 10
    assert fit.per_s == pytest.approx((5.0 + 9 * 0.25) * 1.5)
    fit = fit.sent(T0 + 10.5, held=True).rolled(T0 + 11)
    assert fit.per_s == pytest.approx((5.0 + 9 * 0.25) * 1.5 * 1.5)


def test_nothing_let_in_halves_the_pace_down_to_an_eighth_of_the_best_rate_measured():
    """An overload or an outage measures no rate: the pace halves each window and then
    probes, never below an eighth of what the judge was seen to accept."""
    fit = FittedRate(per_s=9.0, since=T0, measured=10.0, best=10.0, window_at=T0)
    paces = []
    for window in range(1, 6):
        at = T0 + 2 * window
        fit = fit.sent(at - 0.5, held=True).refusal(at, sent_at=at - 0.5, first_per_s=0)
        paces.append(fit.per_s)
    assert paces == [4.5, 2.25, 1.25, 1.25, 1.25]  # 10 / 8 is the floor
    assert fit.measured is None and fit.best == 10.0


def test_calls_in_flight_keep_room_for_the_fitted_rate_at_the_judges_latency():
    halved = Concurrency(limit=8.0, ceiling=256).overloaded(now=T0)
    assert halved.slots == 4
    assert halved.with_room_for(per_s=10.0, latency_s=2.0) == 40  # 20 in flight, twice over
    assert halved.with_room_for(per_s=None, latency_s=2.0) == 4
    assert halved.with_room_for(per_s=1000.0, latency_s=2.0) == 256  # never past the ceiling
    probing = Concurrency.probing(4, ceiling=256)
    assert [probing.slots, probing.succeeded().slots, probing.succeeded().succeeded().slots] == [
        4,
        7,
        10,
    ]


def test_requests_are_booked_evenly_at_the_lower_of_a_known_and_the_fitted_pace(tmp_path):
    now = [T0]
    state = SharedState(tmp_path / "s.sqlite", clock=lambda: now[0])
    assert state.book_request("j", None, held=False) == 0.0  # no pace known: not booked
    assert state.fitted_rate("j") == FittedRate()
    assert state.book_request("j", 600.0, held=False) == 0.0
    assert state.book_request("j", 600.0, held=False) == pytest.approx(0.1)  # no burst
    now[0] += 0.1
    assert state.book_request("j", 600.0, held=True) == 0.0
    state.record_outcome("j", 256, True, sent_at=now[0], latency_s=1.0)  # refused: fitting
    fitted = state.fitted_rate("j")
    assert fitted.per_s == 64.0  # the halved 128 calls in flight at a second each
    now[0] += 0.2
    assert state.book_request("j", 600.0, held=True) == 0.0
    assert state.book_request("j", 600.0, held=True) == pytest.approx(0.1)  # 600 binds
    assert state.fitted_rate("j").admitted == 1  # a call that went is counted, not a wait
    state.record_outcome("j", 256, True, sent_at=now[0], latency_s=1.0)
    assert state.fitted_rate("j").per_s == 64.0  # the same window: no second decrease


@pytest.mark.parametrize("latency_s", [0.3, 2.0])
@pytest.mark.parametrize("retry_after", [False, True])
def test_the_pacing_converges_on_a_bucket_it_is_not_told_about(tmp_path, latency_s, retry_after):
    """600 requests a minute, a bucket of 1 s of refill, 240 calls always waiting, two
    simulated minutes: the first refusals fit the rate, and the second minute uses the
    limit with few refusals, as the issue's targets ask of a judge that says nothing."""
    outcome = simulate(
        tmp_path, per_minute=600, latency_s=latency_s, seconds=120, retry_after=retry_after
    )
    refused, requests = outcome.refused_between(0, 120)
    assert refused < 0.15 * requests, (refused, requests)
    refused, requests = outcome.refused_between(60, 120)
    assert refused < 0.05 * requests, (refused, requests)
    assert outcome.admitted_between(60, 120) >= 0.9 * 600  # at least 90 % of the limit
    last = outcome.fitted[-1][1]
    assert 540 <= last.measured * 60 <= 690  # what the refusals measured: the limit


def test_after_an_outage_the_pace_finds_the_rate_again(tmp_path):
    """Every call refused for 30 s (an overload episode): the pace halves to its floor,
    then probes back, and the judge uses its limit again within seconds."""
    outcome = simulate(tmp_path, per_minute=600, latency_s=0.3, seconds=90, outage=(10, 40))
    assert outcome.admitted_between(30, 40) == 0
    assert outcome.admitted_between(60, 90) >= 0.9 * 300
    refused, requests = outcome.refused_between(60, 90)
    assert refused < 0.05 * requests


@pytest.mark.parametrize(
    ("per_minute", "burst_s", "latency_s"), [(3000, 1.0, 0.3), (60, 60.0, 1.0), (3, 60.0, 1.0)]
)
def test_a_fast_and_a_slow_limit_are_found_too(tmp_path, per_minute, burst_s, latency_s):
    """50 requests a second, one a second with a minute's burst, three a minute: in the
    second half of the run, at least 90 % of the limit with under 10 % refused."""
    seconds = max(30.0, 60 * 200 / per_minute)  # long enough for a few hundred calls
    outcome = simulate(
        tmp_path, per_minute=per_minute, burst_s=burst_s, latency_s=latency_s, seconds=seconds,
        waiting=max(240, int(per_minute / 60 * latency_s * 4)),
    )  # fmt: skip
    half = seconds / 2
    assert outcome.admitted_between(half, seconds) >= 0.9 * per_minute / 60 * half
    refused, requests = outcome.refused_between(half, seconds)
    assert refused < 0.1 * requests, (refused, requests)
