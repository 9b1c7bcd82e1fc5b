"""Each judge call's model, tokens and timing, kept only when a trace is exported."""

import time

import pytest

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.judging.judge import (
    JUDGE_SCOPE,
    JudgeCallError,
    JudgeScope,
    PipelineJudge,
    UsageCounter,
)
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

QUICK = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


def _ask(usage: UsageCounter, faults: list[str], state_dir: str | None = None) -> None:
    server = LoopbackJudge(latency_s=0.05, faults=faults).start()
    spec = JudgeSpec(
        provider="openai-compatible", model="loopback-judge", base_url=server.base_url,
        timeout_s=2.0, retry=QUICK, state_dir=state_dir,
    )  # fmt: skip
    scope = JUDGE_SCOPE.set(JudgeScope(usage))
    try:
        judge = PipelineJudge(spec, UsageCounter())
        judge.generate("What is 2+2?")
        judge.generate("What is 2+2?")  # the cache's answer, when there is a cache
    finally:
        JUDGE_SCOPE.reset(scope)
        server.stop()


def test_each_call_is_kept_with_its_tokens_retries_and_duration(tmp_path):
    usage = UsageCounter(keep_calls=True)
    before = time.time()
    _ask(usage, ["503"], state_dir=str(tmp_path))
    assert usage.call_log is not None
    answered, cached = usage.call_log
    assert (answered.judge, answered.provider, answered.model) == (
        "openai-compatible:loopback-judge", "openai-compatible", "loopback-judge",
    )  # fmt: skip
    assert answered.retries == 1 and not answered.cached and answered.error is None
    assert (answered.prompt_tokens, answered.completion_tokens) == (
        usage.prompt_tokens, usage.completion_tokens,
    )  # fmt: skip
    assert answered.prompt_tokens > 0
    assert before <= answered.started_at <= time.time()
    assert answered.duration_s >= 0.1  # two answers of 50 ms, and a backoff between them
    assert cached.cached and cached.prompt_tokens == cached.completion_tokens == 0
    assert (usage.calls, usage.cached) == (1, 1)


def test_a_failed_call_is_kept_with_its_error():
    usage = UsageCounter(keep_calls=True)
    with pytest.raises(JudgeCallError):
        _ask(usage, ["500"] * 5)
    assert usage.call_log is not None
    (failed,) = usage.call_log
    assert failed.error is not None and "HTTP 500" in failed.error
    assert failed.retries == 2 and failed.prompt_tokens == 0


def test_nothing_is_kept_when_no_trace_is_exported():
    usage = UsageCounter()
    _ask(usage, [])
    assert usage.call_log is None
    assert usage.calls == 2  # no cache here: both were asked
