"""The synthesizer process as the CLI starts it: a crash is said, with its last words."""

import pytest

from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.synthesis.process import run_synthesis, secrets_of
from n8n_deepeval_pipeline.synthesis.request import EmbedderSpec, SynthesisRequest, wire_to_request

JUDGE = JudgeSpec(provider="openai", model="gpt-4.1", api_key="sk-judge-key")


def test_the_keys_travel_in_the_request_and_nothing_else_may_show_them() -> None:
    embedder = EmbedderSpec(provider="openai", model="text-embedding-3-small", api_key="sk-emb")
    request = SynthesisRequest(method="docs", count=1, documents=["/d.md"], judge=JUDGE,
                               embedder=embedder)  # fmt: skip
    back = wire_to_request(request.to_wire())
    assert back.judge.api_key.get_secret_value() == "sk-judge-key"
    assert back.embedder.api_key.get_secret_value() == "sk-emb"
    assert sorted(secrets_of(request)) == ["sk-emb", "sk-judge-key"]
    assert "sk-judge-key" not in request.model_dump_json()  # only the wire form reveals it


@pytest.mark.slow
def test_a_crashed_process_is_a_failure_that_quotes_its_last_line() -> None:
    # No embedder for the document path: the process stops before any judge call.
    request = SynthesisRequest(method="docs", count=1, documents=["/nowhere.md"], judge=JUDGE)
    said: list[str] = []
    result = run_synthesis(request, said.append)
    assert result.error_kind == "failed" and result.goldens == []
    assert result.error.startswith("the synthesizer process failed (exit 1): AssertionError")
    assert said[-1] == "AssertionError" and any("Traceback" in line for line in said)
