"""The judge DeepEval metrics receive as ``model=`` (worker side).

One class for every provider: it looks the call up in the shared cache, fails fast while
the circuit breaker is open, waits for a requests-per-minute slot and an in-flight slot
shared by all workers, calls the provider with retries (exponential backoff with jitter,
honouring Retry-After; a rate-limit answer for as long as the evaluation has time, any
other failure for a bounded number of attempts and time), validates the answer
against the metric's schema and asks once more if it does not fit, then stores it.
Breaker, rate window and slots belong to one judge (``JudgeSpec.identity``): each judge
of a panel, or of a metric with a judge of its own, has its own.

Sync and async are adapted once: all of it is async and runs on one event loop thread
per worker, so the provider's HTTP client lives on a single loop; ``generate`` waits
for that loop, ``a_generate`` awaits it.

``generate_raw_response`` is DeepEval's way to ask for log-probabilities (G-Eval weights
its score by them). Where DeepEval's own model would have none (its class has no raw
call, its model data says the model has none, a judge set to ``logprobs: false``), it
raises ``AttributeError``, on which DeepEval takes its schema path, exactly as it does
for its own models. The usage counter says which path scored the evaluation.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel, ValidationError

from n8n_deepeval_pipeline.judging.call_ledger import CallLedger
from n8n_deepeval_pipeline.judging.call_log import JudgeCall
from n8n_deepeval_pipeline.judging.failures import (
    JudgeCallError,
    JudgeOutputError,
    JudgeRateLimited,
    JudgeUnavailable,
)
from n8n_deepeval_pipeline.judging.pacer import HeldBack, NoTurnInTime, Pacer, estimate_tokens
from n8n_deepeval_pipeline.judging.providers import (
    Completion,
    ImageReadingProvider,
    LogprobProvider,
    Provider,
    ProviderError,
    build_provider,
)
from n8n_deepeval_pipeline.judging.retry_policy import is_rate_limited
from n8n_deepeval_pipeline.judging.shared_state import CachedAnswer, SharedState, cache_key
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.judging.wire_format import plain_json_schema

T = TypeVar("T")


class NoLogprobs(AttributeError):
    """No log-probabilities from this judge: DeepEval falls back to its schema path."""


@dataclass
class JudgeScope:
    """Whose calls these are: the evaluation's usage counter and its cache namespace.

    ``deadline``: when (``time.monotonic()``) the evaluation's calls stop retrying
    rate-limit answers and stop waiting for their turn; None: a judge used outside an
    evaluation, whose every call has ``call_limit_s`` from its start (the simulated
    user's and the synthesizer's: what an evaluation gives the judge), else
    ``RetryPolicy.max_total_s``.
    """

    usage: UsageCounter
    namespace: str = "shared"
    deadline: float | None = None
    call_limit_s: float | None = None


# The scope of the evaluation in progress: a worker runs several at once, each in its own
# context, so what one evaluation's judge calls cost is never counted for another's.
JUDGE_SCOPE: contextvars.ContextVar[JudgeScope | None] = contextvars.ContextVar(
    "judge_scope", default=None
)


class UsageCounter:
    """Judge calls, retries, cache hits and tokens of the evaluation in progress.

    ``ledger``: where each answered call is also written as it arrives (see call_ledger).
    ``keep_calls``: keep each call's model, tokens and timing in ``call_log`` (for a trace);
    otherwise ``call_log`` is None and nothing is timed.
    """

    def __init__(self, ledger: CallLedger | None = None, keep_calls: bool = False) -> None:
        self.ledger = ledger
        self.keep_calls = keep_calls
        self.reset()

    def reset(self) -> None:
        """Start counting the next evaluation."""
        self.calls = 0
        self.retries = 0
        self.cached = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.weighted = 0  # raw answers with log-probabilities (G-Eval's weighted score)
        self.unweighted = 0  # asked for them and fell back to DeepEval's schema path
        self.call_log: list[JudgeCall] | None = [] if self.keep_calls else None

    @property
    def score_path(self) -> str | None:
        """How DeepEval scored a metric that asks for log-probabilities (None: it did not)."""
        if self.unweighted:
            return "schema_fallback"
        return "logprob_weighted" if self.weighted else None


class _LoopThread:
    """An event loop on a daemon thread: where every judge call of this worker runs."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="judge-loop", daemon=True).start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def run_async(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return await asyncio.wrap_future(future)


@functools.cache
def _process_loop(pid: int) -> _LoopThread:
    """The one judge loop of process ``pid``, shared by all its judges (a fork gets its own)."""
    return _LoopThread()


def _json_object(text: str) -> str:
    """The outermost JSON object in a reply (models sometimes wrap it in prose or fences)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text


class PipelineJudge(DeepEvalBaseLLM):
    """A DeepEval model backed by this project's providers, cache and limits."""

    def __init__(self, spec: JudgeSpec, usage: UsageCounter) -> None:
        self.spec = spec
        self.identity = spec.identity  # a hash: computed once, not on every call
        self.usage = usage  # when no evaluation scope is set (a judge used on its own)
        self._rng = random.Random()
        self._loop = _process_loop(os.getpid())
        self._provider: Provider = self._loop.run(self._build_provider())
        state_dir = Path(spec.state_dir) if spec.state_dir else None
        self._state = SharedState.of_process(state_dir) if state_dir else None
        self._pacer = Pacer(spec, self._state, state_dir) if self._state and state_dir else None
        super().__init__(model=spec.model)

    async def _build_provider(self) -> Provider:
        return build_provider(self.spec)  # its client lives on the loop

    def load_model(self) -> PipelineJudge:
        return self

    def get_model_name(self) -> str:
        return self.spec.label

    def supports_multimodal(self) -> bool:
        """Whether DeepEval may send this judge images: its provider's model reads them."""
        provider = self._provider
        return isinstance(provider, ImageReadingProvider) and provider.reads_images

    def _scope(self) -> JudgeScope:
        """The calling evaluation's scope (read in its context, before the loop hop)."""
        return JUDGE_SCOPE.get() or JudgeScope(self.usage)

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        return self._loop.run(self._answer(prompt, schema, self._scope()))

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        return await self._loop.run_async(self._answer(prompt, schema, self._scope()))

    def generate_raw_response(self, prompt: str, top_logprobs: int = 5) -> tuple[Any, float]:
        return self._loop.run(self._raw(prompt, top_logprobs, self._scope()))

    async def a_generate_raw_response(
        self, prompt: str, top_logprobs: int = 5
    ) -> tuple[Any, float]:
        return await self._loop.run_async(self._raw(prompt, top_logprobs, self._scope()))

    async def _raw(self, prompt: str, top_logprobs: int, scope: JudgeScope) -> tuple[Any, float]:
        """An OpenAI ``ChatCompletion`` with log-probabilities, and its cost (priced later)."""
        from openai.types.chat import ChatCompletion

        provider, usage = self._provider, scope.usage
        if not isinstance(provider, LogprobProvider) or not provider.answers_logprobs:
            usage.unweighted += 1
            raise NoLogprobs(f"{self.spec.label} gives no log-probabilities")
        top = top_logprobs  # the provider caps it as DeepEval's class does
        key = self._key(prompt, {"raw_response": {"top_logprobs": top}}, scope.namespace)

        async def ask() -> CachedAnswer:
            estimate = self._estimate(prompt)
            completion = await self._call(
                lambda: provider.complete_raw(prompt, top), scope, estimate
            )
            why = _not_a_rubric_answer(completion.text)
            if why is not None:  # asked once more saying why, as a schema's answer is
                retry = f"{prompt}\n\nYour previous answer was not valid: {why}. {_AGAIN}"
                completion = await self._call(
                    lambda: provider.complete_raw(retry, top), scope, estimate
                )
                again = _not_a_rubric_answer(completion.text)
                if again is not None:
                    raise JudgeOutputError(
                        "the judge answered twice with text that is not the JSON "
                        f"{{score, reason}} G-Eval asks for: {again}"
                    )
            return _cached_answer(completion)

        answer = await self._cached_or_asked(key, ask, usage)
        reply = ChatCompletion.model_validate_json(answer.answer)
        if reply.choices and reply.choices[0].logprobs is not None:
            usage.weighted += 1
        else:
            usage.unweighted += 1
        return reply, 0.0

    async def _answer(self, prompt: str, schema: type[BaseModel] | None, scope: JudgeScope) -> Any:
        shape = plain_json_schema(schema) if schema is not None else None
        parsed: list[Any] = []

        async def ask() -> CachedAnswer:
            answer, value = await self._ask_until_valid(prompt, schema, scope)
            parsed.append(value)
            return answer

        key = self._key(prompt, shape, scope.namespace)
        answer = await self._cached_or_asked(key, ask, scope.usage)
        return parsed[0] if parsed else self._parse(answer.answer, schema)

    async def _cached_or_asked(
        self, key: str | None, ask: Callable[[], Awaitable[CachedAnswer]], usage: UsageCounter
    ) -> CachedAnswer:
        """The cached answer for ``key``, else ``ask()``'s, stored (no cache: just asked)."""
        if self._state is None or key is None:
            return await ask()
        cached = await self._cached_or_claimed(self._state, key)
        if cached is not None:
            usage.cached += 1
            self._log(usage, time.time(), time.monotonic(), cached=True)
            return cached
        try:
            return self._state.store(key, await ask())
        finally:
            self._state.release(key)

    async def _cached_or_claimed(self, state: SharedState, key: str) -> CachedAnswer | None:
        """The cached answer, after waiting while another evaluation asks; None: ask it."""
        # Long enough for the asker's retries and its second try at a valid answer.
        lease_s = 2 * (self.spec.retry.max_total_s + self.spec.timeout_s)
        while (cached := state.cached(key)) is None:
            if state.claim(key, lease_s):
                cached = state.cached(key)  # answered between the two looks
                if cached is not None:
                    state.release(key)
                return cached
            await asyncio.sleep(0.05)
        return cached

    def _key(self, prompt: str, shape: dict[str, Any] | None, namespace: str) -> str | None:
        if not self.spec.cache or self.spec.is_dry_run:
            return None
        settings: dict[str, Any] = {
            "temperature": self.spec.temperature,
            "max_tokens": self.spec.max_tokens,
            "wire": self._provider.wire,  # answers to other request forms are not mixed
        }
        if self.spec.endpoint:  # the same model name on two servers: two judges
            settings["endpoint"] = self.spec.endpoint
        provider, model = self.spec.provider, self.spec.model
        return cache_key(provider, model, settings, prompt, shape, namespace)

    async def _ask_until_valid(
        self, prompt: str, schema: type[BaseModel] | None, scope: JudgeScope
    ) -> tuple[CachedAnswer, Any]:
        """Ask; if the answer does not fit the schema, ask once more saying why."""
        estimate = self._estimate(prompt)
        completion = await self._call(
            lambda: self._provider.complete(prompt, schema), scope, estimate
        )
        try:
            parsed = self._parse(completion.text, schema)
        except (ValidationError, ValueError) as error:
            retry = (
                f"{prompt}\n\nYour previous answer was not valid: {_short(error)}. "
                "Answer again with JSON only, exactly matching the schema."
            )
            completion = await self._call(
                lambda: self._provider.complete(retry, schema), scope, estimate
            )
            try:
                parsed = self._parse(completion.text, schema)
            except (ValidationError, ValueError) as again:
                raise JudgeOutputError(
                    "the judge answered twice with JSON that does not fit "
                    f"{schema.__name__ if schema else 'the answer'}: {_short(again)}"
                ) from None
        return _cached_answer(completion), parsed

    @staticmethod
    def _parse(text: str, schema: type[BaseModel] | None) -> Any:
        if schema is None:
            return text
        return schema.model_validate_json(_json_object(text))

    async def _call(
        self, request: Callable[[], Awaitable[Completion]], scope: JudgeScope, tokens: int
    ) -> Completion:
        """One successful provider call, with the retries it took.

        ``tokens``: what the call is estimated to cost, for the tokens-per-minute window.
        A rate-limit answer is retried until the scope's deadline (no count of attempts:
        the pacing keeps the retries to the rate the judge accepts); any other failure
        as the retry policy bounds it.
        """
        self._fail_fast_if_open()
        policy, usage = self.spec.retry, scope.usage
        started = time.monotonic()
        wall = time.time() if usage.call_log is not None else 0.0
        limit_s = policy.max_total_s if scope.call_limit_s is None else scope.call_limit_s
        deadline = started + limit_s if scope.deadline is None else scope.deadline
        attempt = failures = 0
        while True:
            attempt += 1
            try:
                # Its wait for a turn ends with its time too: a judge that refuses without
                # saying why is paced ever slower, and a call left waiting waited for ever.
                completion = await self._call_once(request, usage, tokens, deadline)
            except NoTurnInTime as late:  # not the judge's failure: its breaker is left alone
                raise JudgeRateLimited(f"{self.spec.label}: {late}") from None
            except ProviderError as error:
                limited = is_rate_limited(error.status, error.retry_after_s, str(error))
                failures += not limited
                delay = policy.delay(attempt, error.retry_after_s, self._rng)
                now = time.monotonic()
                if limited:
                    give_up = now + delay > deadline
                else:
                    out_of_time = now - started + delay > policy.max_total_s
                    give_up = not error.retryable or failures >= policy.max_attempts or out_of_time
                if give_up:
                    self._record_failure(str(error))
                    self._log(usage, wall, started, retries=attempt - 1, error=str(error))
                    if limited:
                        raise JudgeRateLimited(
                            f"{error} (still rate limited after {attempt} attempt(s) in "
                            f"{now - started:.0f} s: the evaluation's time for retries is spent)",
                            error.status,
                        ) from None
                    raise JudgeCallError(
                        f"{error} (after {attempt} attempt(s))", error.status
                    ) from None
                usage.retries += 1
                with HeldBack():  # the judge refused: its backoff is pacing too
                    await asyncio.sleep(delay)
                continue
            if self._state is not None:
                self._state.record_success(self.identity)
            self._log(usage, wall, started, completion, retries=attempt - 1)
            return completion

    async def _call_once(
        self,
        request: Callable[[], Awaitable[Completion]],
        usage: UsageCounter,
        tokens: int,
        deadline: float | None,
    ) -> Completion:
        completion: Completion
        if self._pacer is None:
            completion = await request()
        else:
            async with self._pacer.call(tokens, deadline) as paced:
                try:
                    completion = await request()
                except ProviderError as error:
                    if is_rate_limited(error.status, error.retry_after_s, str(error)):
                        self._pacer.refused(error.limits, error.retry_after_s, paced)
                    raise
                paced.tokens = completion.prompt_tokens + completion.completion_tokens or None
            self._pacer.answered(completion.limits, tokens, paced)
        usage.calls += 1
        usage.prompt_tokens += completion.prompt_tokens
        usage.completion_tokens += completion.completion_tokens
        if usage.ledger is not None:  # answered: counted now, whatever becomes of the rest
            usage.ledger.answered(
                self.spec.label,
                self.spec.model,
                completion.prompt_tokens,
                completion.completion_tokens,
            )
        return completion

    def _log(
        self,
        usage: UsageCounter,
        wall: float,
        started: float,
        completion: Completion | None = None,
        retries: int = 0,
        cached: bool = False,
        error: str | None = None,
    ) -> None:
        """Keep one call in the evaluation's log, if it keeps one (a trace is exported)."""
        if usage.call_log is None:
            return
        usage.call_log.append(
            JudgeCall(
                judge=self.spec.label,
                provider=self.spec.provider,
                model=self.spec.model,
                started_at=wall,
                duration_s=round(time.monotonic() - started, 6),
                prompt_tokens=completion.prompt_tokens if completion else 0,
                completion_tokens=completion.completion_tokens if completion else 0,
                retries=retries,
                cached=cached,
                error=error,
            )
        )

    def _estimate(self, prompt: str) -> int:
        return estimate_tokens(prompt, self.spec.max_tokens)

    def _fail_fast_if_open(self) -> None:
        if self._state is None:
            return
        is_open, last_error = self._state.breaker_open(self.identity)
        if is_open:
            raise JudgeUnavailable(
                f"judge unavailable: {self.spec.breaker_threshold} calls in a row failed, "
                f"so the rest fail fast for {self.spec.breaker_cool_down_s:g} s. "
                f"Last error: {last_error}"
            )

    def _record_failure(self, error: str) -> None:
        if self._state is not None:
            self._state.record_failure(
                self.identity,
                error,
                self.spec.breaker_threshold,
                self.spec.breaker_cool_down_s,
            )


_AGAIN = "Answer again with JSON only, exactly as asked above."


def _not_a_rubric_answer(raw: str) -> str | None:
    """Why a raw completion is not what DeepEval's rubric score reads, or None if it is.

    DeepEval loads ``choices[0].message.content`` with its own ``trimAndLoadJson`` and
    reads ``score`` and ``reason`` from it; an answer it would fail on is asked again.
    """
    from deepeval.metrics.utils import trimAndLoadJson
    from openai.types.chat import ChatCompletion

    reply = ChatCompletion.model_validate_json(raw)
    content = reply.choices[0].message.content if reply.choices else None
    try:
        loaded = trimAndLoadJson(content)
    except ValueError:
        return "not JSON"
    missing = [
        key for key in ("score", "reason") if not isinstance(loaded, dict) or key not in loaded
    ]
    return f"no {' and no '.join(missing)}" if missing else None


def _cached_answer(completion: Completion) -> CachedAnswer:
    return CachedAnswer(
        answer=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
    )


def _short(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "answer"
        return f"{error.error_count()} error(s), first at {where}: {first['msg']}"
    return str(error).splitlines()[0][:200]
