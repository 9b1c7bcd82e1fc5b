"""The judge resource: which model DeepEval metrics are given as ``model=``, and how calls behave.

The resource holds the default; a benchmark file may name another provider. Keys are
read here only (from environment variables, through ``EnvVar`` in the definitions or
a benchmark's ``apiKeyEnv``) and travel to the workers inside the judge spec; they are
never logged or stored (tables record ``provider:model`` only).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field, SecretStr, ValidationError

from n8n_deepeval_pipeline.benchmark_config import JudgeOverride
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from n8n_deepeval_pipeline.judging.spec import JUDGE_PROVIDERS, JudgeSpec

_NEEDS_URL = {"openai-compatible": "base_url", "azure-openai": "base_url (the Azure endpoint)"}


class JudgeConfigError(ValueError):
    """The judge cannot be built from the configuration given."""


class JudgeResource(dg.ConfigurableResource):
    """Default judge and call policy for every benchmark."""

    provider: str = Field(
        default="dry-run",
        description=f"One of: {', '.join(JUDGE_PROVIDERS)}.",
    )
    model: str = "dry-run"
    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:11434/v1")
    api_key: str | None = Field(default=None, description="Set from an environment variable.")
    api_version: str | None = Field(default=None, description="Azure OpenAI API version.")
    timeout_s: float = 60.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    max_attempts: int = 6
    max_retry_total_s: float = 300.0
    max_in_flight: int = Field(default=32, description="Judge calls in flight, all workers.")
    requests_per_minute: int | None = None
    breaker_threshold: int = 10
    cache: bool = True
    cache_scope: str = Field(default="run", description="run (re-sample per run) or shared")
    state_dir: str = Field(description="Cache, rate window, breaker and slot locks live here.")
    prices_file: str | None = Field(default=None, description="YAML/JSON price additions.")

    def spec_for(self, override: JudgeOverride | None) -> JudgeSpec:
        """The judge of one benchmark: its own override, else this resource's default."""
        provider = override.provider if override else self.provider
        model = (override.model if override else None) or (
            "dry-run" if provider == "dry-run" else self.model
        )
        key = (
            os.environ.get(override.api_key_env)
            if override is not None and override.api_key_env
            else self.api_key
        )
        settings = {
            "provider": provider,
            "model": model,
            "base_url": (override.base_url if override else None) or self.base_url,
            "api_key": SecretStr(key) if key else None,
            "api_version": (override.api_version if override else None) or self.api_version,
            "timeout_s": self.timeout_s,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "retry": RetryPolicy(
                max_attempts=self.max_attempts, max_total_s=self.max_retry_total_s
            ),
            "max_in_flight": self.max_in_flight,
            "requests_per_minute": self.requests_per_minute,
            "breaker_threshold": self.breaker_threshold,
            "cache": self.cache,
            "cache_scope": self.cache_scope,
            "state_dir": self.state_dir,
        }
        try:
            spec = JudgeSpec.model_validate(settings)
        except ValidationError as error:
            problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())
            raise JudgeConfigError(f"judge configuration: {problems}") from None
        needed = _NEEDS_URL.get(spec.provider)
        if needed and not spec.base_url:
            raise JudgeConfigError(f"the {spec.provider} judge needs {needed}")
        if spec.provider == "azure-openai" and not spec.api_version:
            raise JudgeConfigError("the azure-openai judge needs api_version")
        return spec

    def prices(self) -> PriceTable:
        """The price table: built in, extended by ``prices_file``."""
        return PriceTable.from_file(Path(self.prices_file) if self.prices_file else None)

    def shared_state(self) -> SharedState:
        """The state every worker shares (cache, rate window, circuit breaker)."""
        return SharedState.in_folder(Path(self.state_dir))
