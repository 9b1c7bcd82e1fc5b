"""Ollama's SDK (the ``ollama`` extra), asked as DeepEval's ``OllamaModel`` asks.

The class decides the request (``judging.deepeval_call``): Ollama's native chat API with
the metric's plain JSON schema as ``format`` and the temperature (0 unless set) among the
``options``. The client is the class's own, made once per worker; the SDK never retries.
Ollama reports no rate limits.
"""

from __future__ import annotations

from typing import Any

import httpx
import ollama

from n8n_deepeval_pipeline.judging.deepeval_call import (
    DeepEvalProvider,
    ModelClass,
    SdkCall,
    class_method,
)
from n8n_deepeval_pipeline.judging.providers import (
    Completion,
    Provider,
    ProviderError,
    http_failure,
    tls_context,
)
from n8n_deepeval_pipeline.judging.spec import JudgeSpec


class OllamaTransport:
    """``client.chat``; the answer and Ollama's token counts."""

    errors: tuple[type[BaseException], ...] = (
        ollama.ResponseError,
        ConnectionError,
        httpx.HTTPError,
    )

    async def send(
        self, client: Any, call: SdkCall, raw: bool, prompt: str | None = None
    ) -> Completion:
        target = client
        for name in call.method:
            target = getattr(target, name)
        response = await target(*call.args, **call.kwargs)
        text = response.message.content
        if text is None:
            raise ProviderError("the judge's reply has no text", retryable=True)
        return Completion(text, response.prompt_eval_count or 0, response.eval_count or 0)

    def failure(self, error: BaseException, where: str, spec: JudgeSpec) -> ProviderError:
        if isinstance(error, ollama.ResponseError):
            return http_failure(where, error.status_code, error.error, {}, spec)
        if isinstance(error, httpx.TimeoutException):
            return ProviderError(f"{where}: no answer within {spec.timeout_s:g} s", retryable=True)
        return ProviderError(f"{where}: connection failed ({type(error).__name__})", retryable=True)


def _model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.ollama_model import OllamaModel

    return OllamaModel(
        model=spec.model,
        base_url=spec.base_url,
        temperature=spec.temperature,
        generation_kwargs={"num_predict": spec.max_tokens} if spec.max_tokens else None,
        timeout=spec.timeout_s,  # to the SDK's client, and the certificates
        verify=tls_context(),
    )


def _client(model: Any, spec: JudgeSpec) -> Any:
    return type(model).load_model(model, async_mode=True)


CLASS = ModelClass(
    name="OllamaModel",
    endpoint="http://localhost:11434",
    model=_model,
    client=_client,
    generate=class_method("a_generate"),
)


def build(spec: JudgeSpec) -> Provider:
    """The provider for an Ollama judge."""
    return DeepEvalProvider(spec, CLASS, OllamaTransport())
