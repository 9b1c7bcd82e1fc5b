"""Judge models handed to DeepEval metrics as ``model=`` (worker side only).

The dry-run judge answers every prompt with a schema-valid object derived from a hash
of the prompt: deterministic, offline, and useless as a judgement — its results are
marked dry-run wherever they appear. The OpenAI-compatible judge holds one client per
worker (DeepEval's own class builds one per call) and sends the JSON schema itself.
"""

from __future__ import annotations

import ast
import enum
import functools
import hashlib
import re
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import openai
from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel, ValidationError

from n8n_deepeval_pipeline.evaluation import JudgeSpec


class JudgeOutputError(RuntimeError):
    """The judge answered, but not with what the metric's schema asks for."""


class UsageCounter:
    """Judge calls and tokens of the evaluation in progress."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def reset(self) -> None:
        """Start counting the next evaluation."""
        self.__init__()  # type: ignore[misc]


class _Filler:
    """Deterministic, schema-valid values drawn from a hash of the prompt.

    Rules that keep DeepEval's metrics meaningful: numbers respect the field's bounds,
    scores are 0–10 only when the prompt asks for a 0–10 scale (G-Eval) and 0–1
    otherwise, yes/no answers are "yes" or "no", an ``answers`` list has one answer per
    question listed in the prompt, and choices are drawn from sorted options (DeepEval
    builds some from sets, whose order changes between processes).
    """

    def __init__(self, prompt: str) -> None:
        self._prompt = prompt
        self._seed = hashlib.sha256(prompt.encode("utf-8")).digest()
        self._draws = 0
        self._ten_scale = bool(_TEN_SCALE.search(prompt))

    def _unit(self) -> float:
        digest = hashlib.sha256(self._seed + self._draws.to_bytes(4, "big")).digest()
        self._draws += 1
        return int.from_bytes(digest[:8], "big") / 2**64

    def _choice(self, options: list[Any]) -> Any:
        return sorted(options, key=str)[int(self._unit() * len(options))]

    def model(self, schema: type[BaseModel]) -> dict[str, Any]:
        return {
            name: self.value(field.annotation, name, field.metadata)
            for name, field in schema.model_fields.items()
        }

    def value(self, annotation: Any, name: str, metadata: list[Any]) -> Any:
        origin = get_origin(annotation)
        if origin is Literal:
            return self._choice(list(get_args(annotation)))
        if origin in (Union, types.UnionType):
            branches = [arg for arg in get_args(annotation) if arg is not type(None)]
            return self.value(branches[0], name, metadata)
        if origin in (list, typing.List):  # noqa: UP006 - DeepEval schemas use typing.List
            (item,) = get_args(annotation) or (str,)
            return [self.value(item, name, []) for _ in range(self._list_length(name))]
        if origin in (dict, typing.Dict):  # noqa: UP006
            args = get_args(annotation)
            return {"fact": self.value(args[1], name, []) if args else "dry-run"}
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.model(annotation)
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            return self._choice(list(annotation))
        return self._scalar(annotation, name, metadata)

    def _list_length(self, name: str) -> int:
        if name == "answers":
            asked = _QUESTIONS.findall(self._prompt)
            if asked:
                try:
                    return len(ast.literal_eval(asked[-1]))
                except (ValueError, SyntaxError):
                    pass
        return 1 + int(self._unit() * 3)

    def _scalar(self, annotation: Any, name: str, metadata: list[Any]) -> Any:
        if annotation is bool:
            return self._unit() < 0.5
        if annotation in (int, float):
            low, high = _bounds(metadata)
            if low is None and high is None and "score" in name:
                low, high = (0, 10) if self._ten_scale else (0, 1)
            low, high = low if low is not None else 0, high if high is not None else 1
            if annotation is int:
                return int(low + int(self._unit() * (high - low + 1)))
            return round(low + self._unit() * (high - low), 3)
        if name == "answers" or name.endswith("_verdict"):
            return self._choice(["yes", "no"])
        return f"[dry-run] placeholder {name}"


_TEN_SCALE = re.compile(r"\b0\s*(?:and|to|-|–)\s*10\b")
_QUESTIONS = re.compile(r"Questions:\s*(\[.*?\])\s*\n", re.S)


def _bounds(metadata: list[Any]) -> tuple[float | None, float | None]:
    low = high = None
    for constraint in metadata:
        low = getattr(constraint, "ge", getattr(constraint, "gt", low))
        high = getattr(constraint, "le", getattr(constraint, "lt", high))
    return low, high


class DryRunJudge(DeepEvalBaseLLM):
    """Fills DeepEval's schemas without a model, so wiring can be checked offline."""

    def __init__(self, usage: UsageCounter) -> None:
        self.usage = usage
        super().__init__(model="dry-run")

    def load_model(self) -> DryRunJudge:
        return self

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        self.usage.calls += 1
        if schema is None:
            return "[dry-run] placeholder reason"  # GoalAccuracy reads plain text here
        return schema.model_validate(_Filler(prompt).model(schema))

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        return self.generate(prompt, schema)

    def get_model_name(self) -> str:
        return "dry-run"


class OpenAICompatibleJudge(DeepEvalBaseLLM):
    """Any endpoint that speaks the OpenAI chat completions API."""

    def __init__(self, spec: JudgeSpec, usage: UsageCounter) -> None:
        self.spec = spec
        self.usage = usage
        key = spec.api_key.get_secret_value() if spec.api_key else "not-needed"
        self._client = openai.OpenAI(
            base_url=spec.base_url, api_key=key, timeout=spec.timeout_s, max_retries=2
        )
        self._async_client = openai.AsyncOpenAI(
            base_url=spec.base_url, api_key=key, timeout=spec.timeout_s, max_retries=2
        )
        super().__init__(model=spec.model)

    def load_model(self) -> OpenAICompatibleJudge:
        return self

    def _request(self, prompt: str, schema: type[BaseModel] | None) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
        }
        if schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": _json_schema(schema)},
            }
        return request

    def _parse(self, completion: Any, schema: type[BaseModel] | None) -> Any:
        self.usage.calls += 1
        if completion.usage is not None:
            self.usage.prompt_tokens += completion.usage.prompt_tokens or 0
            self.usage.completion_tokens += completion.usage.completion_tokens or 0
        text = completion.choices[0].message.content or ""
        if schema is None:
            return text
        try:
            return schema.model_validate_json(_json_object(text))
        except ValidationError as error:
            raise JudgeOutputError(
                f"judge answer does not fit {schema.__name__}: {error.error_count()} error(s)"
            ) from None

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        completion = self._client.chat.completions.create(**self._request(prompt, schema))
        return self._parse(completion, schema)

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        request = self._request(prompt, schema)
        completion = await self._async_client.chat.completions.create(**request)
        return self._parse(completion, schema)

    def get_model_name(self) -> str:
        return self.spec.model


@functools.cache
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A schema's JSON schema, built once per class (pydantic rebuilds it on every call)."""
    return schema.model_json_schema()


def _json_object(text: str) -> str:
    """The outermost JSON object in a reply (models sometimes wrap it in prose or fences)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text


def build_judge(spec: JudgeSpec, usage: UsageCounter) -> DeepEvalBaseLLM:
    """The judge a metric receives as ``model=``."""
    if spec.is_dry_run:
        return DryRunJudge(usage)
    return OpenAICompatibleJudge(spec, usage)
