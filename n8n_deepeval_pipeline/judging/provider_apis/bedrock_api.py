"""Amazon Bedrock through aiobotocore (the ``bedrock`` extra), as ``AmazonBedrockModel`` asks.

The class decides the request (``judging.deepeval_call``): the Converse API with the
prompt as one text block and ``inferenceConfig`` holding only what is set (temperature,
``maxTokens``): no structured output, the JSON is read from the text. Requests are signed
with the credentials given (else AWS's own chain: profile, instance role). The client is
made once per worker with the class's arguments and botocore's retries off.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from botocore import exceptions

from n8n_deepeval_pipeline.judging.deepeval_call import (
    DeepEvalProvider,
    ModelClass,
    SdkCall,
    SdkRecorder,
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

_NO_CREDENTIALS = (exceptions.NoCredentialsError, exceptions.PartialCredentialsError)


class BedrockTransport:
    """``client.converse``; the text read by the class's own reader, the usage it reports."""

    errors: tuple[type[BaseException], ...] = (exceptions.ClientError, exceptions.BotoCoreError)

    async def send(
        self, client: Any, call: SdkCall, raw: bool, prompt: str | None = None
    ) -> Completion:
        from deepeval.errors import DeepEvalError
        from deepeval.models.llms.amazon_bedrock_model import AmazonBedrockModel

        response = await getattr(client, call.method[-1])(*call.args, **call.kwargs)
        headers = response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        try:
            text = AmazonBedrockModel._extract_text_from_converse_response(response)
        except DeepEvalError as error:
            raise ProviderError(f"the judge's reply has no text: {error}", retryable=True) from None
        counts = response.get("usage") or {}
        return Completion(
            text,
            int(counts.get("inputTokens") or 0),
            int(counts.get("outputTokens") or 0),
            RateLimits.from_headers(headers),
        )

    def failure(self, error: BaseException, where: str, spec: JudgeSpec) -> ProviderError:
        if isinstance(error, exceptions.ClientError):
            metadata = error.response.get("ResponseMetadata", {})
            message = error.response.get("Error", {}).get("Message") or str(error)
            status = int(metadata.get("HTTPStatusCode") or 500)
            return http_failure(where, status, message, metadata.get("HTTPHeaders", {}), spec)
        if isinstance(error, _NO_CREDENTIALS):
            return ProviderError(f"{where}: no AWS credentials", retryable=False)
        if isinstance(error, exceptions.ReadTimeoutError | exceptions.ConnectTimeoutError):
            return ProviderError(f"{where}: no answer within {spec.timeout_s:g} s", retryable=True)
        return ProviderError(f"{where}: connection failed ({type(error).__name__})", retryable=True)


def _model(spec: JudgeSpec) -> Any:
    from deepeval.models.llms.amazon_bedrock_model import AmazonBedrockModel

    inference: dict[str, Any] = {}
    if spec.temperature is not None:
        inference["temperature"] = spec.temperature
    if spec.max_tokens:
        inference["maxTokens"] = spec.max_tokens
    client: dict[str, Any] = {"endpoint_url": spec.base_url} if spec.base_url else {}
    return AmazonBedrockModel(
        model=spec.model,
        aws_access_key_id=spec.secret("aws_access_key_id"),
        aws_secret_access_key=spec.secret("api_key"),
        aws_session_token=spec.secret("aws_session_token"),
        region=spec.region,
        generation_kwargs=inference or None,
        **client,  # to the SDK's client
    )


async def _client(model: Any, spec: JudgeSpec) -> Any:
    """The client the class's ``_get_client`` makes, kept open, with no retries at all.

    (The class's own asks botocore for ``max_attempts: 1``: one retry.)
    """
    config = model.botocore_module.config.Config(
        retries={"total_max_attempts": 1},
        connect_timeout=spec.timeout_s,
        read_timeout=spec.timeout_s,
    )
    arguments: dict[str, Any] = {"region_name": model.region, "config": config, **model.kwargs}
    for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
        value = getattr(model, name)
        if value is not None:
            arguments[name] = value.get_secret_value()
    return await model._session.create_client("bedrock-runtime", **arguments).__aenter__()


def _recorded_client(model: Any, recorder: SdkRecorder) -> None:
    """The class takes its client from ``async with self._get_client()``."""

    @contextlib.asynccontextmanager
    async def client() -> AsyncIterator[SdkRecorder]:
        yield recorder

    model._get_client = client


CLASS = ModelClass(
    name="AmazonBedrockModel",
    endpoint="https://bedrock-runtime.amazonaws.com",
    model=_model,
    client=_client,
    generate=class_method("a_generate", attach=_recorded_client),
)


def build(spec: JudgeSpec) -> Provider:
    """The provider for an Amazon Bedrock judge."""
    return DeepEvalProvider(spec, CLASS, BedrockTransport())
