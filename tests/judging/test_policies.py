"""Retry policy, Retry-After parsing, prices, the shared judge state and the schema filler."""

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.retry_policy import (
    RetryPolicy,
    is_rate_limited,
    parse_retry_after,
)
from n8n_deepeval_pipeline.judging.schema_filler import fill_schema
from n8n_deepeval_pipeline.judging.shared_state import CachedAnswer, SharedState, cache_key


def test_backoff_is_bounded_jittered_and_retry_after_wins():
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=8)
    rng = random.Random(1)
    delays = [policy.delay(attempt, None, rng) for attempt in range(1, 10) for _ in range(50)]
    assert all(0 <= d <= 8 for d in delays)
    assert max(policy.delay(1, None, rng) for _ in range(200)) <= 0.5
    assert max(policy.delay(5, None, rng) for _ in range(200)) > 4  # ceiling 0.5 * 2^4 = 8
    assert policy.delay(3, 2.5, rng) == 2.5
    assert policy.delay(3, 120, rng) == 8  # a server asking for two minutes is capped


def test_retry_after_in_seconds_or_as_an_http_date():
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=7), usegmt=True), now) == 7.0
    assert parse_retry_after("yesterday") is None
    assert parse_retry_after(None) is None


def test_prices_per_million_tokens_with_dated_names_and_user_additions(tmp_path):
    table = PriceTable()
    assert table.cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert table.cost("gpt-4o-2024-08-06", 2_000, 1_000) == pytest.approx(
        (2_000 * 2.5 + 1_000 * 10) / 1e6
    )
    assert table.cost("my-vllm-model", 10, 10) is None
    # a gateway's and a cloud's names for a model: its maker's price
    assert table.price("openai/gpt-4.1-mini") == table.price("gpt-4.1-mini")
    bedrock = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert table.cost(bedrock, 1_000_000, 0) == pytest.approx(3.0)
    assert table.cost("gemini-2.5-flash-lite", 0, 1_000_000) == pytest.approx(0.4)
    assert table.cost("meta.llama3-1-70b-instruct-v1:0", 10, 10) is None
    extra = tmp_path / "prices.yaml"
    extra.write_text(
        "my-vllm-model: {input: 0.1, output: 0.2}\ngpt-4o-mini: {input: 1, output: 1}\n"
    )
    custom = PriceTable.from_file(extra)
    assert custom.cost("my-vllm-model", 1_000_000, 0) == pytest.approx(0.1)
    assert custom.cost("gpt-4o-mini", 1_000_000, 0) == pytest.approx(1.0)
    extra.write_text("bad-model: {input: -1}\n")
    with pytest.raises(BenchmarkConfigError) as caught:
        PriceTable.from_file(extra)
    assert "bad-model.input: Input should be greater than or equal to 0" in caught.value.problems
    assert "bad-model.output: Field required" in caught.value.problems


def test_cache_keys_separate_everything_that_decides_an_answer():
    base = ("openai", "gpt-4o", {"temperature": 0}, "prompt", {"type": "object"}, "0")
    key = cache_key(*base)
    for index, other in enumerate(
        ["anthropic", "gpt-4o-mini", {"temperature": 1}, "prompt!", None, "1"]
    ):
        changed = list(base)
        changed[index] = other
        assert cache_key(*changed) != key
    assert cache_key(*base) == key


def test_shared_state_cache_rate_window_and_breaker(tmp_path):
    state = SharedState(tmp_path / "judge.sqlite")
    other = SharedState(tmp_path / "judge.sqlite")  # another worker
    state.store("k", CachedAnswer(answer="{}", prompt_tokens=3, completion_tokens=2))
    assert other.cached("k") == CachedAnswer(answer="{}", prompt_tokens=3, completion_tokens=2)
    assert other.cached("missing") is None
    # 3 requests a minute with a minute's burst: three at once, the fourth 20 s later
    assert [state.take_paced("a", "requests", 3, 1, burst=3) for _ in range(3)] == [0.0] * 3
    assert 19 < other.take_paced("a", "requests", 3, 1, burst=3) <= 20
    assert other.take_paced("b", "requests", 3, 1, burst=3) == 0.0  # another judge's own
    assert state.record_failure("a", "HTTP 500", threshold=2, cool_down_s=30) == 1
    assert other.breaker_open("a") == (False, "HTTP 500")
    assert other.record_failure("a", "HTTP 503", threshold=2, cool_down_s=30) == 2
    assert state.breaker_open("a") == (True, "HTTP 503")
    assert state.breaker_open("b") == (False, None)  # and its own breaker
    state.record_success("a")
    assert other.breaker_open("a")[0] is False
    other.record_failure("a", "HTTP 500", threshold=1, cool_down_s=30)
    other.record_failure("b", "HTTP 500", threshold=1, cool_down_s=30)
    state.reset_breaker()  # a new scoring step closes every judge's breaker
    assert (state.breaker_open("a")[0], state.breaker_open("b")[0]) == (False, False)
    assert state.clear_cache() == 1


def test_schema_filler_fits_bounds_scales_and_question_counts():
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "verdicts": {"type": "array", "items": {"$ref": "#/$defs/V"}},
            "answers": {"type": "array", "items": {"type": "string"}},
            "facts": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "$defs": {
            "V": {"type": "object", "properties": {"verdict": {"enum": ["yes", "no", "idk"]}}}
        },
    }
    value = fill_schema(schema, b"seed", "Questions: ['a?', 'b?', 'c?']\n")
    assert 1 <= value["score"] <= 5
    assert all(v["verdict"] in {"yes", "no", "idk"} for v in value["verdicts"])
    assert len(value["answers"]) == 3 and set(value["answers"]) <= {"yes", "no"}
    assert len(value["facts"]) == 1
    assert fill_schema(schema, b"seed", "Questions: ['a?', 'b?', 'c?']\n") == value
    ten = {"type": "object", "properties": {"score": {"type": "number"}}}
    assert 0 <= fill_schema(ten, b"x", "rate it from 0 to 10")["score"] <= 10
    assert 0 <= fill_schema(ten, b"x", "rate it")["score"] <= 1


def test_rate_limit_answers_are_429_529_and_a_503_that_says_it_is_overloaded():
    assert is_rate_limited(429, None, "HTTP 429 Rate limit reached for requests")
    assert is_rate_limited(529, None, "HTTP 529 Overloaded")
    assert is_rate_limited(503, 2.0, "HTTP 503 Service Unavailable")  # with a Retry-After
    assert is_rate_limited(503, None, "HTTP 503 server busy, please try again.")  # Ollama
    assert not is_rate_limited(503, None, "HTTP 503 injected 503")  # down, not busy
    assert not is_rate_limited(500, None, "HTTP 500 too many open files")
    assert not is_rate_limited(None, None, "no answer within 60 s")
