"""OpenAI's SDK: DeepEval's OpenAI, Azure OpenAI, OpenRouter and DeepSeek classes, and others.

Others: servers that speak OpenAI's API without a class of their own (``openai-compatible``),
asked as DeepEval's ``GPTModel`` (``OpenAIModel``) asks a model that takes structured
outputs and log-probabilities, or with ``structuredOutputs: none`` and ``logprobs: false``
exactly as DeepEval's ``LocalModel`` asks.

Each class builds its request as it does in DeepEval (``judging.deepeval_call``): OpenAI
and Azure the strict schema through ``parse`` when the model's data says it takes one,
JSON mode or plain text otherwise, no temperature for the models that refuse one, the
log-probability cap of the model's data (Azure: none); OpenRouter its strict schema with
the prompt as a string and a plain retry when the schema is refused; DeepSeek JSON mode.
Azure keeps the deployment (the URL) and the model (its capabilities) apart, as
DeepEval's class does. The SDK client is the class's own (``load_model``), made once per
worker. A base URL's query string (a gateway's token) is sent with every call.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import openai
from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.deepeval_call import (
    DeepEvalProvider,
    ModelClass,
    SdkCall,
    class_method,
    worker_client,
)
from n8n_deepeval_pipeline.judging.provider_apis import http_sdk
from n8n_deepeval_pipeline.judging.provider_apis.http_sdk import (
    HttpSdkTransport,
    aiohttp_client,
    usage,
)
from n8n_deepeval_pipeline.judging.providers import (
    Completion,
    Provider,
    ProviderError,
    safe_url,
)
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.judging.wire_format import (
    openai_response_format,
    strict_response_format,
)


def _read_chat(data: dict[str, Any]) -> tuple[str, int, int]:
    text = str(data["choices"][0]["message"].get("content") or "")
    return (text, *usage(data, "prompt_tokens", "completion_tokens"))


def _converted_once(kwargs: dict[str, Any]) -> dict[str, Any]:
    schema = kwargs.get("response_format")
    if isinstance(schema, type):  # ``parse`` would convert it on every call
        return {**kwargs, "response_format": strict_response_format(schema)}
    return kwargs


TRANSPORT = HttpSdkTransport(openai, _read_chat, _converted_once)


def _split_query(base_url: str | None) -> tuple[str | None, dict[str, str]]:
    """The base URL without its query string, and the query (sent with every call)."""
    if not base_url:
        return None, {}
    parts = urlsplit(base_url)
    plain = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return plain, dict(parse_qsl(parts.query, keep_blank_values=True))


def _common(spec: JudgeSpec) -> dict[str, Any]:
    """What every class is given: key, temperature, ``max_tokens``, timeout, URL query.

    The last two go to the SDK's client.
    """
    query = _split_query(spec.base_url)[1]
    return {
        "api_key": spec.secret("api_key"),
        "temperature": spec.temperature,
        "generation_kwargs": {"max_tokens": spec.max_tokens} if spec.max_tokens else None,
        "timeout": spec.timeout_s,
        **({"default_query": query} if query else {}),
    }


def _without_retries(client: Any) -> Any:
    """The class's client with the SDK's retries off (DeepEval turns them off by default)."""
    return client if client.max_retries == 0 else client.with_options(max_retries=0)


def _openai_model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.openai_model import OpenAIModel

    return OpenAIModel(model=spec.model, base_url=_split_query(spec.base_url)[0], **_common(spec))


def _openai_client(model: Any, spec: JudgeSpec) -> Any:
    model.async_http_client = aiohttp_client(openai)  # what OpenAIModel gives AsyncOpenAI
    return _without_retries(type(model).load_model(model, async_mode=True))


def _azure_model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.azure_model import AzureOpenAIModel

    return AzureOpenAIModel(
        model=spec.model,
        deployment_name=spec.deployment or spec.model,
        base_url=_split_query(spec.base_url)[0],
        api_version=spec.api_version,
        **_common(spec),
    )


def _client_with_http(model: Any, spec: JudgeSpec) -> Any:
    """The client of a class that passes its extra arguments to the SDK's client."""
    model.kwargs["http_client"] = aiohttp_client(openai)
    return _without_retries(type(model).load_model(model, async_mode=True))


def _openrouter_model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.openrouter_model import OpenRouterModel

    return OpenRouterModel(
        model=spec.model, base_url=_split_query(spec.base_url)[0], **_common(spec)
    )


def _deepseek_model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.deepseek_model import DeepSeekModel

    model = DeepSeekModel(model=spec.model, **_common(spec))
    base_url = _split_query(spec.base_url)[0]
    if base_url:  # the class has DeepSeek's own fixed; a proxy or a test server replaces it
        model.base_url = base_url
    return model


CLASSES = {
    "openai": ModelClass(
        name="OpenAIModel",
        endpoint="https://api.openai.com/v1",
        model=_openai_model,
        client=_openai_client,
        generate=class_method("a_generate"),
        raw=class_method("a_generate_raw_response"),
    ),
    "azure-openai": ModelClass(
        name="AzureOpenAIModel",
        endpoint="https://azure.invalid",  # never used: Azure needs its endpoint
        model=_azure_model,
        client=_client_with_http,
        generate=class_method("a_generate"),
        raw=class_method("a_generate_raw_response"),
    ),
    "openrouter": ModelClass(
        name="OpenRouterModel",
        endpoint="https://openrouter.ai/api/v1",
        model=_openrouter_model,
        client=_client_with_http,
        # the gateway classes' undecorated implementations (the public ones add retries)
        generate=class_method("_a_generate"),
        raw=class_method("_a_generate_raw_response"),
    ),
    "deepseek": ModelClass(
        name="DeepSeekModel",
        endpoint="https://api.deepseek.com",
        model=_deepseek_model,
        client=_client_with_http,
        generate=class_method("a_generate"),
    ),
}


class OpenAICompatibleProvider:
    """A server with OpenAI's API and no DeepEval class (vLLM, llama.cpp, LM Studio, …).

    By default each request is the one DeepEval's ``GPTModel`` sends a model it knows takes
    structured outputs and log-probabilities (gpt-4.1): the prompt as content parts (its
    images among them, a remote one by its URL), temperature 0 unless set, the strict
    schema through ``parse`` (JSON mode through it too), log-probabilities through a plain
    call. ``structuredOutputs: none`` with ``logprobs: false`` is DeepEval's
    ``LocalModel``: the prompt as a string (with its images, a list of parts, a remote one
    fetched and sent inline), no schema, the JSON read from the text. ``schema`` (the plain
    JSON schema) is neither class's. A server that rejects a JSON schema (HTTP 400) is asked
    in JSON mode from then on, and the cache keys follow.
    """

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec
        base_url, query = _split_query(spec.base_url)
        key = spec.secret("api_key")

        def client() -> openai.AsyncOpenAI:
            return openai.AsyncOpenAI(
                api_key=key or "unused",  # never sent: see _request
                base_url=base_url,
                default_query=query or None,
                max_retries=0,
                timeout=spec.timeout_s,
                http_client=aiohttp_client(openai),
            )

        self._build = client
        self._client: openai.AsyncOpenAI | None = None
        self._mode = spec.structured_outputs
        self._where = f"openai-compatible judge at {safe_url(spec.base_url or '')}"
        self.answers_logprobs = spec.logprobs is not False

    reads_images = True  # DeepEval's local model class sends them to any such server

    @property
    def wire(self) -> str:
        return self._mode

    def _request(self, prompt: str) -> dict[str, Any]:
        from deepeval.models.llms.multimodal import to_openai_content

        # GPTModel's content parts, or LocalModel's (the form of `none`): a string unless
        # the prompt holds images, a remote image fetched and sent inline.
        local = self.spec.structured_outputs == "none"
        content = to_openai_content(prompt, text_only_as_string=local, inline_remote_images=local)
        request: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": "user", "content": content}],
            "temperature": self.spec.temperature if self.spec.temperature is not None else 0.0,
        }
        if self.spec.max_tokens is not None:
            request["max_tokens"] = self.spec.max_tokens
        if self.spec.api_key is None:  # no key: no Authorization header at all
            request["extra_headers"] = {"Authorization": openai.Omit()}
        return request

    async def _send(self, request: dict[str, Any], prompt: str, raw: bool = False) -> Completion:
        if self._client is None:
            key = ("openai-compatible", self.spec.endpoint)
            self._client = await worker_client(key, self.spec, self._build)
        # GPTModel asks for a strict schema or JSON mode through the SDK's ``parse``.
        kind = (request.get("response_format") or {}).get("type")
        parsed = kind == "json_object" or (kind == "json_schema" and self._mode == "strict")
        method = (
            ("beta", "chat", "completions", "parse")
            if parsed
            else ("chat", "completions", "create")
        )
        call = SdkCall(method, (), request)
        try:
            return await TRANSPORT.send(self._client, call, raw, prompt)
        except TRANSPORT.errors as error:
            raise TRANSPORT.failure(error, self._where, self.spec) from None

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        request = self._request(prompt)
        response_format = openai_response_format(schema, self._mode) if schema else None
        if response_format is None:
            return await self._send(request, prompt)
        try:
            return await self._send({**request, "response_format": response_format}, prompt)
        except ProviderError as error:
            if response_format["type"] != "json_schema" or error.status != 400:
                raise
            self._mode = "json"  # this server has no JSON-schema output
            json_mode = {**request, "response_format": {"type": "json_object"}}
            return await self._send(json_mode, prompt)

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        request = {**self._request(prompt), "logprobs": True, "top_logprobs": top_logprobs}
        return await self._send(request, prompt, raw=True)


class _WarmUp(BaseModel):
    verdict: str


async def _warm_up_calls(client: Any) -> None:
    parts = [{"role": "user", "content": [{"type": "text", "text": "warm-up"}]}]
    await client.beta.chat.completions.with_raw_response.parse(
        model="warm-up", messages=parts, response_format=strict_response_format(_WarmUp)
    )
    plain = [{"role": "user", "content": "warm-up"}]
    await client.chat.completions.with_raw_response.create(
        model="warm-up", messages=plain, logprobs=True, top_logprobs=1
    )


def warm() -> None:
    """What the SDK's first call costs, paid by the worker zygote (``http_sdk.warm``)."""
    reply = {
        "id": "warm-up",
        "object": "chat.completion",
        "created": 0,
        "model": "warm-up",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{}"}}
        ],
    }
    http_sdk.warm(openai, "AsyncOpenAI", _warm_up_calls, reply)


def build(spec: JudgeSpec) -> Provider:
    """The provider for an OpenAI-family judge."""
    if spec.provider == "openai-compatible":
        return OpenAICompatibleProvider(spec)
    return DeepEvalProvider(spec, CLASSES[spec.provider], TRANSPORT)
