"""Read an exported n8n workflow (or an API response) from disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.config_errors import BenchmarkConfigError
from n8n_deepeval_pipeline.workflow.hashing import WorkflowShapeError, extract_workflow


def read_workflow(path: Path) -> dict[str, Any]:
    """The workflow object in the file; errors name the file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BenchmarkConfigError(path, [f"cannot read the workflow: {error.strerror}"]) from None
    except json.JSONDecodeError as error:
        raise BenchmarkConfigError(
            path, [f"line {error.lineno}: not valid JSON ({error.msg})"]
        ) from None
    try:
        return dict(extract_workflow(document))
    except WorkflowShapeError as error:
        raise BenchmarkConfigError(path, [str(error)]) from None
