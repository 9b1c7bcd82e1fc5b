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

# Every provider but dry-run, local and openai-compatible asks as DeepEval's own model
# class for it asks (``judging.deepeval_call``); openai-compatible is for servers that
# have no class of their own.
JudgeProvider = Literal[
    "dry-run",
    "openai",
    "openai-compatible",
    "azure-openai",
    "anthropic",
    "gemini",
    "ollama",
    "openrouter",
    "deepseek",
    "bedrock",
    "local",
]
JUDGE_PROVIDERS: tuple[str, ...] = get_args(JudgeProvider)
# How an openai-compatible judge is asked for structured output: "strict" as DeepEval's
# own OpenAI model asks (the openai SDK's strict schema, ``strict: true``), "schema" the
# plain JSON schema, "json" JSON mode, "none" nothing (the JSON is read from the text).
# The other providers ask as DeepEval's class for them asks.
StructuredOutputs = Literal["strict", "schema", "json", "none"]
STRUCTURED_OUTPUTS: tuple[str, ...] = get_args(StructuredOutputs)
_NEEDS = {
    "openai-compatible": ("base_url", "base_url"),
    "azure-openai": ("base_url", "base_url (the Azure endpoint)"),
    "bedrock": ("region", "region (the AWS region)"),
}


class JudgeConfigError(ValueError):
    """The judge cannot be built from the configuration given."""


class JudgeSpec(BaseModel):
    """Which judge a worker builds and how it behaves.

    The key travels to the worker, never into results, logs or the journal: only
    ``label`` is stored.
    """

    model_config = ConfigDict(frozen=True)

    provider: JudgeProvider = "dry-run"
    model: str = "dry-run"  # Azure: the model (its capabilities), not the deployment
    base_url: str | None = None
    api_key: SecretStr | None = None  # Bedrock: the AWS secret access key
    api_version: str | None = None  # Azure OpenAI
    deployment: str | None = None  # Azure OpenAI; None: the model's name
    region: str | None = None  # Amazon Bedrock
    aws_access_key_id: SecretStr | None = None  # Amazon Bedrock (None: AWS's own chain)
    aws_session_token: SecretStr | None = None  # Amazon Bedrock, temporary credentials
    timeout_s: float = 60.0
    # None: what DeepEval's class for the provider sends by default (0 for most; none
    # for Anthropic and Bedrock, nor for models that refuse one).
    temperature: float | None = None
    max_tokens: int | None = None
    structured_outputs: StructuredOutputs = "strict"  # openai-compatible only
    # Log-probabilities for G-Eval's weighted score; None: as DeepEval decides for the
    # provider and model (OpenAI and Azure by DeepEval's model data, OpenRouter always,
    # the others never); False: never.
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
        """What no message may show: the keys, and any credential the base URL carries."""
        keys = [self.api_key, self.aws_access_key_id, self.aws_session_token]
        values = [key.get_secret_value() for key in keys if key is not None]
        return [secret for secret in [*values, *url_secrets(self.base_url)] if secret]

    def secret(self, name: str) -> str | None:
        """The value of a secret field (``api_key``, ``aws_access_key_id``, …), None if unset."""
        value: SecretStr | None = getattr(self, name)
        return value.get_secret_value() if value is not None else None

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

        Provider, model, endpoint, API version, deployment and region: two judges
        differing in any of them are limited and broken separately; the key is not part
        of it.
        """
        fields = [self.provider, self.model, self.endpoint, self.api_version]
        if self.deployment or self.region:  # identities of judges without them unchanged
            fields += [self.deployment, self.region]
        return hashlib.sha256(json.dumps(fields).encode("utf-8")).hexdigest()[:16]


class JudgeChoice(ConfigModel):
    """A judge named in a benchmark file (for the benchmark, or for one metric).

    Fields left out come from the judge it falls back on (a metric's: the benchmark's
    judge, then the default judge); a judge of another provider takes none of that
    judge's model, endpoint, API version, deployment, region or keys.
    """

    provider: JudgeProvider | None = Field(
        default=None,
        description=f"One of {', '.join(JUDGE_PROVIDERS)}.",
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
    deployment: str | None = Field(
        default=None, description="Azure OpenAI: the deployment (model: the model it runs)."
    )
    region: str | None = Field(default=None, description="Amazon Bedrock: the AWS region.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable that holds the key "
        "(Bedrock: the AWS secret access key).",
    )
    aws_access_key_id_env: str | None = Field(
        default=None,
        description="Amazon Bedrock: the environment variable that holds the access key id.",
    )
    aws_session_token_env: str | None = Field(
        default=None,
        description="Amazon Bedrock: the environment variable that holds a session token.",
    )
    structured_outputs: StructuredOutputs | None = Field(
        default=None,
        description="openai-compatible judges: strict (DeepEval's OpenAI form), schema, "
        "json or none.",
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


# What belongs to one vendor's judge: a choice of another provider takes none of it.
_SECRETS = ("api_key", "aws_access_key_id", "aws_session_token")
_VENDOR_SETTINGS = ("model", "base_url", "api_version", "deployment", "region", *_SECRETS)

# A judge named in a file (or None: the default) → the spec workers build it from.
JudgeResolver = Callable[[JudgeChoice | None], JudgeSpec]


def choose_judge(
    default: Mapping[str, Any], choice: JudgeChoice | None, environ: Mapping[str, str]
) -> JudgeSpec:
    """The judge ``choice`` names, over the default judge's settings (JudgeSpec fields).

    A choice of another provider than the default's takes none of its model, endpoint,
    API version, deployment, region or keys (an OpenAI key is never sent to another
    vendor), only the call policy. Variables named by the choice (``apiKeyEnv``,
    ``baseUrlEnv``, …) are read from ``environ``; a base URL variable that is not set is
    an error, a key variable that is not set means no key.
    """
    settings = dict(default)
    if choice is not None:
        provider = choice.provider or settings.get("provider", "dry-run")
        if provider != settings.get("provider"):
            settings.update(dict.fromkeys(_VENDOR_SETTINGS))
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
        )
        for field in ("api_version", "deployment", "region", "structured_outputs", "logprobs"):
            if getattr(choice, field) is not None:
                settings[field] = getattr(choice, field)
        for secret in _SECRETS:
            variable = getattr(choice, f"{secret}_env")
            if variable:
                settings[secret] = environ.get(variable)
    for secret in _SECRETS:
        if not settings.get(secret):
            settings[secret] = None
    try:
        spec = JudgeSpec.model_validate(settings)
    except ValidationError as error:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())
        raise JudgeConfigError(f"judge configuration: {problems}") from None
    field, needed = _NEEDS.get(spec.provider, ("", ""))
    if field and not getattr(spec, field):
        raise JudgeConfigError(f"the {spec.provider} judge needs {needed}")
    if spec.provider == "azure-openai" and not spec.api_version:
        raise JudgeConfigError("the azure-openai judge needs api_version")
    if spec.model == "dry-run" and not spec.is_dry_run:
        raise JudgeConfigError(f"the {spec.provider} judge needs a model")
    return spec


def judge_settings(spec: JudgeSpec) -> dict[str, Any]:
    """A spec's settings, keys included: the default ``choose_judge`` layers a choice on."""
    settings = spec.model_dump()
    settings.update({secret: spec.secret(secret) for secret in _SECRETS})
    return settings
