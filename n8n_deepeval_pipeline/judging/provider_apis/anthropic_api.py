"""Anthropic's SDK, asked as DeepEval's ``AnthropicModel`` asks.

The class decides the request (``judging.deepeval_call``): ``output_config`` with the
SDK's ``transform_schema`` for the models its data says take it, ``thinking: disabled``
for the models that think, no temperature unless one is set, ``max_tokens`` 8192 (4096
for Claude 3); after a 400 about the schema it asks in plain text for the rest of its
life. The SDK sends its own API version and the key its own way; its client is the
class's own, made once per worker.
"""

from __future__ import annotations

from typing import Any

import anthropic

from n8n_deepeval_pipeline.judging.deepeval_call import DeepEvalProvider, ModelClass, class_method
from n8n_deepeval_pipeline.judging.provider_apis import http_sdk
from n8n_deepeval_pipeline.judging.provider_apis.http_sdk import (
    HttpSdkTransport,
    aiohttp_client,
    usage,
)
from n8n_deepeval_pipeline.judging.providers import Provider
from n8n_deepeval_pipeline.judging.spec import JudgeSpec


def _read_message(data: dict[str, Any]) -> tuple[str, int, int]:
    # The first text block, as the class reads it (a thinking block may come first).
    text = next(block["text"] for block in data["content"] if block.get("type") == "text")
    return (str(text), *usage(data, "input_tokens", "output_tokens"))


TRANSPORT = HttpSdkTransport(anthropic, _read_message)


def _model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.anthropic_model import AnthropicModel

    extra: dict[str, Any] = {"timeout": spec.timeout_s}  # to the SDK's client
    if spec.base_url:
        extra["base_url"] = spec.base_url
    return AnthropicModel(
        model=spec.model,
        api_key=spec.secret("api_key"),
        temperature=spec.temperature,
        generation_kwargs={"max_tokens": spec.max_tokens} if spec.max_tokens else None,
        **extra,
    )


def _client(model: Any, spec: JudgeSpec) -> Any:
    model.kwargs["http_client"] = aiohttp_client(anthropic)
    client = type(model).load_model(model, async_mode=True)
    return client if client.max_retries == 0 else client.with_options(max_retries=0)


def _form(model: Any) -> str:
    structured = model.model_data.supports_structured_outputs is True
    return "output_config" if structured and not model._structured_outputs_rejected else "text"


CLASS = ModelClass(
    name="AnthropicModel",
    endpoint="https://api.anthropic.com",
    model=_model,
    client=_client,
    generate=class_method("a_generate"),
    wire=_form,
)


async def _warm_up_call(client: Any) -> None:
    await client.messages.with_raw_response.create(
        max_tokens=1,
        messages=[{"role": "user", "content": [{"type": "text", "text": "warm-up"}]}],
        model="warm-up",
        thinking={"type": "disabled"},
        output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
    )


WARM_UP_REPLY: dict[str, Any] = {
    "id": "warm-up",
    "type": "message",
    "role": "assistant",
    "model": "warm-up",
    "content": [{"type": "text", "text": "{}"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
"""The smallest message the SDK reads whole: the warm-up call's, and a test server's."""


def warm() -> None:
    """What the SDK's first call costs, paid by the worker zygote (``http_sdk.warm``)."""
    http_sdk.warm(anthropic, "AsyncAnthropic", _warm_up_call, WARM_UP_REPLY)


def build(spec: JudgeSpec) -> Provider:
    """The provider for an Anthropic judge."""
    return DeepEvalProvider(spec, CLASS, TRANSPORT)
