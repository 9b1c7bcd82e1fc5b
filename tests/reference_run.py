"""DeepEval's own path, run as its user would run it, in a process of its own.

A parity test writes what to do as ``spec.json`` in a folder; the reference module (one
per domain: judging, simulation, optimization) reads it and writes ``out.json``. The
process has the workers' environment (DeepEval's telemetry and dotenv off).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import ROOT


def run_reference(module: str, folder: Path, spec: Any, timeout_s: float = 600) -> Any:
    """What ``python -m module spec.json out.json`` wrote for ``spec``, run in ``folder``."""
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", module, "spec.json", "out.json"],
        cwd=folder,
        env={**worker_environment(), "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=timeout_s,
    )
    return json.loads((folder / "out.json").read_text(encoding="utf-8"))
