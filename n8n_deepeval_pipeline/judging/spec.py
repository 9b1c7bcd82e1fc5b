"""Which judge a worker builds, and which judge a benchmark file names.

``JudgeSpec`` is the judge's full specification; ``JudgeChoice`` the judge a file names,
for the whole benchmark or for one metric. A judge named in a file is resolved field by
field: what a metric's judge leaves unset comes from the benchmark's ``judge``, and what
that leaves unset from the judge resource's default (``choose_judge``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from n8n_deepeval_pipeline.config.model import ConfigModel
from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy
from n8n_deepeval_pipeline.redaction import redact, url_secrets

JudgeProvider = Literal[
    "dry-run", "openai", "openai-compatible", "azure-openai", "anthropic", "local"
]
JUDGE_PROVIDERS: tuple[str, ...] = get_args(JudgeProvider)
# How an OpenAI-family judge is asked for structured output: "strict" as DeepEval's own
# OpenAI model asks (the openai SDK's strict schema, ``strict: true``), "schema" the plain
# JSON schema, "json" JSON mode, "none" nothing (the JSON is read from the text).
StructuredOutputs = Literal["strict", "schema", "json", "none"]
STRUCTURED_OUTPUTS: tuple[str, ...] = get_args(StructuredOutputs)
_NEEDS_URL = {"openai-compatible": "base_url", "azure-openai": "base_url (the Azure endpoint)"}


class JudgeConfigError(ValueError):
    """The judge cannot be built from the configuration given."""


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
    structured_outputs: StructuredOutputs = "strict"
    # Log-probabilities for G-Eval's weighted score; None: as DeepEval decides for the
    # provider and model (OpenAI and Azure by DeepEval's model data, Anthropic never).
    logprobs: bool | None = None
    retry: RetryPolicy = RetryPolicy()
    # Judge calls in flight across all workers, at most: the pacing fits the real number.
    max_in_flight: int = 256
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None  # estimated before a call, corrected after
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
        """Provider and model, safe to store and print (``dry-run`` for the plain dry run)."""
        plain = self.is_dry_run and self.model == "dry-run"
        return "dry-run" if plain else f"{self.provider}:{self.model}"

    @property
    def endpoint(self) -> str | None:
        """The base URL without the credentials it may carry (part of the judge's identity)."""
        return redact(self.base_url, url_secrets(self.base_url)) if self.base_url else None

    @property
    def identity(self) -> str:
        """Which judge this is, for its own rate window, breaker and in-flight slots.

        Provider, model, endpoint and API version: two judges differing in any of them
        are limited and broken separately; the key is not part of it.
        """
        fields = [self.provider, self.model, self.endpoint, self.api_version]
        return hashlib.sha256(json.dumps(fields).encode("utf-8")).hexdigest()[:16]


class JudgeChoice(ConfigModel):
    """A judge named in a benchmark file (for the benchmark, or for one metric).

    Fields left out come from the judge it falls back on (a metric's: the benchmark's
    judge, then the default judge); a judge of another provider takes none of that
    judge's model, endpoint, API version or key.
    """

    provider: JudgeProvider | None = Field(
        default=None,
        description="openai, azure-openai, anthropic, openai-compatible, local or dry-run.",
    )
    model: str | None = Field(
        default=None, description="The model (for Azure OpenAI, the deployment name)."
    )
    base_url: str | None = Field(
        default=None,
        description="The endpoint: an Azure resource, or an OpenAI-compatible server's /v1.",
    )
    base_url_env: str | None = Field(
        default=None, description="Name of the environment variable that holds the base URL."
    )
    api_version: str | None = Field(default=None, description="The Azure OpenAI API version.")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable that holds the key."
    )
    structured_outputs: StructuredOutputs | None = Field(
        default=None,
        description="OpenAI-family judges: strict (DeepEval's form), schema, json or none.",
    )
    logprobs: bool | None = Field(
        default=None, description="Ask for log-probabilities (G-Eval's weighted score)."
    )

    def over(self, fallback: JudgeChoice | None) -> JudgeChoice:
        """The choice with the fields it leaves out taken from ``fallback``."""
        if fallback is None:
            return self
        mine = self.model_dump(exclude_none=True)
        inherited = fallback.model_dump(exclude_none=True)
        if self.provider is not None and self.provider != fallback.provider:
            return self  # another provider: another vendor's model, endpoint and key do not fit
        if {"base_url", "base_url_env"} & mine.keys():  # a URL given either way replaces both
            inherited.pop("base_url", None)
            inherited.pop("base_url_env", None)
        merged = {**inherited, **mine}
        return JudgeChoice.model_validate(merged)


# A judge named in a file (or None: the default) → the spec workers build it from.
JudgeResolver = Callable[[JudgeChoice | None], JudgeSpec]


def choose_judge(
    default: Mapping[str, Any], choice: JudgeChoice | None, environ: Mapping[str, str]
) -> JudgeSpec:
    """The judge ``choice`` names, over the default judge's settings (JudgeSpec fields).

    A choice of another provider than the default's takes none of its model, endpoint,
    API version or key (an OpenAI key is never sent to another vendor), only the call
    policy. Variables named by the choice (``apiKeyEnv``, ``baseUrlEnv``) are read from
    ``environ``; a base URL variable that is not set is an error, a key variable that is
    not set means no key.
    """
    settings = dict(default)
    if choice is not None:
        provider = choice.provider or settings.get("provider", "dry-run")
        if provider != settings.get("provider"):
            settings.update(model=None, base_url=None, api_key=None, api_version=None)
        base_url = choice.base_url
        if choice.base_url_env:
            base_url = environ.get(choice.base_url_env)
            if not base_url:
                raise JudgeConfigError(
                    f"judge configuration: baseUrlEnv names {choice.base_url_env}, which is not set"
                )
        settings.update(
            provider=provider,
            model=choice.model
            or ("dry-run" if provider == "dry-run" else settings.get("model") or "dry-run"),
            base_url=base_url or settings.get("base_url"),
            api_version=choice.api_version or settings.get("api_version"),
        )
        for wire in ("structured_outputs", "logprobs"):
            if getattr(choice, wire) is not None:
                settings[wire] = getattr(choice, wire)
        if choice.api_key_env:
            settings["api_key"] = environ.get(choice.api_key_env)
    if not settings.get("api_key"):
        settings["api_key"] = None
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
    if spec.model == "dry-run" and not spec.is_dry_run:
        raise JudgeConfigError(f"the {spec.provider} judge needs a model")
    return spec


def judge_settings(spec: JudgeSpec) -> dict[str, Any]:
    """A spec's settings, the key included: the default ``choose_judge`` layers a choice on."""
    settings = spec.model_dump()
    settings["api_key"] = spec.api_key.get_secret_value() if spec.api_key else None
    return settings
