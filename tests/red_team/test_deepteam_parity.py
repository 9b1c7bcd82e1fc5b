"""Parity with DeepTeam's own path: on one deterministic loopback judge, the attacks the
pipeline generates and the verdicts it gets are those of ``deepteam.red_team()`` run with
DeepTeam's own OpenAI model class and the same deterministic model callback.

The pipeline drives DeepTeam at its seams (attacks generated once and kept; each version
plays them, a multi-turn attack played again) in its worker process, with its own judge
as the simulator and evaluation model; DeepTeam's ``red_team()`` does it all in one call.
The judge answers from a digest of the whole request, its free text tagged with it, so a
different prompt, schema or conversation anywhere shows as a different attack or verdict.
"""

import json
import subprocess
import sys

import pytest

from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.red_team import session
from n8n_deepeval_pipeline.red_team.protocol import (
    DEEPTEAM_ENV,
    AttackRequest,
    GenerateRequest,
    TargetCall,
    TargetReply,
    ToolCallRecord,
)
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import ROOT
from tests.red_team.deepteam_reference import SECTION
from tests.red_team.deterministic_target import answer

pytestmark = pytest.mark.slow

MODEL = "gpt-4.1"  # a model DeepEval's OpenAI class knows: it asks for structured output
PURPOSE = "The support agent of Acme Outdoor; it can look orders up and issue refunds."
SEED = 7
# The simulator never refuses to write the next turn: the multi-turn attack is played out.
PINNED = {"refusal": False}


def target(call: TargetCall) -> TargetReply:
    content, calls = answer(call.message)
    tools = [ToolCallRecord.model_validate(tool) for tool in calls]
    return TargetReply(call_id=call.call_id, content=content, tools_called=tools)


def _tools(records):
    return [
        {"name": r["name"], "input_parameters": r["input_parameters"], "output": r["output"]}
        for r in records
    ]


def _pipeline(server, tmp_path):
    judge = JudgeSpec(
        provider="openai", model=MODEL, base_url=server.base_url, api_key="sk-parity"
    )  # no state folder: no cache, as DeepEval's model has none
    config = RedTeamConfig.model_validate({**SECTION, "seed": SEED})
    generated = session.generate(
        GenerateRequest(
            config=config,
            purpose=PURPOSE,
            judge=judge,
            cache_namespace="parity",
            concurrency=10,
        ),
        timeout_s=600,
    )
    outcomes = session.attack(
        AttackRequest(
            config=config,
            purpose=PURPOSE,
            judge=judge,
            seeds=generated.seeds,
            runs=1,
            concurrency=10,
        ),
        target,
        lambda outcome: None,
        timeout_s=600,
    )
    seeds = {seed.attack_id: seed for seed in generated.seeds}
    cases = []
    for outcome in outcomes:
        seed = seeds[outcome.attack_id]
        played = outcome.model_dump()
        cases.append(
            {
                "vulnerability": seed.vulnerability,
                "vulnerability_type": seed.vulnerability_type,
                "attack_method": seed.attack_method,
                "input": outcome.input,
                "actual_output": outcome.actual_output,
                "turns": [
                    {"role": t["role"], "content": t["content"], "tools": _tools(t["tools_called"])}
                    for t in played["turns"]
                ]
                if played["turns"]
                else None,
                "tools": _tools(played["tools_called"]) if not played["turns"] else [],
                "score": outcome.score,
                "reason": outcome.reason,
                "error": outcome.error,
                "risk_category": outcome.risk_category,
            }
        )
    return generated, cases


def _reference(server, tmp_path):
    spec = {"base_url": server.base_url, "model": MODEL, "seed": SEED, "purpose": PURPOSE}
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "tests.red_team.deepteam_reference", "spec.json", "out.json"],
        cwd=tmp_path,
        env={**worker_environment(), **DEEPTEAM_ENV, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=600,
        capture_output=True,
    )
    return json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))


def _canonical(items):
    return sorted(json.dumps(item, sort_keys=True) for item in items)


def test_attacks_and_verdicts_are_those_of_deepteam_red_team(tmp_path):
    server = LoopbackJudge(latency_s=0.0, distinct_text=True, fixed=PINNED).start()
    try:
        reference = _reference(server, tmp_path)
        reference_bodies = _canonical(server.bodies)
        server.bodies.clear()
        generated, pipeline = _pipeline(server, tmp_path)
        pipeline_bodies = _canonical(server.bodies)
    finally:
        server.stop()

    # The run exercised what it compares: both attack methods, a conversation of several
    # turns, tool calls the judge read, and judged verdicts.
    methods = {case["attack_method"] for case in reference}
    assert methods == {"Prompt Injection", "Linear Jailbreaking"}
    multi_turn = [case for case in reference if case["turns"]]
    assert multi_turn and all(len(case["turns"]) >= 4 for case in multi_turn)
    assert any(case["tools"] for case in reference) or any(
        turn["tools"] for case in multi_turn for turn in case["turns"]
    )
    assert all(case["error"] is None and case["score"] is not None for case in reference)

    # The attacks: the same vulnerabilities, types, methods and texts (a multi-turn
    # attack's opening), generated once and kept by the pipeline.
    seeds = [
        {
            "vulnerability": seed.vulnerability,
            "vulnerability_type": seed.vulnerability_type,
            "attack_method": seed.attack_method,
            "input": seed.input,
        }
        for seed in generated.seeds
    ]
    attacks = [
        {
            key: case[key]
            for key in ("vulnerability", "vulnerability_type", "attack_method", "input")
        }
        for case in reference
    ]
    assert _canonical(seeds) == _canonical(attacks)
    # The verdicts, with every conversation and tool call they judged.
    assert _canonical(pipeline) == _canonical(reference)
    # Every judge request the pipeline sent is one DeepTeam's own model sent, and back.
    assert pipeline_bodies == reference_bodies
