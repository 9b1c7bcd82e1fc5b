"""Which judge a worker builds: the provider names and the judge's full specification."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, SecretStr

from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.redaction import url_secrets

JudgeProvider = Literal[
    "dry-run", "openai", "openai-compatible", "azure-openai", "anthropic", "local"
]
JUDGE_PROVIDERS: tuple[str, ...] = get_args(JudgeProvider)


class JudgeSpec(BaseModel):
    """Which judge a worker builds and how it behaves.

    The key travels to the worker, never into results, logs or the journal: only
    ``label`` is stored.
    """

    model_config = ConfigDict(frozen=True)

    provider: JudgeProvider = "dry-run"
    model: str = "dry-run"
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None  # Azure OpenAI
    timeout_s: float = 60.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    retry: RetryPolicy = RetryPolicy()
    max_in_flight: int = 32  # judge calls in flight across all workers
    requests_per_minute: int | None = None
    breaker_threshold: int = 10  # consecutive failed calls that open the circuit
    breaker_cool_down_s: float = 60.0
    cache: bool = True
    cache_scope: Literal["run", "shared"] = "run"  # "run": each run index re-samples
    state_dir: str | None = None  # cache, rate window and breaker (SQLite), slot locks

    @property
    def is_dry_run(self) -> bool:
        """Scores from the dry-run judge are not judgements and are marked as such."""
        return self.provider == "dry-run"

    @property
    def marker(self) -> str | None:
        """What every reason of this judge is prefixed with, if its judgements are not real."""
        if self.is_dry_run:
            return "[dry-run judge, not a judgement]"
        if self.provider == "local":
            return f"[local smoke-test judge {self.model}, not a reliable judgement]"
        return None

    @property
    def secrets(self) -> list[str]:
        """What no message may show: the key, and any credential the base URL carries."""
        key = self.api_key.get_secret_value() if self.api_key else ""
        return [secret for secret in [key, *url_secrets(self.base_url)] if secret]

    @property
    def label(self) -> str:
        """Provider and model, safe to store and print."""
        return "dry-run" if self.is_dry_run else f"{self.provider}:{self.model}"
