"""The openai and anthropic SDKs, generated alike: a call, its raw reply, its errors.

A call is made through the method's ``with_raw_response`` twin, which sends exactly what
the method sends (its body, its headers: ``parse``'s helper header included) and hands
back the reply's bytes and headers unparsed: the judge validates the answer itself, and
reads the provider's rate-limit headers from every reply. The clients use aiohttp under
the SDK (the SDKs' own aiohttp transport): it costs a judge call less CPU than httpx.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import httpx2

from n8n_deepeval_pipeline.judging.deepeval_call import SdkCall
from n8n_deepeval_pipeline.judging.pacing import RateLimits
from n8n_deepeval_pipeline.judging.providers import (
    Completion,
    ProviderError,
    error_message,
    http_failure,
    tls_context,
)
from n8n_deepeval_pipeline.judging.spec import JudgeSpec

# The answer's text and its prompt and completion tokens, from the reply's JSON.
Reader = Callable[[dict[str, Any]], tuple[str, int, int]]


class HttpSdkTransport:
    """Calls of one of the two SDKs' clients, read by ``read``.

    ``prepare`` may give the SDK an argument in a form it takes and converts to the
    same bytes at less cost (the openai SDK's strict schema, converted once per class).
    """

    def __init__(
        self,
        sdk: ModuleType,
        read: Reader,
        prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self._sdk = sdk
        self._read = read
        self._prepare = prepare
        self.errors: tuple[type[BaseException], ...] = (sdk.APIStatusError, sdk.APIConnectionError)

    async def send(self, client: Any, call: SdkCall, raw: bool) -> Completion:
        target = client
        for name in call.method[:-1]:
            target = getattr(target, name)
        method = getattr(target.with_raw_response, call.method[-1])
        kwargs = self._prepare(call.kwargs) if self._prepare else call.kwargs
        response = await method(*call.args, **kwargs)
        http = response.http_response
        limits = RateLimits.from_headers(http.headers)
        try:
            data = json.loads(http.content)
            text, prompt_tokens, completion_tokens = self._read(data)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ProviderError("the judge's reply has no answer", retryable=True) from None
        if raw:
            text = http.text
        return Completion(text, prompt_tokens, completion_tokens, limits)

    def failure(self, error: BaseException, where: str, spec: JudgeSpec) -> ProviderError:
        if isinstance(error, self._sdk.APIStatusError):
            response = error.response
            detail = error_message(error.body) or response.reason_phrase
            return http_failure(where, response.status_code, detail, response.headers, spec)
        cause = error
        while cause.__cause__ is not None:  # the SDK's error, httpx's, aiohttp's
            cause = cause.__cause__
        # The aiohttp transport reports a refused or dropped connection as a timeout.
        if isinstance(error, self._sdk.APITimeoutError) and isinstance(cause, TimeoutError):
            return ProviderError(f"{where}: no answer within {spec.timeout_s:g} s", retryable=True)
        return ProviderError(f"{where}: connection failed ({type(cause).__name__})", retryable=True)


def aiohttp_client(sdk: ModuleType) -> Any:
    """An HTTP client for one of the SDKs' clients: aiohttp under it, the shared certificates.

    Proxies come from the environment, as httpx takes them (``HTTPS_PROXY``, ``NO_PROXY``).
    """
    return sdk.DefaultAioHttpClient(verify=tls_context())


def usage(data: dict[str, Any], prompt: str, completion: str) -> tuple[int, int]:
    """The prompt and completion tokens a reply's ``usage`` reports (0 when it has none)."""
    counts = data.get("usage") or {}
    return int(counts.get(prompt) or 0), int(counts.get(completion) or 0)


def warm(
    sdk: ModuleType,
    client_class: str,
    call: Callable[[Any], Awaitable[object]],
    reply: dict[str, Any],
) -> None:
    """Make the SDK import and cache, before workers fork, what its first call would.

    A first call costs ~0.15 s of lazy imports and type hints, on the judge's loop, where
    it holds up every evaluation's first call: the worker zygote makes ``call`` once
    instead, on an in-memory transport (no network, no thread), which answers ``reply``.
    """

    async def called() -> None:
        transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=reply))
        async with httpx2.AsyncClient(transport=transport) as http:
            client = getattr(sdk, client_class)(
                api_key="warm-up", base_url="http://warm-up.invalid", http_client=http
            )
            await call(client)

    aiohttp_client(sdk)  # its transport's modules too
    asyncio.run(called())
