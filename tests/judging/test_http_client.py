"""The judge's SDK client: the proxy the environment names, one per process, closed at exit."""

import ssl
import subprocess
import sys

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


def test_judges_of_one_endpoint_share_one_client_per_process(loopback, no_proxies):
    first, second = judge(loopback.base_url), judge(loopback.base_url)
    for each in (first, second):
        assert each.generate("What is 2+2?")
    assert first._provider._client is second._provider._client
    other = judge(loopback.base_url + "/")  # another endpoint: a client of its own
    assert other.generate("What is 2+2?")
    assert other._provider._client is not first._provider._client


def test_a_process_closes_its_clients_when_it_exits_without_an_error_logged(loopback):
    script = f"""
import logging
logging.basicConfig(level=logging.ERROR)
from tests.judging.test_http_client import judge
assert judge("{loopback.base_url}").generate("What is 2+2?")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert "Unclosed" not in done.stderr, done.stderr


def test_judges_load_the_certificates_they_trust_once_per_process(loopback, no_proxies):
    from n8n_deepeval_pipeline.judging import providers

    loads = []
    real = ssl.SSLContext.load_verify_locations

    def counted(context, *args, **kwargs):
        loads.append(1)
        return real(context, *args, **kwargs)

    no_proxies.setattr(ssl.SSLContext, "load_verify_locations", counted)
    providers.tls_context.cache_clear()
    try:
        # Two judges of two endpoints (two SDK clients): the certificates load once.
        for base_url in (loopback.base_url, loopback.base_url + "/"):
            assert judge(base_url).generate("What is 2+2?")
    finally:
        providers.tls_context.cache_clear()
    assert len(loads) == 1
