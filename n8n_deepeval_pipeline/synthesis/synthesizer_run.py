"""The synthesizer process: DeepEval's own ``Synthesizer`` with the pipeline's judge as its model.

Run as ``python -m n8n_deepeval_pipeline.synthesis.synthesizer_run FD`` by
``worker.launcher`` in a worker's environment (no credential in it): the request comes as
``ask`` on its connection, its progress goes back as ``update`` lines (every few seconds:
the judge's calls, and its refusals while it refuses) and its result as ``done``
(DeepEval prints its own progress into the process's log). It imports DeepEval, so the
CLI's process never imports it: it only starts it. Each judge call has the time an
evaluation gives the judge, so a judge that refuses for ever ends the synthesis with
``judge_rate_limited`` instead of holding it.

Nothing of the Synthesizer is re-implemented: its ``generate_*`` methods run as they are,
with the pipeline's ``PipelineJudge`` (cache, pacing, retries, breaker, token counts) as
``model=`` and as the filter's critic. One adaptation keeps the requests DeepEval's own:
for free text (an evolution, an expected output) DeepEval asks its own models without a
schema but asks a custom model for its ``Response`` schema; the judge here asks as DeepEval's
own model would, and hands the Synthesizer a ``Response``.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

from deepeval.synthesizer.schema import Response
from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.failures import JUDGE_FAILURES, failure_kind
from n8n_deepeval_pipeline.judging.judge import (
    JUDGE_SCOPE,
    JudgeScope,
    PipelineJudge,
    UsageCounter,
)
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.synthesis.process import secrets_of
from n8n_deepeval_pipeline.synthesis.request import (
    EmbedderSpec,
    SynthesisRequest,
    SynthesisResult,
    SynthesisUsage,
    SynthesizedGolden,
)
from n8n_deepeval_pipeline.worker.child_channel import connect, exit_now

DOCUMENTS_EXTRA = "documents"
_PROGRESS_EVERY_S = 2.0
Say = Callable[[str], None]


class SynthesisJudge(PipelineJudge):
    """The pipeline's judge, asked for free text as DeepEval asks its own models for it."""

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        if schema is Response:
            return Response(response=super().generate(prompt, None))
        return super().generate(prompt, schema)

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        if schema is Response:
            return Response(response=await super().a_generate(prompt, None))
        return await super().a_generate(prompt, schema)


def synthesize(request: SynthesisRequest, progress: Say | None = None) -> SynthesisResult:
    """The goldens DeepEval's Synthesizer makes for ``request``, or why it made none."""
    if request.random_seed is not None:
        random.seed(request.random_seed)  # DeepEval draws each evolution from ``random``
    usage = UsageCounter()
    judge = SynthesisJudge(request.judge, usage)
    limit_s = request.judge_call_limit_s
    scope = JUDGE_SCOPE.set(JudgeScope(usage, request.cache_namespace, call_limit_s=limit_s))
    try:
        with _reporting(usage, progress):
            goldens = _generate(_synthesizer(request, judge), request, judge)
    except JUDGE_FAILURES as error:
        message = redact(str(error), secrets_of(request))
        kind = failure_kind(error) or "judge_error"  # named as the metrics' scores name it
        return SynthesisResult(usage=_usage(usage), error=message, error_kind=kind)
    except ImportError as error:
        message = (
            f"{error}: --from-docs needs the optional dependencies of DeepEval's document "
            f"path: pip install 'n8n-deepeval-pipeline[{DOCUMENTS_EXTRA}]'"
        )
        return SynthesisResult(usage=_usage(usage), error=message, error_kind="dependency")
    finally:
        JUDGE_SCOPE.reset(scope)
    return SynthesisResult(goldens=goldens, usage=_usage(usage))


def _synthesizer(request: SynthesisRequest, judge: SynthesisJudge) -> Any:
    from deepeval.synthesizer import Synthesizer
    from deepeval.synthesizer.config import (
        ConversationalStylingConfig,
        EvolutionConfig,
        FiltrationConfig,
        StylingConfig,
    )
    from deepeval.synthesizer.types import Evolution

    styling = request.styling
    return Synthesizer(
        model=judge,
        max_concurrent=request.max_concurrent,
        filtration_config=FiltrationConfig(
            synthetic_input_quality_threshold=request.quality_threshold,
            max_quality_retries=request.quality_retries,
            critic_model=judge,
        ),
        evolution_config=EvolutionConfig(
            num_evolutions=request.num_evolutions,
            evolutions={Evolution(name): weight for name, weight in request.evolutions.items()},
        ),
        styling_config=None
        if styling is None
        else StylingConfig(
            scenario=styling.scenario,
            task=styling.task,
            input_format=styling.input_format,
            expected_output_format=styling.expected_output_format,
        ),
        conversational_styling_config=None
        if styling is None
        else ConversationalStylingConfig(
            scenario_context=styling.scenario,
            conversational_task=styling.task,
            participant_roles=styling.participant_roles,
        ),
    )


def _generate(
    synthesizer: Any, request: SynthesisRequest, judge: SynthesisJudge
) -> list[SynthesizedGolden]:
    """The request's ``generate_*`` method of DeepEval's Synthesizer, its goldens read back."""
    count, expected, conversational = (
        request.count,
        request.with_expected_output,
        request.conversational,
    )
    if request.method == "scratch":
        if conversational:
            made = synthesizer.generate_conversational_goldens_from_scratch(num_goldens=count)
        else:
            made = synthesizer.generate_goldens_from_scratch(num_goldens=count)
    elif request.method == "contexts":
        if conversational:
            made = synthesizer.generate_conversational_goldens_from_contexts(
                contexts=request.contexts,
                include_expected_outcome=expected,
                max_goldens_per_context=count,
            )
        else:
            made = synthesizer.generate_goldens_from_contexts(
                contexts=request.contexts,
                include_expected_output=expected,
                max_goldens_per_context=count,
            )
    elif request.method == "docs":
        made = _from_docs(synthesizer, request, judge)
    else:
        made = _from_goldens(synthesizer, request)
    return [_golden(golden, conversational) for golden in made]


def _from_docs(synthesizer: Any, request: SynthesisRequest, judge: SynthesisJudge) -> Any:
    from deepeval.synthesizer.config import ContextConstructionConfig

    assert request.embedder is not None
    config = ContextConstructionConfig(embedder=embedder(request.embedder), critic_model=judge)
    if request.conversational:
        return synthesizer.generate_conversational_goldens_from_docs(
            document_paths=request.documents,
            include_expected_outcome=request.with_expected_output,
            max_goldens_per_context=request.count,
            context_construction_config=config,
        )
    return synthesizer.generate_goldens_from_docs(
        document_paths=request.documents,
        include_expected_output=request.with_expected_output,
        max_goldens_per_context=request.count,
        context_construction_config=config,
    )


def _from_goldens(synthesizer: Any, request: SynthesisRequest) -> Any:
    from deepeval.dataset import ConversationalGolden, Golden

    if request.conversational:
        return synthesizer.generate_conversational_goldens_from_goldens(
            goldens=[
                ConversationalGolden(
                    scenario=seed.text, context=seed.context, expected_outcome=seed.expected
                )
                for seed in request.seeds
            ],
            max_goldens_per_golden=request.count,
            include_expected_outcome=request.with_expected_output,
        )
    return synthesizer.generate_goldens_from_goldens(
        goldens=[
            Golden(input=seed.text, context=seed.context, expected_output=seed.expected)
            for seed in request.seeds
        ],
        max_goldens_per_golden=request.count,
        include_expected_output=request.with_expected_output,
    )


def embedder(spec: EmbedderSpec) -> Any:
    """DeepEval's own embedding model for the spec's provider."""
    key = spec.api_key.get_secret_value() if spec.api_key else None
    if spec.provider == "azure-openai":
        from deepeval.models import AzureOpenAIEmbeddingModel

        return AzureOpenAIEmbeddingModel(
            model=spec.model,
            deployment_name=spec.model,
            api_key=key,
            base_url=spec.base_url,
            api_version=spec.api_version,
        )
    if spec.provider == "openai-compatible":
        from deepeval.models import LocalEmbeddingModel

        return LocalEmbeddingModel(model=spec.model, api_key=key or "none", base_url=spec.base_url)
    from deepeval.models import OpenAIEmbeddingModel

    if spec.base_url:
        return OpenAIEmbeddingModel(model=spec.model, api_key=key, base_url=spec.base_url)
    return OpenAIEmbeddingModel(model=spec.model, api_key=key)


def _golden(golden: Any, conversational: bool) -> SynthesizedGolden:
    """A DeepEval golden as the plain record the CLI turns into a row."""
    metadata = golden.additional_metadata or {}
    if conversational:
        text, expected = golden.scenario, golden.expected_outcome
        quality = metadata.get("synthetic_scenario_quality")
        sources = metadata.get("context_source_files") or []
        source_file = sources[0] if sources else None
    else:
        text, expected = golden.input, golden.expected_output
        quality = metadata.get("synthetic_input_quality")
        source_file = golden.source_file
    return SynthesizedGolden(
        text=str(text),
        context=list(golden.context) if golden.context else None,
        expected=expected,
        evolutions=[str(getattr(name, "value", name)) for name in metadata.get("evolutions") or []],
        quality=None if quality is None else float(quality),
        source_file=source_file,
    )


def _usage(usage: UsageCounter) -> SynthesisUsage:
    return SynthesisUsage(
        calls=usage.calls,
        retries=usage.retries,
        cached=usage.cached,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
    )


@contextlib.contextmanager
def _reporting(usage: UsageCounter, say: Say | None) -> Iterator[None]:
    """Say how many judge calls the synthesis has made every few seconds, refusals too.

    While the judge refuses, no call is answered: the retries say that it waits, and why.
    """
    if say is None:
        yield
        return
    done = threading.Event()

    def report() -> None:
        said = (-1, -1, -1)
        while not done.wait(_PROGRESS_EVERY_S):
            now = (usage.calls, usage.cached, usage.retries)
            if now != said:
                refused = f", {now[2]} refused and retried" if now[2] else ""
                say(f"synthesizing: {now[0]} judge calls (+{now[1]} cached{refused}) …")
                said = now

    thread = threading.Thread(target=report, name="synthesis-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def main() -> None:
    """Serve the request asked on the connection; send its progress and its result."""
    channel = connect()
    asked = channel.receive()
    assert asked is not None
    result = synthesize(asked.of(SynthesisRequest), lambda line: channel.send("update", line))
    channel.send("done", result)
    exit_now(0)


if __name__ == "__main__":
    main()
