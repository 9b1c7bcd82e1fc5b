"""Google's google-genai SDK (the ``gemini`` extra), asked as DeepEval's ``GeminiModel`` asks.

The class decides the request (``judging.deepeval_call``): JSON output constrained by the
metric's schema (``response_schema``), its four safety settings at ``BLOCK_NONE``,
temperature 0 unless set (none for the models that refuse one, as Google advises for
Gemini 3). The Gemini API with a key (Vertex AI is not offered here). The client is the
class's own, made once per worker, with the SDK's retries off (it would otherwise retry
a refused connection after a pause of its own).
"""

from __future__ import annotations

from typing import Any

import aiohttp
from google.genai import errors, types

from n8n_deepeval_pipeline.judging.deepeval_call import (
    DeepEvalProvider,
    ModelClass,
    SdkCall,
    class_method,
)
from n8n_deepeval_pipeline.judging.pacing import RateLimits
from n8n_deepeval_pipeline.judging.providers import (
    Completion,
    Provider,
    ProviderError,
    http_failure,
)
from n8n_deepeval_pipeline.judging.spec import JudgeSpec


class GeminiTransport:
    """``client.aio.models.generate_content``; its reply read as the class reads it."""

    errors: tuple[type[BaseException], ...] = (errors.APIError, aiohttp.ClientError, TimeoutError)

    async def send(
        self, client: Any, call: SdkCall, raw: bool, prompt: str | None = None
    ) -> Completion:
        target = client
        for name in call.method:
            target = getattr(target, name)
        response = await target(*call.args, **call.kwargs)
        http = response.sdk_http_response
        headers = {name.lower(): value for name, value in ((http and http.headers) or {}).items()}
        counts = response.usage_metadata
        prompt_tokens = (counts and counts.prompt_token_count) or 0
        # thinking tokens are billed as output, as the class counts them
        completion_tokens = ((counts and counts.candidates_token_count) or 0) + (
            (counts and counts.thoughts_token_count) or 0
        )
        text = response.text
        if text is None:
            raise ProviderError("the judge's reply has no text", retryable=True)
        return Completion(text, prompt_tokens, completion_tokens, RateLimits.from_headers(headers))

    def failure(self, error: BaseException, where: str, spec: JudgeSpec) -> ProviderError:
        if isinstance(error, errors.APIError):
            answer = getattr(error, "response", None)
            headers = {k.lower(): v for k, v in getattr(answer, "headers", {}).items()}
            return http_failure(where, error.code, error.message or "", headers, spec)
        if isinstance(error, TimeoutError):
            return ProviderError(f"{where}: no answer within {spec.timeout_s:g} s", retryable=True)
        return ProviderError(f"{where}: connection failed ({type(error).__name__})", retryable=True)


def _model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.gemini_model import GeminiModel

    options = types.HttpOptions(
        base_url=spec.base_url,
        timeout=int(spec.timeout_s * 1000),
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return GeminiModel(
        model=spec.model,
        api_key=spec.secret("api_key"),
        temperature=spec.temperature,
        use_vertexai=False,
        generation_kwargs={"max_output_tokens": spec.max_tokens} if spec.max_tokens else None,
        http_options=options,  # to the SDK's client
    )


def _client(model: Any, spec: JudgeSpec) -> Any:
    return type(model).load_model(model)


CLASS = ModelClass(
    name="GeminiModel",
    endpoint="https://generativelanguage.googleapis.com",
    model=_model,
    client=_client,
    generate=class_method("a_generate"),
)


def build(spec: JudgeSpec) -> Provider:
    """The provider for a Gemini judge."""
    return DeepEvalProvider(spec, CLASS, GeminiTransport())
