"""PromptEngineer: a loopback judge (a test double) that diagnoses and rewrites as a person would.

Every request is answered as ``LoopbackJudge`` answers it, except DeepEval's optimiser's:
its diagnosis (``ScorerDiagnosisSchema``) names what the failing answers lack when the
evaluation results it is shown hold a failing score, and its rewrite (``RewriterSchema``)
adds ``instruction`` to the prompt it was given when the diagnosis it reads says so. So a
search has something real to find: the instruction a model under test needs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge

_ORIGINAL = re.compile(r"# Original Prompt\n(.*?)\n\n# Diagnostic Report", re.S)


class PromptEngineer(LoopbackJudge):
    """A loopback judge whose diagnosis and rewrite add ``instruction`` where it is missing."""

    def __init__(self, instruction: str, lacking: str, **options: Any) -> None:
        super().__init__(**options)
        self.instruction = instruction
        self.lacking = lacking  # how the diagnosis says what the failing answers lack

    def _structured(self, request: dict[str, Any], schema: Any, prompt: str) -> str:
        name = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "ScorerDiagnosisSchema":
            failing = "(Score: 0.0)" in prompt
            said = self.lacking if failing else ""
            return json.dumps(
                {"failures": said, "successes": "", "analysis": said or "every answer passes"}
            )
        if name == "RewriterSchema":
            original = _ORIGINAL.search(prompt)
            text = original[1] if original else ""
            if self.lacking in prompt and self.instruction not in text:
                text = f"{text}\n{self.instruction}"
            return json.dumps({"thought_process": "add what is missing", "revised_prompt": text})
        return super()._structured(request, schema, prompt)
