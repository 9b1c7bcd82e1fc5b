"""The openai and anthropic SDKs, generated alike: a call, its raw reply, its errors.

A call is made through the method's ``with_raw_response`` twin, which sends exactly what
the method sends (its body, its headers: ``parse``'s helper header included) and hands
back the reply's bytes and headers unparsed: the judge validates the answer itself, and
reads the provider's rate-limit headers from every reply. The SDK builds a call's request
once per call shape and each call of that shape is that request with its own prompt
(``request_templates``), sent by the client's HTTP client as the SDK sends it and its
answer read as the SDK reads it (errors as the SDK's own). The clients use aiohttp under
the SDK (the SDKs' own aiohttp transport): it costs a judge call less CPU than httpx.
They keep no cookies: DeepEval's classes make a client, with an empty cookie jar, for
every call, and a request filled from a template must not depend on what a reply set.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import ModuleType
from typing import Any

import httpx2

from n8n_deepeval_pipeline.judging.deepeval_call import SdkCall
from n8n_deepeval_pipeline.judging.pacing import RateLimits
from n8n_deepeval_pipeline.judging.provider_apis.request_templates import (
    BuildingHttpClient,
    templated,
)
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
        self._omitted: tuple[type, ...] = (sdk.Omit, sdk.NotGiven)

    async def send(
        self, client: Any, call: SdkCall, raw: bool, prompt: str | None = None
    ) -> Completion:
        target = client
        for name in call.method[:-1]:
            target = getattr(target, name)
        method = getattr(target.with_raw_response, call.method[-1])
        kwargs = self._prepare(call.kwargs) if self._prepare else call.kwargs
        request = None
        if prompt is not None and not call.args:

            async def made(arguments: dict[str, Any]) -> object:
                return await method(**arguments)

            request = await templated(client, made, kwargs, prompt, self._omitted)
        if request is None:
            http = (await method(*call.args, **kwargs)).http_response
        else:
            http = await self._sent(client, request)
        limits = RateLimits.from_headers(http.headers)
        try:
            data = json.loads(http.content)
            text, prompt_tokens, completion_tokens = self._read(data)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ProviderError("the judge's reply has no answer", retryable=True) from None
        if raw:
            text = http.text
        return Completion(text, prompt_tokens, completion_tokens, limits)

    async def _sent(self, client: Any, request: httpx2.Request) -> httpx2.Response:
        """The request sent as the SDK sends one, its failures raised as the SDK's errors."""
        try:
            response: httpx2.Response = await client._client.send(request)
        except httpx2.TimeoutException as error:
            raise self._sdk.APITimeoutError(request=request) from error
        except Exception as error:
            raise self._sdk.APIConnectionError(request=request) from error
        if not response.is_success:
            raise client._make_status_error_from_response(response)
        return response

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


@functools.cache
def _building_class(sdk: ModuleType) -> type[BuildingHttpClient]:
    """The SDK's own aiohttp client class, handing a request back while one is built."""
    return type(f"Building{sdk.DefaultAioHttpClient.__name__}",
                (BuildingHttpClient, sdk.DefaultAioHttpClient), {})  # fmt: skip


def aiohttp_client(sdk: ModuleType) -> Any:
    """An HTTP client for one of the SDKs' clients: aiohttp under it, the shared certificates.

    Proxies come from the environment, as httpx takes them (``HTTPS_PROXY``, ``NO_PROXY``).
    It keeps no cookies (its jar's policy allows no domain).
    """
    no_cookies = CookieJar(DefaultCookiePolicy(allowed_domains=[]))
    return _building_class(sdk)(verify=tls_context(), cookies=no_cookies)


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
