"""The judge resource: which model DeepEval metrics are given as ``model=``, and how calls behave.

The resource holds the default; a benchmark file, or one metric in it, may name another
judge. Keys are read here only (from environment variables, through ``EnvVar`` in the
definitions or a benchmark's or metric's ``apiKeyEnv``, ``awsAccessKeyIdEnv``, …) and
travel to the workers inside the judge spec; they are never logged or stored (tables
record ``provider:model`` only).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy, call_limit_s
from n8n_deepeval_pipeline.judging.shared_state import SharedState
from n8n_deepeval_pipeline.judging.spec import (
    JUDGE_PROVIDERS,
    STRUCTURED_OUTPUTS,
    JudgeChoice,
    JudgeConfigError,
    JudgeSpec,
    choose_judge,
)

__all__ = ["JudgeConfigError", "JudgeResource"]


class JudgeResource(dg.ConfigurableResource):
    """Default judge and call policy for every benchmark."""

    provider: str = Field(
        default="dry-run",
        description=f"One of: {', '.join(JUDGE_PROVIDERS)}.",
    )
    model: str = "dry-run"
    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:11434/v1")
    api_key: str | None = Field(
        default=None,
        description="Set from an environment variable (Bedrock: the AWS secret access key).",
    )
    api_version: str | None = Field(default=None, description="Azure OpenAI API version.")
    deployment: str | None = Field(
        default=None, description="Azure OpenAI deployment (model: the model it runs)."
    )
    region: str | None = Field(default=None, description="Amazon Bedrock's AWS region.")
    aws_access_key_id: str | None = Field(
        default=None, description="Amazon Bedrock; set from an environment variable."
    )
    aws_session_token: str | None = Field(
        default=None, description="Amazon Bedrock; set from an environment variable."
    )
    timeout_s: float = 60.0
    temperature: float | None = Field(
        default=None, description="Unset: what DeepEval's class for the provider sends."
    )
    max_tokens: int | None = None
    structured_outputs: str = Field(
        default="strict", description=f"openai-compatible judges: {', '.join(STRUCTURED_OUTPUTS)}."
    )
    logprobs: bool | None = Field(
        default=None, description="Log-probabilities for G-Eval (unset: as DeepEval decides)."
    )
    max_attempts: int = 6
    max_retry_total_s: float = 300.0
    max_in_flight: int = Field(
        default=256, description="Judge calls in flight, all workers, at most (paced below)."
    )
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    breaker_threshold: int = 10
    cache: bool = True
    cache_scope: str = Field(default="run", description="run (re-sample per run) or shared")
    state_dir: str = Field(description="Cache, rate window, breaker and slot locks live here.")
    prices_file: str | None = Field(default=None, description="YAML/JSON price additions.")
    evaluation_timeout_s: float = Field(
        default=300.0,
        description="The worker pool's per-evaluation timeout: a judge call made outside an "
        "evaluation (a simulated user's) has the share of it an evaluation gives its judge.",
    )

    @property
    def call_limit_s(self) -> float:
        """How long a judge call made outside an evaluation may take, retries included."""
        return call_limit_s(self.evaluation_timeout_s)

    def spec_for(self, choice: JudgeChoice | None) -> JudgeSpec:
        """The judge a benchmark (or a metric) names, else this resource's default.

        ``choice`` is already layered (a metric's judge over its benchmark's); what it
        leaves out comes from here, and the variables it names are read here.
        """
        default = {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "api_version": self.api_version,
            "deployment": self.deployment,
            "region": self.region,
            "aws_access_key_id": self.aws_access_key_id,
            "aws_session_token": self.aws_session_token,
            "timeout_s": self.timeout_s,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "structured_outputs": self.structured_outputs,
            "logprobs": self.logprobs,
            "retry": RetryPolicy(
                max_attempts=self.max_attempts, max_total_s=self.max_retry_total_s
            ),
            "max_in_flight": self.max_in_flight,
            "requests_per_minute": self.requests_per_minute,
            "tokens_per_minute": self.tokens_per_minute,
            "breaker_threshold": self.breaker_threshold,
            "cache": self.cache,
            "cache_scope": self.cache_scope,
            "state_dir": self.state_dir,
        }
        return choose_judge(default, choice, os.environ)

    def prices(self) -> PriceTable:
        """The price table: built in, extended by ``prices_file``."""
        return PriceTable.from_file(Path(self.prices_file) if self.prices_file else None)

    def shared_state(self) -> SharedState:
        """The state every worker shares (cache, rate window, circuit breaker)."""
        return SharedState.in_folder(Path(self.state_dir))
