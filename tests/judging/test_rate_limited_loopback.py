"""The loopback judge as a rate-limited provider: its bucket of requests and tokens."""

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, RateBucket, answer_for

T0 = 1000.0


def test_tokens_bind_when_requests_are_left_and_the_bucket_refills_continuously():
    bucket = RateBucket(requests_per_minute=600, tokens_per_minute=6000, burst_s=1.0, now=T0)
    # 1 s of refill: 10 requests, 100 tokens; a call of 60 tokens fits once
    admitted, headers = bucket.take(60, T0)
    assert admitted
    assert headers == {
        "x-ratelimit-limit-requests": "600",
        "x-ratelimit-remaining-requests": "9",
        "x-ratelimit-reset-requests": "0.100s",
        "x-ratelimit-limit-tokens": "6000",
        "x-ratelimit-remaining-tokens": "40",
        "x-ratelimit-reset-tokens": "0.600s",
    }
    refused, headers = bucket.take(60, T0)
    assert not refused  # 9 requests left, but 40 tokens: the tokens bind
    assert headers["retry-after"] == "0.200"  # 20 tokens short at 100 a second
    assert headers["x-ratelimit-remaining-requests"] == "9"  # a refusal takes nothing
    assert bucket.take(60, T0 + 0.2)[0]  # refilled by then: 40 + 20


def test_the_bucket_holds_no_more_than_its_burst():
    bucket = RateBucket(requests_per_minute=60, tokens_per_minute=None, burst_s=2.0, now=T0)
    assert [bucket.take(10**6, T0 + 3600)[0] for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize("limits", [{"requests_per_minute": 1}, {"tokens_per_minute": 120}])
def test_a_call_beyond_the_bucket_is_refused_at_once_while_the_admitted_one_waits(limits):
    """A provider refuses on arrival: the 429 does not wait for the judge's latency."""
    server = LoopbackJudge(latency_s=30.0, burst_s=60.0, **limits).start()
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}]}
    url = f"{server.base_url}/chat/completions"
    try:
        first = threading.Thread(target=_post_quietly, args=(url, body), daemon=True)
        first.start()
        for _ in range(500):  # until the first is let in (it then waits its 30 s)
            if server.admitted:
                break
            time.sleep(0.01)
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(url, body, timeout_s=10)
        assert refused.value.code == 429
        assert float(refused.value.headers["retry-after"]) > 0
        assert first.is_alive()  # still waiting for its answer
        assert (server.rate_limited, len(server.admitted)) == (1, 1)
        # what the bucket took: the usage the answer reports, prompt and answer tokens
        assert server.admitted[0][1] == 100 + len(answer_for(body)) // 4
    finally:
        server.stop()


def _post(url: str, body: dict[str, object], timeout_s: float) -> None:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=timeout_s).close()


def _post_quietly(url: str, body: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # the server stops before it answers
        _post(url, body, timeout_s=60)


def _status_and_headers(url: str, body: dict[str, object]) -> tuple[int, dict[str, str]]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, {name.lower(): value for name, value in answer.headers.items()}
    except urllib.error.HTTPError as refused:
        return refused.code, {name.lower(): value for name, value in refused.headers.items()}


@pytest.mark.parametrize(
    ("announce", "on_answers", "on_refusals"),
    [
        ("headers", {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
                     "x-ratelimit-reset-requests"},
         {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
          "x-ratelimit-reset-requests", "retry-after"}),
        ("retry-after", set(), {"retry-after"}),
        ("nothing", set(), set()),
    ],
)  # fmt: skip
def test_a_judge_may_keep_its_limit_to_itself(announce, on_answers, on_refusals):
    """What it tells of its budget: OpenAI's headers, only Retry-After, or nothing; it
    limits all the same."""
    server = LoopbackJudge(latency_s=0.0, requests_per_minute=1, announce=announce).start()
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    try:
        answered = _status_and_headers(f"{server.base_url}/chat/completions", body)
        refused = _status_and_headers(f"{server.base_url}/chat/completions", body)
    finally:
        server.stop()
    told = {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-requests", "retry-after"}  # fmt: skip
    assert (answered[0], told & answered[1].keys()) == (200, on_answers)
    assert (refused[0], told & refused[1].keys()) == (429, on_refusals)
    assert (server.rate_limited, len(server.admitted)) == (1, 1)
