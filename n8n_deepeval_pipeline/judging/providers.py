"""Judge providers: one request in, the answer text and its token counts out.

A provider DeepEval has a model class for (OpenAI, Azure OpenAI, Anthropic, Gemini,
Ollama, OpenRouter, DeepSeek, Amazon Bedrock) asks through that provider's own
SDK, with the arguments DeepEval's class gives it (``judging.deepeval_call``); an
``openai-compatible`` server, for which DeepEval has no class, is asked in the form its
``structuredOutputs`` setting names; ``local`` runs a small model in process; ``dry-run``
answers without one. Every provider keeps one client per worker process and never
retries (the SDKs' own retries are off): the judge paces, retries, caches and prices
every call, once, for all of them. Errors name the provider and status, never a key or a
URL's query string, and the server's own words are redacted (some echo the key they
refused). The SDKs a provider needs beyond openai and anthropic are optional extras,
named in the error when missing.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import ssl
from collections.abc import Mapping
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import httpx2
from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.logprob_answers import raw_completion, rubric_answer
from n8n_deepeval_pipeline.judging.pacing import RateLimits
from n8n_deepeval_pipeline.judging.retry_policy import RETRYABLE_STATUS, parse_retry_after
from n8n_deepeval_pipeline.judging.schema_filler import fill_schema
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.judging.wire_format import plain_json_schema
from n8n_deepeval_pipeline.redaction import redact


class Completion:
    """An answer, its token counts and the budget the provider reported with it.

    ``text`` is the whole reply (JSON) for a raw answer.
    """

    def __init__(
        self,
        text: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        limits: RateLimits | None = None,
    ) -> None:
        self.text = text
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.limits = limits


class ProviderError(Exception):
    """A failed call; ``retryable`` says whether another attempt may succeed."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after_s: float | None = None,
        status: int | None = None,
        limits: RateLimits | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.status = status
        self.limits = limits


class Provider(Protocol):
    """What the judge needs from a provider."""

    @property
    def wire(self) -> str:
        """How structured output is asked for now: part of the judge cache's key."""

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        """One call, no retries."""


@runtime_checkable
class LogprobProvider(Protocol):
    """A provider whose judge may answer G-Eval's raw call with log-probabilities."""

    @property
    def answers_logprobs(self) -> bool:
        """Whether it does, for this model (DeepEval's decision for its own class)."""

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        """One call without a schema, ``logprobs: true``; the text is the whole reply (JSON)."""


@runtime_checkable
class ImageReadingProvider(Protocol):
    """A provider that may be sent images with a prompt (DeepEval's multimodal metrics)."""

    @property
    def reads_images(self) -> bool:
        """Whether its model reads images (DeepEval's decision for its own class)."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificates httpx would trust (``SSL_CERT_*``, the system's), loaded once.

    Loading them costs ~0.1 s of CPU; the worker zygote loads them before it forks, and
    every SDK client of the process that takes a context shares this one, as an
    ``SSLContext`` is meant to be.
    """
    return httpx2.create_ssl_context()


def safe_url(url: str) -> str:
    """A URL without credentials or query string, fit for a message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def http_failure(
    where: str,
    status: int,
    detail: str,
    headers: Mapping[str, str],
    spec: JudgeSpec,
) -> ProviderError:
    """A provider's HTTP error answer: retryable by status, its Retry-After and budget.

    ``detail`` is redacted before it is cut short (a cut key escapes redaction).
    """
    return ProviderError(
        f"{where}: HTTP {status} {redact(detail, spec.secrets)[:200]}",
        retryable=status in RETRYABLE_STATUS,
        retry_after_s=parse_retry_after(headers.get("retry-after")),
        status=status,
        limits=RateLimits.from_headers(headers),
    )


def error_message(body: object) -> str:
    """The message an error body carries (``{"error": {"message": …}}`` and the like)."""
    if isinstance(body, bytes | str):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
            return text
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            return str(inner.get("message") or inner.get("error") or "")
        return str(inner or body.get("message") or "")
    return str(body or "")


def secrets_digest(spec: JudgeSpec) -> str:
    """The judge's keys as a digest: part of a worker client's identity, not the keys."""
    return hashlib.sha256(json.dumps(spec.secrets).encode("utf-8")).hexdigest()


class DryRunProvider:
    """Deterministic schema-valid JSON without a model, to check wiring offline.

    A dry-run judge given a model name of its own (``{provider: dry-run, model: b}``)
    draws other answers than the plain one, so a dry-run judge panel can disagree. Raw
    answers carry log-probabilities, so G-Eval's weighted score is exercised too.
    """

    wire = "dry-run"
    reads_images = True  # it reads nothing: its answers only have to fit

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec
        self.answers_logprobs = spec.logprobs is not False

    def _seed(self, prompt: str) -> bytes:
        salt = "" if self.spec.model == "dry-run" else f"{self.spec.model}\n"
        return hashlib.sha256((salt + prompt).encode("utf-8")).digest()

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        if schema is None:
            return Completion("[dry-run] placeholder reason")
        answer = fill_schema(plain_json_schema(schema), self._seed(prompt), prompt)
        return Completion(json.dumps(answer))

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        text, logprobs = rubric_answer(
            self._seed(prompt), "[dry-run] placeholder reason", top_logprobs
        )
        return Completion(json.dumps(raw_completion(text, logprobs, self.spec.model)))


# provider → (its module in ``judging.provider_apis``, the extra that installs its SDK
# and the SDK's module; no extra: the SDK is a dependency of the project)
_PROVIDERS: dict[str, tuple[str, str | None, str]] = {
    "openai": ("openai_api", None, "openai"),
    "azure-openai": ("openai_api", None, "openai"),
    "openrouter": ("openai_api", None, "openai"),
    "deepseek": ("openai_api", None, "openai"),
    "openai-compatible": ("openai_api", None, "openai"),
    "anthropic": ("anthropic_api", None, "anthropic"),
    "gemini": ("gemini_api", "gemini", "google.genai"),
    "ollama": ("ollama_api", "ollama", "ollama"),
    "bedrock": ("bedrock_api", "bedrock", "aiobotocore"),
    "local": ("local_model", None, "llama_cpp"),  # its own error names the model package too
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # its parent is missing; a failed import
        return False


@functools.cache
def import_provider(provider: str) -> None:
    """Import a provider's module and SDK, and warm its first call (a worker zygote does).

    A provider whose SDK is missing is skipped: its first call says which extra to install.
    """
    if provider in _PROVIDERS and _installed(_PROVIDERS[provider][2]):
        module = importlib.import_module(
            f"n8n_deepeval_pipeline.judging.provider_apis.{_PROVIDERS[provider][0]}"
        )
        warm = getattr(module, "warm", None)
        if warm is not None:
            warm()


def missing_sdk(provider: str) -> str | None:
    """Why a provider's judge cannot be built here (its SDK's extra is not installed), or None."""
    if provider not in _PROVIDERS:
        return None
    _, extra, sdk = _PROVIDERS[provider]
    if extra is None or _installed(sdk):
        return None
    return (
        f"the {provider} judge needs its SDK ({sdk}): pip install 'n8n-deepeval-pipeline[{extra}]'"
    )


def build_provider(spec: JudgeSpec) -> Provider:
    """The provider for a judge spec (its module and SDK are imported only when chosen).

    A provider whose SDK is not installed fails with the extra that installs it.
    """
    if spec.provider == "dry-run":
        return DryRunProvider(spec)
    missing = missing_sdk(spec.provider)
    if missing is not None:
        raise ProviderError(missing, retryable=False)
    module = _PROVIDERS[spec.provider][0]
    built: Provider = importlib.import_module(
        f"n8n_deepeval_pipeline.judging.provider_apis.{module}"
    ).build(spec)
    return built
