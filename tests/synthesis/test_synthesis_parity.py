"""Synthesis parity: the pipeline's goldens are those of DeepEval's own ``Synthesizer`` with its
own OpenAI model class, both against one deterministic loopback judge that answers from the
whole request (so any difference in a prompt, a schema's form or the free-text requests shows
up as a different answer), on the same inputs and the same seed of evolutions. The reference
calls are written by hand in ``tests/synthesis/deepeval_synthesis_reference.py``."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.synthesis.process import run_synthesis
from n8n_deepeval_pipeline.synthesis.request import DEFAULT_EVOLUTIONS, SynthesisRequest
from n8n_deepeval_pipeline.synthesis.rows import Provenance, golden_rows
from n8n_deepeval_pipeline.synthesis.styling import styling_of
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import ROOT
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT

pytestmark = pytest.mark.slow

MODEL = "gpt-4.1"  # an OpenAI model DeepEval knows: structured outputs
CONTEXTS = [
    ["Refunds are paid within 5 working days.", "Only orders under 30 days old qualify."],
    ["Shipping is free over 50 EUR.", "Express delivery costs 9 EUR."],
    ["Order A3301 holds 2 sleeping bags at 89.50 each."],
]
STYLING = styling_of(WEBHOOK_AGENT)
CASES = {
    # One input at a time (max_concurrent 1): DeepEval draws each evolution from `random`
    # when the one before it has come back, so only a fixed order gives both paths the same
    # draws (at any concurrency, the goldens differ from run to run on DeepEval's own path).
    "contexts": {"method": "contexts", "contexts": CONTEXTS, "count": 2, "max_concurrent": 1,
                 "with_expected_output": True, "styling": None},
    "contexts_styled": {"method": "contexts", "contexts": CONTEXTS[:2], "count": 2,
                        "max_concurrent": 1, "with_expected_output": False,
                        "styling": {"scenario": STYLING.scenario, "task": STYLING.task,
                                    "input_format": STYLING.input_format}},
    "scratch": {"method": "scratch", "contexts": [], "count": 5, "max_concurrent": 1,
                "with_expected_output": False,
                "styling": {"scenario": STYLING.scenario, "task": STYLING.task,
                            "input_format": STYLING.input_format}},
}  # fmt: skip
SETTINGS = {"num_evolutions": 2, "evolutions": DEFAULT_EVOLUTIONS, "quality_threshold": 0.5,
            "quality_retries": 3, "seed": 20261202}  # fmt: skip


def _canonical(bodies: list[dict[str, Any]]) -> set[str]:
    # A set: the pipeline's cache asks a prompt DeepEval repeats only once.
    return {json.dumps(body, sort_keys=True) for body in bodies}


def _key(golden: dict[str, Any]) -> str:
    return json.dumps(golden, sort_keys=True)


def _both_ways(tmp: Path, case: dict[str, Any]) -> dict[str, Any]:
    server = LoopbackJudge(latency_s=0.0, free_text=True).start()
    try:
        spec = {"base_url": server.base_url, "model": MODEL, **SETTINGS, **case}
        (tmp / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        subprocess.run(
            [sys.executable, "-m", "tests.synthesis.deepeval_synthesis_reference", "spec.json",
             "out.json"],
            cwd=tmp, env={**worker_environment(), "PYTHONPATH": str(ROOT)}, check=True,
            timeout=600,
        )  # fmt: skip
        reference = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
        reference_bodies = list(server.bodies)
        server.bodies.clear()
        judge = JudgeSpec(provider="openai", model=MODEL, base_url=server.base_url,
                          api_key="sk-parity", state_dir=str(tmp / "judge"))  # fmt: skip
        styled = STYLING if case["styling"] else None
        request = SynthesisRequest(
            method=case["method"], count=case["count"], contexts=case["contexts"],
            styling=styled, evolutions=SETTINGS["evolutions"],
            num_evolutions=SETTINGS["num_evolutions"],
            quality_threshold=SETTINGS["quality_threshold"],
            quality_retries=SETTINGS["quality_retries"],
            with_expected_output=case["with_expected_output"],
            max_concurrent=case["max_concurrent"], random_seed=SETTINGS["seed"], judge=judge,
        )  # fmt: skip
        result = run_synthesis(request)
        pipeline_bodies = list(server.bodies)
    finally:
        server.stop()
    assert result.error is None, result.error
    pipeline = [
        {"input": golden.text, "context": golden.context, "expected_output": golden.expected,
         "evolutions": golden.evolutions, "quality": golden.quality}
        for golden in result.goldens
    ]  # fmt: skip
    rows = golden_rows(result.goldens, Provenance.of(request), judge.label, False, None, True)
    return {"reference": reference, "pipeline": pipeline, "rows": rows.rows,
            "bodies": (reference_bodies, pipeline_bodies), "usage": result.usage}  # fmt: skip


@pytest.fixture(scope="module", params=list(CASES))
def synthesized(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    made = _both_ways(tmp_path_factory.mktemp(request.param), CASES[request.param])
    reference, bodies = made["reference"], made["bodies"]
    print(f"{request.param}: {len(reference)} goldens, {len(made['rows'])} rows, requests "
          f"{len(bodies[0])} (DeepEval) / {len(bodies[1])} (pipeline, +{made['usage'].cached} "
          "cached)")  # fmt: skip
    return request.param, made


def test_the_goldens_are_deepevals_own(synthesized) -> None:
    name, made = synthesized
    reference, pipeline = made["reference"], made["pipeline"]
    assert reference, f"{name}: DeepEval made no golden"
    # The same goldens; their order is the order the contexts' tasks finished in.
    assert sorted(map(_key, pipeline)) == sorted(map(_key, reference))
    evolutions = {name for golden in pipeline for name in golden["evolutions"]}
    assert len(evolutions) > 1  # the seed drew several kinds, the same ones on both paths


def test_the_requests_are_deepevals_own(synthesized) -> None:
    _, made = synthesized
    reference, pipeline = made["bodies"]
    assert pipeline and _canonical(pipeline) == _canonical(reference)
    free_text = [body for body in pipeline if "response_format" not in body]
    assert free_text, "DeepEval's own model asks for evolutions as free text; so must the judge"
    strict = [body["response_format"] for body in pipeline if "response_format" in body]
    assert strict and all(form["json_schema"]["strict"] is True for form in strict)


def test_the_rows_are_deepevals_goldens_one_per_input_and_context(synthesized) -> None:
    # DeepEval keeps every golden: the same input drawn from two contexts is two goldens (the
    # styled case draws such a pair), and two rows; only an input repeated from the same
    # context is one row.
    _, made = synthesized
    goldens = {(g["input"].strip(), json.dumps(g["context"])) for g in made["reference"]}
    rows = [(row["input"], json.dumps(row["context"])) for row in made["rows"]]
    assert sorted(rows) == sorted(goldens)
    assert made["usage"].calls + made["usage"].cached == len(made["bodies"][0])
