"""The judge against a loopback OpenAI-compatible server that misbehaves on purpose."""

import time

import pytest
from pydantic import SecretStr

from n8n_deepeval_pipeline import EvaluationItem, JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.evaluation import is_unjudged
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.conftest import evaluate_all, make_task

pytestmark = pytest.mark.slow

KEY = "judge-key-7f3a9c0d"
URL_TOKEN = "url-token-5d21e8"
ITEM = EvaluationItem(input="What is 2+2?", actual_output="4", expected_output="4")
FAST_RETRIES = RetryPolicy(max_attempts=8, base_delay_s=0.05, max_delay_s=3, max_total_s=60)


@pytest.fixture(scope="module")
def pool():
    # One evaluation at a time: the fault plan's order is the order of the tasks' calls.
    pool = WorkerPool(size=1, timeout_s=120, per_worker=1)
    pool.start()
    yield pool
    pool.close()


def spec(server, tmp_path, **options):
    return JudgeSpec(
        provider="openai-compatible",
        model="loopback-judge",
        base_url=options.pop("base_url", server.base_url),
        timeout_s=options.pop("timeout_s", 1.0),
        retry=options.pop("retry", FAST_RETRIES),
        state_dir=str(tmp_path / "judge"),
        **options,
    )


def correctness(judge, count=1, start=0):
    # one judge call per evaluation: the n8n correctness preset
    return [
        make_task(
            {"metric": "correctness"}, ITEM, task_id, judge, run_id=f"h:r{task_id}:0", timeout_s=120
        )
        for task_id in range(start, start + count)
    ]


def test_transient_faults_are_retried_and_retry_after_is_honoured(pool, tmp_path):
    server = LoopbackJudge(
        latency_s=0.01, faults=["429:1", "429", "500", "503", "drop", "slow"], slow_s=3
    ).start()
    try:
        started = time.perf_counter()
        results = evaluate_all(pool, correctness(spec(server, tmp_path), count=3))
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    assert [r.error for r in results] == [None, None, None]
    assert all(r.score in {0.2, 0.4, 0.6, 0.8, 1.0} for r in results)
    assert sum(r.judge_retries for r in results) == 6
    assert results[0].judge_retries == 6  # the first evaluation met every fault
    # the same question for the next two: answered from the cache
    assert dict(server.served) == {"429": 2, "500": 1, "503": 1, "drop": 1, "slow": 1, "ok": 1}
    assert [(r.judge_calls, r.cached_calls) for r in results] == [(1, 0), (0, 1), (0, 1)]
    assert elapsed >= 1.0 + 1.0  # Retry-After: 1, and the 1 s client timeout on the slow answer


def test_a_judge_that_never_stops_refusing_for_its_rate_gives_a_rate_limited_row_in_time(
    pool, tmp_path
):
    """Its 429s are retried past the two attempts another failure has, until the
    evaluation's time for retries (nine tenths of its 4 s timeout) is spent, or its pace
    leaves no turn before then: a judge_rate_limited row, before the pool's own timeout
    would end the worker."""
    server = LoopbackJudge(latency_s=0.0, faults=["429"] * 100_000).start()
    judge = spec(server, tmp_path, retry=RetryPolicy(max_attempts=2, base_delay_s=0.05))
    task = make_task({"metric": "correctness"}, ITEM, 0, judge, run_id="h:r0:0", timeout_s=4)
    try:
        (result,) = evaluate_all(pool, [task])
    finally:
        server.stop()
    assert result.error_kind == "judge_rate_limited"
    # Which comes first depends on the machine's load: a 429 whose backoff would end past
    # the deadline (every attempt was sent), or a retry the fitted pace has no turn for
    # before it (the last attempt never sent). Either way the row says why, in time.
    spent = "time for retries is spent" in result.error
    assert spent or "no turn for a judge call before the evaluation's deadline" in result.error
    assert ("HTTP 429" in result.error) == spent
    assert result.judge_retries > 2
    assert server.served["429"] == result.judge_retries + (1 if spent else 0)
    assert is_unjudged(result.error_kind)  # a resumed run asks again


def test_invalid_answers_are_asked_again_once_then_become_error_rows(pool, tmp_path):
    server = LoopbackJudge(
        latency_s=0.01, faults=["invalid_json", "ok", "invalid_json", "schema_violation"]
    ).start()
    try:
        recovered, failed = evaluate_all(
            pool, correctness(spec(server, tmp_path, cache=False), count=2)
        )
    finally:
        server.stop()
    assert recovered.error is None and recovered.judge_calls == 2
    assert failed.error_kind == "judge_invalid_output"
    assert "answered twice with JSON that does not fit JudgeVerdict" in failed.error
    assert failed.judge_calls == 2


def g_eval(judge, count=1):
    # given steps: G-Eval's one judge call is its schema-less raw call (log-probabilities)
    config = {
        "metric": "g_eval", "name": "total", "evaluation_steps": ["Check the total"],
        "evaluation_params": ["INPUT", "ACTUAL_OUTPUT"],
    }  # fmt: skip
    return [
        make_task(config, ITEM, task_id, judge, run_id=f"h:r{task_id}:0", timeout_s=120)
        for task_id in range(count)
    ]


def test_g_evals_schema_less_call_is_asked_again_once_then_is_an_invalid_output(pool, tmp_path):
    server = LoopbackJudge(
        latency_s=0.01, faults=["invalid_json", "ok", "invalid_json", "invalid_json"]
    ).start()
    try:
        recovered, failed = evaluate_all(pool, g_eval(spec(server, tmp_path, cache=False), 2))
    finally:
        server.stop()
    assert recovered.error is None and recovered.judge_calls == 2
    assert recovered.score_path == "logprob_weighted"  # the second answer, weighted
    assert failed.error_kind == "judge_invalid_output"
    assert failed.error.startswith("the judge answered twice with text that is not the JSON")
    assert failed.judge_calls == 2
    assert server.requests == 4


def test_a_dead_judge_opens_the_circuit_and_the_rest_fail_fast(pool, tmp_path):
    server = LoopbackJudge(latency_s=0.0, fail_always=True).start()
    judge = spec(
        server,
        tmp_path,
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05),
        breaker_threshold=3,
    )
    try:
        started = time.perf_counter()
        results = evaluate_all(pool, correctness(judge, count=10))
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    kinds = [r.error_kind for r in results]
    assert kinds[:3] == ["judge_error"] * 3
    assert kinds[3:] == ["judge_unavailable"] * 7
    assert "3 calls in a row failed" in results[-1].error and "HTTP 500" in results[-1].error
    assert server.requests == 3 * 2  # nothing after the circuit opened
    assert elapsed < 10


def test_a_shared_limit_caps_calls_in_flight_across_workers(tmp_path):
    server = LoopbackJudge(latency_s=0.2).start()
    pool = WorkerPool(size=4, timeout_s=60)
    try:
        results = evaluate_all(
            pool, correctness(spec(server, tmp_path, max_in_flight=2, cache=False), count=8)
        )
    finally:
        pool.close()
        server.stop()
    assert [r.error for r in results] == [None] * 8
    assert server.max_in_flight == 2


@pytest.mark.parametrize(
    ("provider", "options", "path"),
    [
        ("anthropic", {}, "/v1/messages"),
        (
            "azure-openai",
            {"api_version": "2024-10-21"},
            "/openai/deployments/gpt-4o/chat/completions",
        ),
        ("openai", {}, "/v1/chat/completions"),
    ],
)
def test_every_http_provider_speaks_its_api(pool, tmp_path, provider, options, path):
    server = LoopbackJudge(latency_s=0.0).start()
    base = server.base_url.removesuffix("/v1") if provider != "openai" else server.base_url
    judge = JudgeSpec(
        provider=provider,
        model="gpt-4o" if provider != "anthropic" else "claude-haiku-4-5",
        base_url=base,
        api_key=SecretStr("sk-provider-test"),
        state_dir=str(tmp_path / "judge"),
        **options,
    )
    try:
        (result,) = evaluate_all(pool, correctness(judge))
    finally:
        server.stop()
    assert result.error is None and result.judge_calls == 1 and result.prompt_tokens > 0
    assert server.urls_seen[0].split("?")[0] == path
    headers = server.headers_seen[0]
    expected = {  # as each provider's SDK sends the key (Anthropic's: a bearer token)
        "anthropic": ("authorization", "Bearer sk-provider-test"),
        "azure-openai": ("api-key", "sk-provider-test"),
        "openai": ("authorization", "Bearer sk-provider-test"),
    }[provider]
    assert headers[expected[0]] == expected[1]
    if provider == "azure-openai":
        assert server.urls_seen[0].endswith("?api-version=2024-10-21")


def test_a_judge_that_echoes_the_key_gets_it_stored_nowhere(pool, tmp_path):
    server = LoopbackJudge(latency_s=0.0, reject_key=True).start()
    judge = spec(
        server,
        tmp_path,
        base_url=f"{server.base_url}?token={URL_TOKEN}",
        api_key=SecretStr(KEY),
        breaker_threshold=3,
    )
    try:
        results = evaluate_all(pool, correctness(judge, count=5))
    finally:
        server.stop()
    # the server really had both, and quoted them back
    assert server.headers_seen[0]["authorization"] == f"Bearer {KEY}"
    assert URL_TOKEN in server.urls_seen[0]
    refusal = (
        "HTTP 401 Invalid key: Bearer [redacted] (request /v1/chat/completions?token=[redacted])"
    )
    assert [r.error_kind for r in results] == ["judge_auth"] * 3 + ["judge_unavailable"] * 2
    assert all(refusal in r.error for r in results)  # the last two quote the breaker's record
    assert not any(KEY in r.error or URL_TOKEN in r.error for r in results)
    state_files = [path for path in (tmp_path / "judge").rglob("*") if path.is_file()]
    assert any(path.name == SharedState.FILE_NAME for path in state_files)
    for path in state_files:
        data = path.read_bytes()
        assert KEY.encode() not in data and URL_TOKEN.encode() not in data, path


def test_an_error_stored_unredacted_is_redacted_when_shown(pool, tmp_path):
    # a state file written before redaction: the breaker open on a message with the key
    unused = LoopbackJudge()  # an open breaker calls no judge
    judge = spec(unused, tmp_path, api_key=SecretStr(KEY))
    state = SharedState.in_folder(tmp_path / "judge")
    state.record_failure(judge.identity, f"Invalid key {KEY}", threshold=1, cool_down_s=60)
    (result,) = evaluate_all(pool, correctness(judge))
    assert result.error_kind == "judge_unavailable"
    assert result.error.endswith("Last error: Invalid key [redacted]")


def test_a_refusal_is_kept_apart_by_its_status_from_other_judge_errors(pool, tmp_path):
    server = LoopbackJudge(latency_s=0.0, faults=["401", "403", "500"]).start()
    judge = spec(server, tmp_path, retry=RetryPolicy(max_attempts=1), breaker_threshold=10)
    try:
        results = evaluate_all(pool, correctness(judge, count=3))
    finally:
        server.stop()
    assert [r.error_kind for r in results] == ["judge_auth", "judge_forbidden", "judge_error"]
    assert "HTTP 403" in results[1].error
