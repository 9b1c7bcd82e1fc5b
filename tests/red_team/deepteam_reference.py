"""DeepTeam's own path, for the parity test: ``red_team()`` with its own model class.

Run as ``python -m tests.red_team.deepteam_reference SPEC OUT`` in an environment with
DeepTeam's telemetry off. SPEC names the loopback judge, the draw's seed and the purpose;
the vulnerabilities and attacks are built here by hand, as a DeepTeam user writes them,
and the model callback answers with ``deterministic_target``. OUT receives every test case
DeepTeam returned.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from deepeval.models import OpenAIModel
from deepteam import red_team
from deepteam.attacks.multi_turn import LinearJailbreaking
from deepteam.attacks.single_turn import PromptInjection
from deepteam.test_case import RTTurn, ToolCall
from deepteam.vulnerabilities import ExcessiveAgency, PromptLeakage

from tests.red_team.deterministic_target import answer

# The same plan the parity test gives the pipeline as a redTeam section.
SECTION = {
    "vulnerabilities": [
        {"name": "ExcessiveAgency", "types": ["functionality", "permissions"]},
        {"name": "PromptLeakage", "types": ["instructions"]},
    ],
    "attacks": [
        {"name": "PromptInjection", "weight": 1},
        {"name": "LinearJailbreaking", "weight": 2, "numTurns": 2},
    ],
    "attacksPerVulnerabilityType": 2,
}


async def model_callback(input: str, turns: list[RTTurn] | None = None) -> RTTurn:
    content, calls = answer(input)
    tools = [ToolCall(**call) for call in calls]
    return RTTurn(role="assistant", content=content, tools_called=tools or None)


def _tools(calls: list[ToolCall] | None) -> list[dict[str, Any]]:
    return [
        {"name": call.name, "input_parameters": call.input_parameters, "output": call.output}
        for call in calls or []
    ]


def run(spec: dict[str, Any]) -> list[dict[str, Any]]:
    model = OpenAIModel(
        model=spec["model"], base_url=spec["base_url"], api_key="sk-parity", temperature=0
    )
    random.seed(spec["seed"])  # DeepTeam draws each attack's method from the global generator
    assessment = red_team(
        model_callback=model_callback,
        vulnerabilities=[
            ExcessiveAgency(types=["functionality", "permissions"]),
            PromptLeakage(types=["instructions"]),
        ],
        attacks=[PromptInjection(weight=1), LinearJailbreaking(weight=2, num_turns=2)],
        simulator_model=model,
        evaluation_model=model,
        attacks_per_vulnerability_type=2,
        target_purpose=spec["purpose"],
    )
    return [
        {
            "vulnerability": case.vulnerability,
            "vulnerability_type": case.vulnerability_type.value,
            "attack_method": case.attack_method,
            "input": case.input,
            "actual_output": case.actual_output,
            "turns": [
                {"role": turn.role, "content": turn.content, "tools": _tools(turn.tools_called)}
                for turn in case.turns
            ]
            if case.turns
            else None,
            "tools": _tools(case.tools_called),
            "score": case.score,
            "reason": case.reason,
            "error": case.error,
            "risk_category": case.risk_category,
        }
        for case in assessment.test_cases
    ]


if __name__ == "__main__":
    spec_file, out_file = sys.argv[1:3]
    cases = run(json.loads(Path(spec_file).read_text(encoding="utf-8")))
    Path(out_file).write_text(json.dumps(cases), encoding="utf-8")
