"""DeepEval's own path, for the optimisers' parity tests: ``PromptOptimizer.optimize()``.

Run as ``python -m tests.optimization.deepeval_reference SPEC OUT`` in a worker's
environment (DeepEval reads its settings at import). SPEC names the judge (base URL,
model), the goldens, the text, the algorithm's options and seed, and what is optimised:

- an agent's prompt (``optimize``): the loopback agent's ``/answer`` URL and the metrics
  (catalog slug and config); the model callback is written here as a DeepEval user would
  write it for an agent (POST the prompt and the input, read the output);
- a judge metric's criteria (``calibration --align``, ``"alignment"``): the metric (slug
  and config), each golden's labelled run (input, output, expected output) and the
  people's verdict; the model callback measures DeepEval's own metric, built with the
  candidate as its criteria, on the run's test case, and answers with its verdict; the
  one metric is agreement with people, a ``BaseMetric`` written here.

The optimiser model and the metrics' model are DeepEval's own OpenAI model class. The
metrics are built by the catalog's constructor, as the score parity suites build them
(their parity with DeepEval is that suite's subject); the verdict's and the agreement's
words are the pipeline's (``calibration.alignment_goldens``), which are what the optimiser
is meant to read. The candidate ids DeepEval draws from ``uuid4`` are seeded as the
pipeline seeds them: they order its Pareto bookkeeping, and the same seed must mean the
same search. OUT receives the texts tried (in the order they were first answered), the
best text, and the final Pareto table by text.

DeepEval 4.3.1's optimiser fails with its own (native) models: after each call it counts
the tokens on the caller (``accrue_token_usage``), and its scorer, rewriter and proposers
have ``_accrue_cost`` but no ``_accrue_tokens`` (``AttributeError: 'Scorer' object has no
attribute '_accrue_tokens'``). They are given the no-op they lack, which changes nothing
they send or decide; the pipeline's judge is a custom model and never takes that path.
"""

from __future__ import annotations

import contextvars
import json
import random
import sys
import uuid
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
from deepeval.dataset.golden import Golden
from deepeval.evaluate.configs import AsyncConfig
from deepeval.metrics import BaseMetric
from deepeval.models import OpenAIModel
from deepeval.optimizer import PromptOptimizer
from deepeval.optimizer.algorithms import GEPA
from deepeval.optimizer.configs import DisplayConfig
from deepeval.prompt.prompt import Prompt
from deepeval.test_case import LLMTestCase

from n8n_deepeval_pipeline.calibration.alignment_goldens import Verdict, agreement
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.worker.metric_builder import construct_metric

ID_MODULES = (
    "deepeval.optimizer.types",
    "deepeval.optimizer.algorithms.gepa.gepa",
)


def seed_ids(seed: int) -> None:
    generator = random.Random(f"candidate-ids:{seed}")
    ids = SimpleNamespace(
        uuid4=lambda: uuid.UUID(int=generator.getrandbits(128), version=4), UUID=uuid.UUID
    )
    for name in ID_MODULES:
        import_module(name).uuid = ids


def give_the_missing_token_counter() -> None:
    from deepeval.optimizer.algorithms.copro.proposer import COPROProposer
    from deepeval.optimizer.algorithms.miprov2.proposer.proposer import InstructionProposer
    from deepeval.optimizer.algorithms.simba.proposer import SIMBAProposer
    from deepeval.optimizer.rewriter import Rewriter
    from deepeval.optimizer.scorer import Scorer

    for cls in (Scorer, Rewriter, InstructionProposer, COPROProposer, SIMBAProposer):
        if not hasattr(cls, "_accrue_tokens"):
            cls._accrue_tokens = lambda self, input_tokens, output_tokens: None


def built(slug: str, config: dict[str, Any], model: OpenAIModel) -> Any:
    """A catalog metric, built as the workers build it."""
    entry = CATALOG[slug]
    return construct_metric(entry, entry.config_model.model_validate(config), model)


def for_an_agent(spec: dict[str, Any], model: OpenAIModel, tried: list[str]) -> tuple[Any, list]:
    """The agent's answer as the model callback; the benchmark's metrics."""

    async def agent(prompt: Prompt, golden: Golden) -> str:
        text = prompt.text_template
        if text not in tried:
            tried.append(text)
        body = {"system": text, "input": golden.input}
        async with aiohttp.ClientSession() as http, http.post(spec["agent"], json=body) as reply:
            return str((await reply.json())["output"])

    return agent, [built(slug, config, model) for slug, config in spec["metrics"]]


# The people's verdict and the judge's, for the agreement metric of the same golden.
VERDICT: contextvars.ContextVar[tuple[bool, Verdict]] = contextvars.ContextVar("verdict")


class AgreementWithPeople(BaseMetric):
    """1 when the judge's verdict is the people's, else 0 (the pipeline's words for why)."""

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold
        self.async_mode = True

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        raise NotImplementedError

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        agreed = agreement(*VERDICT.get())
        self.score, self.reason, self.success = agreed.score, agreed.reason, agreed.agrees
        return self.score

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return "agreement"


def for_a_judge_metric(
    spec: dict[str, Any], model: OpenAIModel, tried: list[str]
) -> tuple[Any, list]:
    """The metric's verdict with the candidate as its criteria; agreement with people."""
    slug, config = spec["alignment"]["metric"]

    async def judge(prompt: Prompt, golden: Golden) -> str:
        text = prompt.text_template
        if text not in tried:
            tried.append(text)
        metric = built(slug, {**config, "criteria": text}, model)
        run = spec["alignment"]["runs"][golden.name]
        score = await metric.a_measure(LLMTestCase(**run), _show_indicator=False)
        verdict = Verdict(passed=metric.is_successful(), score=score, reason=metric.reason)
        VERDICT.set((spec["alignment"]["people"][golden.name], verdict))
        return verdict.text()

    return judge, [AgreementWithPeople()]


def optimise(spec: dict[str, Any]) -> dict[str, Any]:
    give_the_missing_token_counter()
    tried: list[str] = []
    model = OpenAIModel(
        model=spec["model"], base_url=spec["base_url"], api_key="sk-parity", temperature=0
    )
    made = for_a_judge_metric if "alignment" in spec else for_an_agent
    callback, metrics = made(spec, model, tried)
    seed_ids(spec["seed"])
    optimizer = PromptOptimizer(
        model_callback=callback,
        metrics=metrics,
        optimizer_model=model,
        algorithm=GEPA(random_seed=spec["seed"], **spec["options"]),
        async_config=AsyncConfig(max_concurrent=spec["concurrency"]),
        display_config=DisplayConfig(show_indicator=False),
    )
    goldens = [Golden(**golden) for golden in spec["goldens"]]
    best = optimizer.optimize(Prompt(text_template=spec["text"]), goldens)
    report = optimizer.optimization_report
    texts = {key: snap.prompts["__module__"].text_template
             for key, snap in report.prompt_configurations.items()}  # fmt: skip
    return {
        "tried": tried,
        "best": best.text_template,
        "pareto": {texts[key]: scores for key, scores in report.pareto_scores.items()},
    }


if __name__ == "__main__":
    spec_file, out_file = sys.argv[1:3]
    result = optimise(json.loads(Path(spec_file).read_text(encoding="utf-8")))
    Path(out_file).write_text(json.dumps(result), encoding="utf-8")
