"""The openai or anthropic SDK's request for a call: built by the SDK once per call shape.

Those SDKs spend most of a judge call's CPU before anything is sent (~1.5 ms of ~2 ms):
converting the call's typed parameters (a walk of their TypedDicts, every union member
tried on every message part) and building the request. What they build depends on the
prompt only through the JSON text of that one string: the conversion passes strings
through as they are, and the body is JSON. So the SDK builds a call's request once per
*shape* (the call with its prompt set aside: method, model, the messages' form, the
schema, …), with a marker where the prompt goes, on the client's own HTTP client, which
hands the request back instead of sending it; every call of that shape is then the SDK's
request with the prompt's JSON text where the marker's was, sent by that same HTTP
client. Bytes, headers and URL are the SDK's own.

The SDK builds a shape's request twice, with two markers that differ in every class of
character JSON escapes (quotes, backslashes, control characters, non-ASCII, U+2028,
astral); a shape is filled only if the two requests are the same but for the marker,
encoded as ``json.dumps`` encodes a prompt. A request with anything per request (an
idempotency key, a signing date) or a marker encoded otherwise is never filled: the
SDK makes those calls itself, as it does calls without the prompt among their values
and calls on a client that does more per request than build and send (OpenTelemetry
spans, middleware, a token refreshed).
"""

from __future__ import annotations

import json
import secrets
import weakref
from collections.abc import Awaitable, Callable, Hashable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import httpx2

# Shapes kept per client: a class asks in a few forms per schema; a schema class built
# anew for every evaluation still has the same form (its JSON schema is the key).
MAX_SHAPES = 256

_MARK = f"n8n-deepeval-prompt-{secrets.token_hex(8)}"
# The same marker with a character of every class a JSON encoder may escape or not.
_MARKS = (_MARK, _MARK + ' "\\/\b\f\n\r\t\x01\x1f\x7f é\u2028\U0001f600')

_BUILDING: ContextVar[bool] = ContextVar("building_sdk_request", default=False)


class _Built(BaseException):
    """The SDK's request, handed back instead of sent.

    A BaseException: the SDK's own ``except Exception`` (which makes any failure a
    connection error) must let it through.
    """

    def __init__(self, request: httpx2.Request) -> None:
        super().__init__("built")
        self.request = request


class BuildingHttpClient(httpx2.AsyncClient):
    """An SDK's HTTP client that hands a request back while a shape is being built.

    Mixed into the SDK's own aiohttp client class (``http_sdk.aiohttp_client``); every
    other request it sends as that class does.
    """

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        if _BUILDING.get():
            raise _Built(request)
        return await super().send(request, **kwargs)


class _NotPlain(Exception):
    """A value the shape cannot hold (not JSON, not one of the SDK's omission markers)."""


@dataclass(frozen=True)
class RequestTemplate:
    """The SDK's request for one shape, with the places of the prompt's JSON text."""

    method: str
    url: httpx2.URL
    headers: tuple[tuple[bytes, bytes], ...]
    length_at: int  # the Content-Length header's place
    body: tuple[bytes, ...]  # the body around the prompt's places
    extensions: dict[str, Any]

    def request(self, prompt: str) -> httpx2.Request:
        """The SDK's request for this shape with ``prompt``."""
        body = json.dumps(prompt, ensure_ascii=False).encode().join(self.body)
        headers = list(self.headers)
        headers[self.length_at] = (headers[self.length_at][0], str(len(body)).encode())
        return httpx2.Request(
            self.method, self.url, headers=headers, content=body, extensions=self.extensions
        )


_PROMPT = object()  # where the prompt stands in a shape


def shape(value: Any, prompt: str, omitted: tuple[type, ...]) -> tuple[Hashable, int]:
    """A hashable image of a call's arguments with the prompt set aside; its places.

    Raises ``_NotPlain`` for a value that is not JSON or one of ``omitted`` (the SDK's
    ``Omit`` and ``NotGiven``).
    """
    places = 0

    def image(item: Any) -> Hashable:
        nonlocal places
        kind = type(item)
        if kind is str:
            if item == prompt:
                places += 1
                return _PROMPT
            return cast(str, item)
        if kind is dict:
            pairs = []
            for key, each in item.items():
                if type(key) is not str:  # True and 1 are equal keys, not equal JSON
                    raise _NotPlain
                pairs.append((key, image(each)))
            return (dict, tuple(pairs))
        if kind is list or kind is tuple:
            return (kind, tuple([image(each) for each in item]))
        if isinstance(item, omitted):
            return (type(item),)
        if item is None or type(item) in (bool, int, float):
            return (type(item), item)
        raise _NotPlain

    return image(value), places


def _marked(value: Any, prompt: str, mark: str) -> Any:
    """The arguments with ``mark`` where the prompt is."""
    if isinstance(value, str):
        return mark if value == prompt else value
    if isinstance(value, dict):
        return {key: _marked(each, prompt, mark) for key, each in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_marked(each, prompt, mark) for each in value)
    return value


def _template(built: tuple[httpx2.Request, httpx2.Request], places: int) -> RequestTemplate | None:
    """The template two builds make, or None if they differ but for their markers."""
    parts = []
    for request, mark in zip(built, _MARKS, strict=True):
        text = json.dumps(mark, ensure_ascii=False).encode()
        body = tuple(request.content.split(text))
        if len(body) != places + 1 or _MARK in str(request.url):
            return None
        headers = tuple(
            (key, b"" if key.lower() == b"content-length" else value)
            for key, value in request.headers.raw
        )
        if any(_MARK.encode() in value for _, value in headers):
            return None
        parts.append((request.method, str(request.url), headers, body, request.extensions))
    if parts[0] != parts[1]:
        return None
    first = built[0]
    lengths = [i for i, (key, _) in enumerate(parts[0][2]) if key.lower() == b"content-length"]
    if len(lengths) != 1:
        return None
    return RequestTemplate(first.method, first.url, parts[0][2], lengths[0], parts[0][3],
                           dict(first.extensions))  # fmt: skip


# A client's templates by shape (None: a shape the SDK always sends itself).
_TEMPLATES: weakref.WeakKeyDictionary[Any, dict[Hashable, RequestTemplate | None]] = (
    weakref.WeakKeyDictionary()
)


def fills_requests(client: Any) -> bool:
    """Whether the SDK client's calls do nothing per request but build and send.

    Its HTTP client must be a ``BuildingHttpClient``; no token refreshed per request
    (openai's workload identity, a provider runtime, an Azure AD token provider), no
    middleware and no OpenTelemetry span (anthropic's).
    """
    return (
        isinstance(getattr(client, "_client", None), BuildingHttpClient)
        and getattr(client, "_workload_identity_auth", None) is None
        and getattr(client, "_provider_runtime", None) is None
        and getattr(client, "_azure_ad_token_provider", None) is None
        and not getattr(client, "_middleware", ())
        and _spanless(getattr(client, "_tracer", None))
    )


def _spanless(tracer: Any) -> bool:
    """Whether a call with this tracer has no span and sends no trace context.

    The anthropic SDK traces every call with OpenTelemetry's global tracer; while no
    application has set a tracer provider and no span is current, its span neither
    records nor propagates, and the SDK drops it before the request is built.
    """
    if tracer is None:
        return True
    from opentelemetry import trace

    return (
        isinstance(tracer, trace.ProxyTracer)
        and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        and not trace.get_current_span().get_span_context().is_valid
    )


async def templated(
    client: Any,
    call: Callable[[Any], Awaitable[object]],
    arguments: Any,
    prompt: str,
    omitted: tuple[type, ...],
) -> httpx2.Request | None:
    """The SDK's request for ``call(arguments)``, filled with ``prompt``; None: not so.

    ``call`` makes the SDK call with the arguments it is given; it runs (twice) only the
    first time a shape is seen. None when the client does more per request than build
    and send, when the prompt is not among the arguments' values, or when the SDK's
    request for the shape cannot be filled.
    """
    if not prompt or not fills_requests(client):
        return None
    try:
        key, places = shape(arguments, prompt, omitted)
    except _NotPlain:
        return None
    if not places:
        return None
    templates = _TEMPLATES.setdefault(client, {})
    if key not in templates:
        if len(templates) >= MAX_SHAPES:
            return None
        templates[key] = await _built_template(call, arguments, prompt, places)
    template = templates[key]
    return template.request(prompt) if template is not None else None


async def _built_template(
    call: Callable[[Any], Awaitable[object]], arguments: Any, prompt: str, places: int
) -> RequestTemplate | None:
    """The SDK's request built with each marker; their template (None: they differ)."""
    built = []
    for mark in _MARKS:
        token = _BUILDING.set(True)
        try:
            await call(_marked(arguments, prompt, mark))
        except _Built as request:
            built.append(request.request)
        except Exception:  # the SDK refused the arguments: it says so when it is called
            return None
        finally:
            _BUILDING.reset(token)
        if len(built) != _MARKS.index(mark) + 1:
            return None  # it answered without sending
    return _template((built[0], built[1]), places)
