"""What the synthesizer process is asked, and what it answers: the boundary between processes.

The request travels over the process's private connection (it carries the judge's key,
which never goes into an argument list or an environment); the answer comes back on it.
Evolution names are DeepEval's own (``Evolution``'s values).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from n8n_deepeval_pipeline.judging.failures import JudgeFailureKind
from n8n_deepeval_pipeline.judging.retry_policy import DEFAULT_CALL_LIMIT_S
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.synthesis.styling import Styling

Method = Literal["scratch", "contexts", "docs", "goldens"]
# The option's spelling → DeepEval's ``Evolution`` value (from scratch, Multi-context has
# no context to draw on and DeepEval leaves it out).
EVOLUTIONS: dict[str, str] = {
    "reasoning": "Reasoning",
    "multi-context": "Multi-context",
    "concretizing": "Concretizing",
    "constrained": "Constrained",
    "comparative": "Comparative",
    "hypothetical": "Hypothetical",
    "in-breadth": "In-Breadth",
}
# DeepEval's default: every evolution equally likely.
DEFAULT_EVOLUTIONS: dict[str, float] = {name: 1 / 7 for name in EVOLUTIONS.values()}
EmbedderProvider = Literal["openai", "azure-openai", "openai-compatible"]
# A judge's failure in the words the metrics' scores use; the document path's missing
# dependencies; the process itself.
ErrorKind = JudgeFailureKind | Literal["dependency", "failed"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Seed(_Strict):
    """A golden to vary (``--from-dataset``): its input (or scenario) and its passages."""

    text: str = Field(min_length=1)
    context: list[str] | None = None
    expected: str | None = None  # expected output, or a conversation's expected outcome
    origin: str  # where it was read: file and row, for the provenance of what it gives


class EmbedderSpec(_Strict):
    """The embedding model DeepEval's document path chunks and compares with."""

    provider: EmbedderProvider
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None

    @property
    def label(self) -> str:
        """Provider and model, safe to print."""
        return f"{self.provider}:{self.model}"


class SynthesisRequest(_Strict):
    """One synthesis: the method, its material, DeepEval's settings, the judge."""

    method: Method
    conversational: bool = False
    count: int = Field(ge=1, description="From scratch: goldens; else: per context or seed.")
    contexts: list[list[str]] = Field(default_factory=list)
    seeds: list[Seed] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list)  # absolute paths
    styling: Styling | None = None
    evolutions: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_EVOLUTIONS))
    num_evolutions: int = Field(default=1, ge=0)
    quality_threshold: float = Field(default=0.5, ge=0, le=1)
    quality_retries: int = Field(default=3, ge=1)
    with_expected_output: bool = False
    max_concurrent: int = Field(default=100, ge=1)  # DeepEval's default
    random_seed: int | None = None
    judge: JudgeSpec
    embedder: EmbedderSpec | None = None
    cache_namespace: str = "synthesis"
    judge_call_limit_s: float = Field(default=DEFAULT_CALL_LIMIT_S, gt=0)
    """How long one judge call may take, its rate-limit retries and its wait for a turn
    included: what an evaluation of the worker pool gives its judge."""


class SynthesizedGolden(_Strict):
    """One golden as DeepEval's Synthesizer made it, with what it says of its making."""

    text: str  # the input, or a conversational golden's scenario
    context: list[str] | None = None
    expected: str | None = None  # expected output, or expected outcome
    evolutions: list[str] = Field(default_factory=list)
    quality: float | None = None  # the filter's score of the input (None: not filtered)
    source_file: str | None = None


class SynthesisUsage(_Strict):
    """The judge calls the synthesis took."""

    calls: int = 0
    retries: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class SynthesisResult(_Strict):
    """The goldens, or why there are none; the judge's usage either way."""

    goldens: list[SynthesizedGolden] = Field(default_factory=list)
    usage: SynthesisUsage = SynthesisUsage()
    error: str | None = None
    error_kind: ErrorKind | None = None


def evolution_weights(chosen: dict[str, float]) -> dict[str, float]:
    """Weights by DeepEval's evolution names, from the option's spellings."""
    unknown = sorted(set(chosen) - set(EVOLUTIONS))
    if unknown:
        raise ValueError(
            f"unknown evolution(s) {', '.join(unknown)}: choose from {', '.join(EVOLUTIONS)}"
        )
    return {EVOLUTIONS[name]: weight for name, weight in chosen.items()}


def parse_evolution(text: str) -> tuple[str, float]:
    """``--evolution NAME`` or ``NAME=WEIGHT`` → (name, weight)."""
    name, _, weight = text.partition("=")
    name = name.strip().lower()
    if name not in EVOLUTIONS:
        raise ValueError(f"unknown evolution {name!r}: choose from {', '.join(EVOLUTIONS)}")
    try:
        value = float(weight) if weight else 1.0
    except ValueError:
        raise ValueError(f"{text!r}: the weight after = must be a number") from None
    if value <= 0:
        raise ValueError(f"{text!r}: the weight must be above 0")
    return name, value
