"""The synthesizer process as the CLI starts it: a crash is said with its exit code and last
words, and a judge refusing for ever ends it in time."""

import time

import pytest

from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.synthesis.process import run_synthesis, secrets_of
from n8n_deepeval_pipeline.synthesis.request import EmbedderSpec, SynthesisRequest

JUDGE = JudgeSpec(provider="openai", model="gpt-4.1", api_key="sk-judge-key")


def test_nothing_said_may_show_the_judge_s_or_the_embedder_s_key() -> None:
    embedder = EmbedderSpec(provider="openai", model="text-embedding-3-small", api_key="sk-emb")
    request = SynthesisRequest(method="docs", count=1, documents=["/d.md"], judge=JUDGE,
                               embedder=embedder)  # fmt: skip
    assert sorted(secrets_of(request)) == ["sk-emb", "sk-judge-key"]
    assert "sk-judge-key" not in request.model_dump_json()  # the keys travel as secrets


@pytest.mark.slow
def test_a_crashed_process_is_a_failure_that_quotes_its_exit_code_and_last_lines(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    # No embedder for the document path: the process stops before any judge call.
    request = SynthesisRequest(method="docs", count=1, documents=["/nowhere.md"], judge=JUDGE)
    said: list[str] = []
    result = run_synthesis(request, said.append)
    assert result.error_kind == "failed" and result.goldens == []
    assert result.error.startswith("the synthesizer ended before its result (exit code 1); ")
    assert result.error.endswith("| AssertionError")
    (log,) = (tmp_path / "home" / "logs").iterdir()  # kept, where the error says
    assert f"its log: {log}" in result.error and "Traceback" in log.read_text()


@pytest.mark.slow
def test_a_judge_refusing_for_ever_ends_the_synthesis_as_rate_limited_saying_so(
    tmp_path, monkeypatch
) -> None:
    # 429s without any header, for ever: a synthesis ran 358 s, silent, with no end.
    from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    server = LoopbackJudge(latency_s=0.0, faults=["429"] * 100_000).start()
    judge = JudgeSpec(provider="openai", model="gpt-4.1", api_key="sk-judge-key",
                      base_url=server.base_url, state_dir=str(tmp_path / "judge"))  # fmt: skip
    request = SynthesisRequest(method="contexts", count=1, contexts=[["The store opens at 9."]],
                               judge=judge, judge_call_limit_s=8.0)  # fmt: skip
    said: list[str] = []
    started = time.monotonic()
    try:
        result = run_synthesis(request, said.append)
    finally:
        server.stop()
    assert time.monotonic() - started < 120  # its calls' time, DeepEval's import, and room
    assert (result.error_kind, result.goldens) == ("judge_rate_limited", [])
    assert "429" in result.error and "sk-judge-key" not in result.error
    assert any("refused and retried" in line for line in said), said  # not silent while refused
