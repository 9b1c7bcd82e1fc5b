"""The judge resource: which model DeepEval metrics are given as ``model=``.

The resource holds the default; a benchmark file may name another provider. The
API key is read here only and travels to the workers inside the judge spec; it is
never logged or stored (tables record the provider and model only).
"""

from __future__ import annotations

import os

import dagster as dg
from pydantic import Field, SecretStr

from n8n_deepeval_pipeline.benchmark_config import JudgeOverride
from n8n_deepeval_pipeline.evaluation import JudgeSpec


class JudgeConfigError(ValueError):
    """The judge cannot be built from the configuration given."""


class JudgeResource(dg.ConfigurableResource):
    """Default judge for every benchmark: ``dry-run`` or an OpenAI-compatible endpoint."""

    provider: str = Field(default="dry-run", description="dry-run or openai-compatible")
    model: str = "dry-run"
    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:11434/v1")
    api_key: str | None = Field(default=None, description="Set from an environment variable.")
    timeout_s: float = 60.0

    def spec_for(self, override: JudgeOverride | None) -> JudgeSpec:
        """The judge of one benchmark: its own override, else this resource's default."""
        if override is None:
            spec = JudgeSpec(
                provider=self.provider,
                model=self.model,
                base_url=self.base_url,
                api_key=SecretStr(self.api_key) if self.api_key else None,
                timeout_s=self.timeout_s,
            )
        else:
            key = os.environ.get(override.api_key_env) if override.api_key_env else self.api_key
            spec = JudgeSpec(
                provider=override.provider,
                model=override.model
                or ("dry-run" if override.provider == "dry-run" else self.model),
                base_url=override.base_url or self.base_url,
                api_key=SecretStr(key) if key else None,
                timeout_s=self.timeout_s,
            )
        if spec.provider == "openai-compatible" and not spec.base_url:
            raise JudgeConfigError("the openai-compatible judge needs a base_url")
        return spec
