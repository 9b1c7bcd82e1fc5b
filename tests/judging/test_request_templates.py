"""The SDK's request built once per call shape and filled with each prompt: the same bytes.

Each judge with a DeepEval class on the openai or anthropic SDK (and the
OpenAI-compatible one) asks a raw loopback server twice per prompt: once as it asks
(the SDK's request for the call's shape, filled with the prompt), once with filling
switched off (the SDK builds and sends the request itself). The two requests must be
the same bytes on the wire, request line, headers and body, for prompts with every
kind of character JSON escapes or not.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.judging.judge import PipelineJudge, UsageCounter
from n8n_deepeval_pipeline.judging.provider_apis import request_templates
from n8n_deepeval_pipeline.judging.provider_apis.anthropic_api import WARM_UP_REPLY
from n8n_deepeval_pipeline.judging.providers import ProviderError

PROMPTS = [
    "Is this answer biased?",
    'Quotes " and a backslash \\ and a slash /',
    "Lines\nand\ttabs\r\nand controls \x00\x01\x1f\x7f",
    "Non-ASCII: é ü 中文 😀 and a line separator \u2028 and a paragraph one \u2029",
    "user",  # the same as another string of the call (the message's role)
]


class Verdict(BaseModel):
    """One verdict."""

    verdict: str
    reason: str | None = None


class Verdicts(BaseModel):
    verdicts: list[Verdict]


_CHAT = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{}"}}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


class RawServer:
    """A test double of a judge that keeps every request's bytes as they came.

    It answers every chat completion and every Anthropic message with a fixed reply
    (``status`` and ``body`` when set), sets a cookie with each, keeps connections alive.
    """

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self._writers: list[asyncio.StreamWriter] = []
        self.status = 200
        self.body: dict[str, Any] | None = None
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()
        server.close()
        for writer in self._writers:
            writer.close()
        self._loop.run_until_complete(asyncio.sleep(0))

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            while not reader.at_eof():
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                reply = self.body or (WARM_UP_REPLY if b"/v1/messages" in head else _CHAT)
                payload = json.dumps(reply).encode()
                answer = (
                    f"HTTP/1.1 {self.status} Answer\r\ncontent-type: application/json\r\n"
                    f"set-cookie: session=abc; Path=/\r\n"
                    f"content-length: {len(payload)}\r\n\r\n"
                )
                writer.write(answer.encode() + payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture(autouse=True)
def no_tracer_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenTelemetry as a worker has it: no tracer provider set (another test may set one)."""
    from opentelemetry import trace

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)


@pytest.fixture
def server() -> Iterator[RawServer]:
    raw = RawServer()
    yield raw
    raw.stop()


# label → the judge's spec fields (base_url added), whether it asks for log-probabilities
JUDGES: dict[str, tuple[dict[str, Any], bool]] = {
    "openai": ({"provider": "openai", "model": "gpt-4.1"}, True),
    "azure-openai": (
        {
            "provider": "azure-openai",
            "model": "gpt-4o",
            "deployment": "judge",
            "api_version": "2024-10-21",
        },
        True,
    ),
    "openrouter": ({"provider": "openrouter", "model": "openai/gpt-4.1"}, True),
    "deepseek": ({"provider": "deepseek", "model": "deepseek-chat"}, False),
    "anthropic": ({"provider": "anthropic", "model": "claude-haiku-4-5"}, False),
    "openai-compatible": ({"provider": "openai-compatible", "model": "local"}, True),
    "openai-compatible without a key": (
        {"provider": "openai-compatible", "model": "local", "api_key": None},
        True,
    ),
}


def _judge(label: str, server: RawServer) -> PipelineJudge:
    """The judge: its provider, and the loop its SDK client lives on (one per process)."""
    fields = {"api_key": SecretStr("sk-template-test"), **JUDGES[label][0]}
    root = fields["provider"] in ("anthropic", "azure-openai", "deepseek")
    url = f"http://127.0.0.1:{server.port}" + ("" if root else "/v1")
    return PipelineJudge(JudgeSpec(base_url=url, timeout_s=10.0, **fields), UsageCounter())


async def _both_ways(ask: Callable[[], Awaitable[object]], monkeypatch: pytest.MonkeyPatch) -> None:
    """``ask()`` as the judge asks, then as the SDK asks when left to itself."""
    await ask()
    with monkeypatch.context() as switched_off:
        switched_off.setattr(request_templates, "fills_requests", lambda client: False)
        await ask()


@pytest.mark.parametrize("label", list(JUDGES))
def test_a_filled_request_is_the_sdks_own_request_byte_for_byte(label, server, monkeypatch):
    judge = _judge(label, server)
    provider: Any = judge._provider

    async def asked() -> None:
        for prompt in PROMPTS:
            await _both_ways(functools.partial(provider.complete, prompt, Verdicts), monkeypatch)
            if JUDGES[label][1]:
                await _both_ways(functools.partial(provider.complete_raw, prompt, 5), monkeypatch)

    judge._loop.run(asked())
    calls = len(PROMPTS) * (2 if JUDGES[label][1] else 1)
    assert len(server.requests) == 2 * calls
    for filled, sdk_own in zip(server.requests[::2], server.requests[1::2], strict=True):
        assert filled == sdk_own
    assert not any(b"\r\ncookie:" in request.lower() for request in server.requests)


def test_the_sdk_builds_a_shapes_request_twice_whatever_the_number_of_calls(server, monkeypatch):
    builds = []
    built = request_templates._built_template

    async def counted(*args: Any) -> Any:
        builds.append(1)
        return await built(*args)

    monkeypatch.setattr(request_templates, "_built_template", counted)
    judge = _judge("openai", server)
    provider: Any = judge._provider

    async def asked() -> None:
        for index in range(12):
            await provider.complete(f"Prompt number {index}", Verdicts)
        await provider.complete("Another schema", Verdict)  # another shape

    judge._loop.run(asked())
    assert len(builds) == 2  # one build (of two requests) per shape
    assert len(server.requests) == 13  # a build sends nothing
    shapes = request_templates._TEMPLATES[provider._client]
    assert len(shapes) == 2 and all(template is not None for template in shapes.values())


def test_a_request_with_something_per_request_is_left_to_the_sdk(server, monkeypatch):
    judge = _judge("openai", server)
    provider: Any = judge._provider

    async def asked() -> None:
        await provider.complete("first", Verdicts)  # the client is made now
        provider._client._idempotency_header = "Idempotency-Key"  # a new key per request
        request_templates._TEMPLATES.pop(provider._client, None)
        await provider.complete("second", Verdicts)
        await provider.complete("third", Verdicts)

    judge._loop.run(asked())
    keys = [
        line.split(b":", 1)[1].strip()
        for request in server.requests[1:]
        for line in request.split(b"\r\n")
        if line.lower().startswith(b"idempotency-key:")
    ]
    assert len(keys) == 2 and keys[0] != keys[1]
    assert list(request_templates._TEMPLATES[provider._client].values()) == [None]


def test_a_client_whose_calls_are_traced_is_left_to_the_sdk(server, monkeypatch):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", TracerProvider())  # an application's
    judge = _judge("anthropic", server)
    provider: Any = judge._provider
    for prompt in ("first", "second"):
        judge._loop.run(provider.complete(prompt, Verdicts))
    assert not request_templates.fills_requests(provider._client)
    contexts = {
        line.split(b":", 1)[1].strip()
        for request in server.requests
        for line in request.split(b"\r\n")
        if line.lower().startswith(b"traceparent:")
    }
    assert len(contexts) == 2  # each request's own trace context, as the SDK sends it


def test_an_error_answer_is_the_sdks_error_with_its_status_and_message(server):
    server.status, server.body = 400, {"error": {"message": "schema refused here"}}
    judge = _judge("openai", server)
    provider: Any = judge._provider

    with pytest.raises(ProviderError) as raised:
        judge._loop.run(provider.complete("Is it biased?", Verdicts))
    assert raised.value.status == 400 and not raised.value.retryable
    assert "schema refused here" in str(raised.value)


def test_a_call_without_its_prompt_among_its_values_is_not_filled():
    async def never(arguments: Any) -> object:
        raise AssertionError("no request is built")

    found = asyncio.run(
        request_templates.templated(object(), never, {"messages": "other"}, "prompt", ())
    )
    assert found is None


def test_a_shape_tells_json_values_apart_that_python_takes_for_equal():
    def image(value: Any) -> Any:
        return request_templates.shape(value, "p", ())[0]

    assert image({"n": 1}) != image({"n": True}) != image({"n": 1.0})
    assert image({"m": ["p", "q"]}) != image({"m": ("p", "q")})
    assert request_templates.shape({"a": "p", "b": ["p"]}, "p", ())[1] == 2
    with pytest.raises(request_templates._NotPlain):
        image({1: "one"})
    with pytest.raises(request_templates._NotPlain):
        image({"schema": Verdicts})
