"""Shared fixtures: example paths and small benchmark folders built in tmp_path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "support_agent"


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """A private copy of the support-agent example (tests may edit its workflow)."""
    target = tmp_path / "support_agent"
    shutil.copytree(EXAMPLE, target)
    return target / "benchmark.yaml"


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path
