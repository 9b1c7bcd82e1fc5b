"""A rate-limit answer is retried while the evaluation has time, never a number of times."""

import time

import pytest

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.evaluation import is_unjudged
from n8n_deepeval_pipeline.judging.failures import JudgeCallError, JudgeRateLimited
from n8n_deepeval_pipeline.judging.judge import (
    JUDGE_SCOPE,
    JudgeScope,
    PipelineJudge,
    UsageCounter,
)
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

TWO_ATTEMPTS = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02)


def _ask(faults: list[str], deadline_s: float) -> tuple[UsageCounter, LoopbackJudge, object]:
    """Ask a loopback judge that answers ``faults`` first, within an evaluation's deadline."""
    server = LoopbackJudge(latency_s=0.0, faults=faults).start()
    spec = JudgeSpec(
        provider="openai-compatible", model="loopback-judge", base_url=server.base_url,
        timeout_s=2.0, retry=TWO_ATTEMPTS,
    )  # fmt: skip
    usage = UsageCounter()
    scope = JUDGE_SCOPE.set(JudgeScope(usage, deadline=time.monotonic() + deadline_s))
    try:
        return usage, server, PipelineJudge(spec, UsageCounter()).generate("What is 2+2?")
    finally:
        JUDGE_SCOPE.reset(scope)
        server.stop()


def test_a_rate_limited_call_is_retried_past_the_attempts_a_failure_has():
    usage, server, answer = _ask(["429", "529", "429:0.01", "503:0.01"] * 3, deadline_s=60)
    assert answer
    assert (usage.calls, usage.retries) == (1, 12)  # 12 refusals: six times the two attempts
    assert dict(server.served) == {"429": 6, "529": 3, "503": 3, "ok": 1}


def test_the_evaluations_deadline_ends_the_retries_with_a_rate_limited_error():
    with pytest.raises(JudgeRateLimited) as raised:
        _ask(["429"] * 10_000, deadline_s=0.5)
    assert raised.value.status == 429
    assert "the evaluation's time for retries is spent" in str(raised.value)
    attempts = int(str(raised.value).split("after ")[1].split(" attempt")[0])
    assert attempts > TWO_ATTEMPTS.max_attempts  # a time, not a count, ended them
    assert isinstance(raised.value, JudgeCallError)  # every caller of judge errors sees it
    assert is_unjudged("judge_rate_limited")  # its row is asked again on resume


def test_other_failures_keep_their_count_of_attempts():
    with pytest.raises(JudgeCallError) as raised:
        _ask(["500", "503", "500"], deadline_s=60)
    assert not isinstance(raised.value, JudgeRateLimited)
    assert "HTTP 503 injected 503 (after 2 attempt(s))" in str(raised.value)


def _paced(server: LoopbackJudge, tmp_path, **retry: float) -> JudgeSpec:
    """A judge paced at two requests a minute: a retry's turn comes 30 s after the call."""
    return JudgeSpec(
        provider="openai-compatible", model="loopback-judge", base_url=server.base_url,
        timeout_s=2.0, state_dir=str(tmp_path / "judge"), requests_per_minute=2,
        retry=RetryPolicy(base_delay_s=0.01, max_delay_s=0.02, **retry),
    )  # fmt: skip


@pytest.mark.parametrize("outside", ["policy", "call_limit"])
def test_a_call_outside_an_evaluation_waits_for_its_turn_no_longer_than_its_time(tmp_path, outside):
    # A judge answering 429 without headers forever: a retry waited for its turn with no
    # deadline, so one simulated user's call took 498 s where 270 s were documented.
    server = LoopbackJudge(latency_s=0.0, faults=["429"] * 10_000).start()
    usage = UsageCounter()
    if outside == "policy":  # a judge used on its own: the retry policy's total
        spec, scope = _paced(server, tmp_path, max_total_s=1.0), JudgeScope(usage)
    else:  # a simulated user's or the synthesizer's: what an evaluation gives the judge
        spec, scope = _paced(server, tmp_path), JudgeScope(usage, call_limit_s=1.0)
    token = JUDGE_SCOPE.set(scope)
    started = time.monotonic()
    try:
        with pytest.raises(JudgeRateLimited) as raised:
            PipelineJudge(spec, usage).generate("What is 2+2?")
    finally:
        JUDGE_SCOPE.reset(token)
        server.stop()
    assert time.monotonic() - started < 10  # 1 s and some room; not the 30 s of its turn
    assert "no turn for a judge call before the evaluation's deadline" in str(raised.value)
    assert "paced at 2 requests a minute" in str(raised.value)
    assert server.requests == 1  # the retry never had a turn
