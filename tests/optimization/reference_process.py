"""DeepEval's own optimiser run in a process of its own, as the parity tests run it.

``tests.optimization.deepeval_reference`` imports DeepEval, which reads its settings at
import: it runs in a worker's environment, never in the test's process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import ROOT


def run_reference(folder: Path, spec: dict[str, Any]) -> Any:
    """What DeepEval's ``PromptOptimizer`` tried and kept for ``spec`` (run in ``folder``)."""
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "tests.optimization.deepeval_reference", "spec.json", "out.json"],
        cwd=folder,
        env={**worker_environment(), "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=900,
    )
    return json.loads((folder / "out.json").read_text(encoding="utf-8"))


def canonical(bodies: list[dict[str, Any]]) -> set[str]:
    """Request bodies as a set: the pipeline asks each once (its cache), DeepEval as often
    as it needs."""
    return {json.dumps(body, sort_keys=True) for body in bodies}
