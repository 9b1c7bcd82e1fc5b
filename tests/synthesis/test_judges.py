"""The judge that writes goldens, and the embedder of --from-docs."""

import pytest

from n8n_deepeval_pipeline.judging.spec import JudgeChoice, JudgeConfigError
from n8n_deepeval_pipeline.synthesis.judges import synthesis_embedder, synthesis_judge

OPENAI = {
    "N8N_DEEPEVAL_JUDGE_PROVIDER": "openai",
    "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4o-mini",
    "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-judge",
    "N8N_DEEPEVAL_JUDGE_RPM": "60",
}


def test_the_default_judge_is_the_runs_and_a_benchmarks_judge_wins() -> None:
    spec = synthesis_judge(OPENAI)
    assert (spec.label, spec.requests_per_minute, spec.cache) == ("openai:gpt-4o-mini", 60, True)
    assert spec.api_key is not None and spec.api_key.get_secret_value() == "sk-judge"
    assert synthesis_judge(OPENAI, cache=False).cache is False
    local = JudgeChoice(
        provider="openai-compatible", model="qwen", base_url="http://127.0.0.1:8000/v1"
    )
    chosen = synthesis_judge(OPENAI, local)
    assert (chosen.label, chosen.api_key) == ("openai-compatible:qwen", None)  # no OpenAI key sent


def test_the_dry_run_judge_and_bad_numbers_are_refused() -> None:
    with pytest.raises(JudgeConfigError, match="synthesis needs a real judge"):
        synthesis_judge({})
    with pytest.raises(JudgeConfigError, match="N8N_DEEPEVAL_JUDGE_RPM='lots' is not a number"):
        synthesis_judge({**OPENAI, "N8N_DEEPEVAL_JUDGE_RPM": "lots"})


def test_the_embedder_is_served_as_the_judge_is_unless_told_otherwise() -> None:
    judge = synthesis_judge(OPENAI)
    spec = synthesis_embedder({}, judge, "text-embedding-3-small")
    assert (spec.label, spec.api_key.get_secret_value()) == (
        "openai:text-embedding-3-small",
        "sk-judge",
    )
    with pytest.raises(JudgeConfigError, match="--from-docs needs an embedding model"):
        synthesis_embedder({}, judge, None)
    anthropic = synthesis_judge({**OPENAI, "N8N_DEEPEVAL_JUDGE_PROVIDER": "anthropic",
                                 "N8N_DEEPEVAL_JUDGE_MODEL": "claude-haiku-4-5"})  # fmt: skip
    with pytest.raises(JudgeConfigError, match="the anthropic judge serves no embeddings"):
        synthesis_embedder({}, anthropic, "text-embedding-3-small")
    elsewhere = {"N8N_DEEPEVAL_EMBEDDER_PROVIDER": "openai-compatible",
                 "N8N_DEEPEVAL_EMBEDDER_BASE_URL": "http://127.0.0.1:11434/v1"}  # fmt: skip
    served = synthesis_embedder(elsewhere, anthropic, "nomic-embed-text")
    assert (served.label, served.api_key) == ("openai-compatible:nomic-embed-text", None)
    with pytest.raises(JudgeConfigError, match="the openai-compatible embedder needs"):
        synthesis_embedder({"N8N_DEEPEVAL_EMBEDDER_PROVIDER": "openai-compatible"}, judge, "m")
