"""DeepEval's own path, for the synthesis parity suite: its ``Synthesizer`` with its OpenAI model.

Run as ``python -m tests.synthesis.deepeval_synthesis_reference SPEC OUT`` in a worker's
environment (DeepEval reads its settings at import). SPEC names the judge (base URL, model)
and the synthesis (method, material, settings, styling), written here as a DeepEval user
would call the Synthesizer, not built by the pipeline. OUT receives each golden's input,
context, expected output, evolutions and filter score.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from deepeval.models import OpenAIModel  # GPTModel is its deprecated name
from deepeval.synthesizer import Synthesizer
from deepeval.synthesizer.config import EvolutionConfig, FiltrationConfig, StylingConfig
from deepeval.synthesizer.types import Evolution


def synthesize(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The goldens of DeepEval's own ``generate_goldens_from_*`` for the spec."""
    model = OpenAIModel(
        model=spec["model"], base_url=spec["base_url"], api_key="sk-parity", temperature=0
    )
    styling = spec.get("styling")
    synthesizer = Synthesizer(
        model=model,
        max_concurrent=spec["max_concurrent"],
        filtration_config=FiltrationConfig(
            synthetic_input_quality_threshold=spec["quality_threshold"],
            max_quality_retries=spec["quality_retries"],
            critic_model=model,
        ),
        evolution_config=EvolutionConfig(
            num_evolutions=spec["num_evolutions"],
            evolutions={Evolution(name): weight for name, weight in spec["evolutions"].items()},
        ),
        styling_config=StylingConfig(**styling) if styling else None,
    )
    random.seed(spec["seed"])
    if spec["method"] == "scratch":
        goldens = synthesizer.generate_goldens_from_scratch(num_goldens=spec["count"])
    else:
        goldens = synthesizer.generate_goldens_from_contexts(
            contexts=spec["contexts"],
            include_expected_output=spec["with_expected_output"],
            max_goldens_per_context=spec["count"],
        )
    return [
        {
            "input": golden.input,
            "context": golden.context,
            "expected_output": golden.expected_output,
            "evolutions": golden.additional_metadata["evolutions"],
            "quality": golden.additional_metadata.get("synthetic_input_quality"),
        }
        for golden in goldens
    ]


if __name__ == "__main__":
    spec_file, out_file = sys.argv[1:3]
    result = synthesize(json.loads(Path(spec_file).read_text(encoding="utf-8")))
    Path(out_file).write_text(json.dumps(result), encoding="utf-8")
