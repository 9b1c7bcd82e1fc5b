"""The judge's HTTP client: the proxy the environment names, and a session closed when dropped."""

import gc
import logging

import pytest

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.judging.judge import PipelineJudge, UsageCounter
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def loopback():
    server = LoopbackJudge(latency_s=0.0).start()
    yield server
    server.stop()


@pytest.fixture
def no_proxies(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def judge(base_url):
    spec = JudgeSpec(
        provider="openai-compatible",
        model="loopback-judge",
        base_url=base_url,
        timeout_s=2.0,
        retry=RetryPolicy(max_attempts=1, base_delay_s=0.01, max_delay_s=0.05),
    )
    return PipelineJudge(spec, UsageCounter())


def test_a_judge_goes_through_the_proxy_the_environment_names(loopback, no_proxies):
    no_proxies.setenv("HTTP_PROXY", f"http://127.0.0.1:{loopback.port}")
    # A host that resolves nowhere: only the proxy can answer for it.
    assert judge("http://judge.invalid/v1").generate("What is 2+2?")
    assert loopback.urls_seen == ["http://judge.invalid/v1/chat/completions"]


def test_a_host_no_proxy_names_is_called_directly(loopback, no_proxies):
    no_proxies.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    no_proxies.setenv("NO_PROXY", "127.0.0.1")
    assert judge(loopback.base_url).generate("What is 2+2?")
    assert loopback.urls_seen == ["/v1/chat/completions"]


def test_a_dropped_judge_closes_its_connections_without_an_error_logged(
    loopback, no_proxies, caplog
):
    dropped = judge(loopback.base_url)
    dropped.generate("What is 2+2?")
    session = dropped._provider._session
    assert session is not None and not session.closed
    with caplog.at_level(logging.ERROR):
        del dropped
        gc.collect()
    assert session.closed
    assert "Unclosed" not in caplog.text


def test_judges_load_the_certificates_they_trust_once_per_process(loopback, no_proxies):
    import httpx2

    from n8n_deepeval_pipeline.judging import providers

    loads = []
    real = httpx2.create_ssl_context
    no_proxies.setattr(httpx2, "create_ssl_context", lambda: loads.append(1) or real())
    providers.tls_context.cache_clear()
    try:
        # Two judges (a run's state folder makes a new one in every worker): one load.
        for base_url in (loopback.base_url, loopback.base_url + "/"):
            assert judge(base_url).generate("What is 2+2?")
    finally:
        providers.tls_context.cache_clear()
    assert len(loads) == 1
