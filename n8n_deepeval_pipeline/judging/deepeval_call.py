"""The SDK call DeepEval's own model class makes, taken from the class and made by the judge.

DeepEval's class for a provider decides everything its request carries: the SDK method,
the prompt's form, the structured-output form and schema, the temperature (or none),
``max_tokens``, ``thinking``, the model's log-probability cap. Rather than copy those
decisions, the judge runs the class's own generate code with a recorder where the class
takes its SDK client: the first SDK call the class makes is recorded (method and
arguments) and stops it there. The judge makes that same call on the SDK client its
worker keeps for the provider (one per process, SDK retries off, built by the class's own
``load_model`` where it has one), inside its pacing, retries, cache and cost.

When the SDK answers with an error the class would handle itself (Anthropic's refusal of
a schema, a gateway without structured outputs), the class's code is run again with that
error answered to its call, so the class decides what it sends next, as it does on its
own (Anthropic's class then asks in plain text for the rest of its life). Errors another
attempt may cure (429, 5xx, timeouts) are the judge's to retry, not the class's.

Worker side only: this runs DeepEval's code.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import os
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.providers import (
    Completion,
    ProviderError,
    safe_url,
    secrets_digest,
)
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.judging.wire_format import schema_built_once

# How many error answers the class may be given back in one call (Anthropic's schema
# refusal, then its plain-text request failing too, is the longest chain there is).
_MAX_ANSWERED_ERRORS = 2


@dataclass(frozen=True)
class SdkCall:
    """One call of an SDK client: the attribute path of its method, and its arguments."""

    method: tuple[str, ...]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


class _Recorded(BaseException):
    """The class made its SDK call.

    A BaseException: the classes' own ``except Exception`` fallbacks must not take it
    for a failed call.
    """

    def __init__(self, call: SdkCall) -> None:
        super().__init__(call.method)
        self.call = call


class SdkRecorder:
    """Stands where a DeepEval class takes its SDK client, and records its call.

    ``client.a.b.c(**kwargs)`` records ``(("a", "b", "c"), kwargs)`` and stops the class
    there.

    ``answers``: errors the SDK gave the class's earlier calls, raised to them in order
    (the class's code then handles them as it handles the SDK's).
    """

    def __init__(self, answers: list[BaseException], path: tuple[str, ...] = ()) -> None:
        self._answers = answers
        self._path = path

    def __getattr__(self, name: str) -> SdkRecorder:
        return SdkRecorder(self._answers, (*self._path, name))

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        record(self._answers, SdkCall(self._path, args, kwargs))


def record(answers: list[BaseException], call: SdkCall) -> NoReturn:
    """Answer the class's call with the next error it is given back, else record it."""
    if answers:
        raise answers.pop(0)
    raise _Recorded(call)


async def recorded_call(ask: Awaitable[object]) -> SdkCall:
    """The SDK call the class's code in ``ask`` makes (it runs until that call, no further)."""
    try:
        await ask
    except _Recorded as recorded:
        return recorded.call
    raise RuntimeError("DeepEval's model answered without calling its SDK")


def attach_load_model(model: Any, recorder: Any) -> None:
    """Where most classes take their client: ``self.load_model(...)`` on every call."""
    model.load_model = lambda *args, **kwargs: recorder


# Runs a class's method with the errors its SDK answered, until its SDK call.
ClassCall = Callable[..., Awaitable[object]]


def class_method(
    name: str,
    attach: Callable[[Any, Any], None] = attach_load_model,
    recorder: Callable[[list[BaseException]], Any] = SdkRecorder,
) -> ClassCall:
    """The class's method ``name``, without DeepEval's retry decorator, a recorder as client.

    Called as ``(model, answers, *arguments)``. The recorder is attached to the model
    each time: the method runs without a pause until its SDK call, so two calls of one
    model never see each other's recorder.
    """

    async def run(model: Any, answers: list[BaseException], *args: Any) -> object:
        attach(model, recorder(answers))
        method = inspect.unwrap(getattr(type(model), name))
        return await method(model, *args)

    return run


@dataclass(frozen=True)
class ModelClass:
    """How the judge uses one DeepEval model class.

    ``model`` builds DeepEval's model for a judge spec; ``client`` builds the SDK client
    the worker keeps (from a model: the class's own ``load_model`` where it has one);
    ``generate`` and ``raw`` run the class's ``a_generate`` and ``a_generate_raw_response``
    (without DeepEval's retry decorators) with a recorder in place of the client;
    ``raw`` is None where the class has no raw call (DeepEval then scores G-Eval from the
    schema). ``wire`` names the structured-output form the model asks in now.
    """

    name: str
    endpoint: str
    model: Callable[[JudgeSpec], Any]
    client: Callable[[Any, JudgeSpec], Any]
    generate: ClassCall
    raw: ClassCall | None = None
    wire: Callable[[Any], str] | None = None


class SdkTransport(Protocol):
    """How one SDK's calls are made and read, and its errors told apart."""

    errors: tuple[type[BaseException], ...]

    async def send(
        self, client: Any, call: SdkCall, raw: bool, prompt: str | None = None
    ) -> Completion:
        """Make the call; the answer's text (a raw answer: the whole reply, JSON).

        ``prompt``: the prompt the call carries, where the transport makes the calls of
        one shape from one request the SDK built (``provider_apis.request_templates``).
        """

    def failure(self, error: BaseException, where: str, spec: JudgeSpec) -> ProviderError:
        """The SDK's error as a ProviderError (retryable or not, Retry-After, budget)."""


class DeepEvalProvider:
    """A judge that asks as DeepEval's own model class asks, through the class's SDK."""

    def __init__(self, spec: JudgeSpec, model_class: ModelClass, transport: SdkTransport) -> None:
        from deepeval.metrics.g_eval.utils import no_log_prob_support

        self.spec = spec
        self._class = model_class
        self._transport = transport
        self._model = model_class.model(spec)
        self._client: Any = None
        self._where = f"{spec.provider} judge at {safe_url(spec.base_url or model_class.endpoint)}"
        # As DeepEval's G-Eval decides for its own model (the class's raw call, the model's
        # data); ``logprobs: false`` turns it off.
        self.answers_logprobs = (
            model_class.raw is not None
            and spec.logprobs is not False
            and not no_log_prob_support(self._model)
        )

    @property
    def reads_images(self) -> bool:
        """Whether DeepEval's class sends this model images (its model data says so)."""
        return bool(self._model.supports_multimodal())

    @property
    def wire(self) -> str:
        form = self._class.wire(self._model) if self._class.wire else "as-class"
        return f"{self._class.name}:{form}"

    async def complete(self, prompt: str, schema: type[BaseModel] | None) -> Completion:
        generate = self._class.generate
        if schema is not None:
            schema = schema_built_once(schema)
        return await self._ask(
            lambda answers: generate(self._model, answers, prompt, schema), False, prompt
        )

    async def complete_raw(self, prompt: str, top_logprobs: int) -> Completion:
        raw = self._class.raw
        if raw is None or not self.answers_logprobs:
            raise ProviderError(f"{self._where}: no log-probabilities", retryable=False)
        return await self._ask(
            lambda answers: raw(self._model, answers, prompt, top_logprobs), True, prompt
        )

    async def _ask(
        self, ask: Callable[[list[BaseException]], Awaitable[object]], raw: bool, prompt: str
    ) -> Completion:
        if self._client is None:
            spec = self.spec
            key = (spec.provider, spec.endpoint, spec.api_version, spec.deployment, spec.region)
            self._client = await worker_client(
                key, spec, lambda: self._class.client(self._model, spec)
            )
        answered: list[BaseException] = []
        errors = self._transport.errors
        while True:
            try:
                call = await recorded_call(ask(list(answered)))
            except errors as error:  # the class let the SDK's error through, as it would
                raise self._transport.failure(error, self._where, self.spec) from None
            try:
                return await self._transport.send(self._client, call, raw, prompt)
            except errors as error:
                failure = self._transport.failure(error, self._where, self.spec)
                if failure.retryable or len(answered) == _MAX_ANSWERED_ERRORS:
                    raise failure from None
                answered.append(error)  # the class's own handling decides what follows


# One SDK client per provider settings, per process (a fork makes its own: connections
# are not shared across processes), made on the judge loop, closed at exit.
_CLIENTS: dict[tuple[Hashable, ...], asyncio.Future[Any]] = {}


async def worker_client(
    key: tuple[Hashable, ...], spec: JudgeSpec, build: Callable[[], Any]
) -> Any:
    """The client this process keeps for ``key`` and the spec's keys and timeout.

    ``build`` may return the client or an awaitable of it; the first caller builds it,
    the others wait for it.
    """
    full_key = (os.getpid(), *key, spec.timeout_s, secrets_digest(spec))
    if full_key not in _CLIENTS:

        async def built() -> Any:
            client = build()
            return await client if inspect.isawaitable(client) else client

        _CLIENTS[full_key] = asyncio.ensure_future(built())
    try:
        return await asyncio.shield(_CLIENTS[full_key])
    except Exception:
        _CLIENTS.pop(full_key, None)  # the next call tries again
        raise


@atexit.register
def _close_clients() -> None:
    """Close this process's clients on their loop (aiohttp warns of a session left open)."""
    pid = os.getpid()
    for key, made in list(_CLIENTS.items()):
        loop = made.get_loop()
        if key[0] != pid or loop.is_closed() or not loop.is_running() or not made.done():
            continue
        if made.cancelled() or made.exception() is not None:
            continue
        client = made.result()
        close = getattr(client, "close", None) or getattr(client, "aclose", None)
        if close is None:
            continue

        async def closed(close: Callable[[], Any] = close) -> None:
            closing = close()
            if inspect.isawaitable(closing):
                await closing

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(closed(), loop).result(timeout=5)
    _CLIENTS.clear()
