"""Read an exported n8n workflow (or an API response) from disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.config.errors import DataFileError, FileRole
from n8n_deepeval_pipeline.data_limits import DataLimitError, loads_json
from n8n_deepeval_pipeline.workflow.hashing import WorkflowShapeError, extract_workflow

_FILE = FileRole("workflow", "workflow")


def read_workflow(path: Path) -> dict[str, Any]:
    """The workflow object in the file; errors name the file (``pointed_to_by`` the benchmark)."""
    try:
        document = loads_json(path.read_text(encoding="utf-8"))
    except DataLimitError as error:
        raise DataFileError(path, [str(error)], _FILE) from None
    except OSError as error:
        raise DataFileError(path, [f"cannot read the workflow: {error.strerror}"], _FILE) from None
    except json.JSONDecodeError as error:
        problem = f"line {error.lineno}: not valid JSON ({error.msg})"
        raise DataFileError(path, [problem], _FILE) from None
    try:
        return dict(extract_workflow(document))
    except WorkflowShapeError as error:
        raise DataFileError(path, [str(error)], _FILE) from None
