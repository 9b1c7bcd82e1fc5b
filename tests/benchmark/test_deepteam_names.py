"""The names a benchmark may use are DeepTeam 1.0.10's own: every vulnerability with its types,
every attack with the options its class takes, every framework that needs no dataset download,
read from DeepTeam's classes in a process of their own (the test process never imports it)."""

import json
import subprocess
import sys

import pytest

from n8n_deepeval_pipeline.benchmark.deepteam_names import ATTACKS, FRAMEWORKS, VULNERABILITIES
from n8n_deepeval_pipeline.red_team.protocol import DEEPTEAM_ENV
from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_names_are_deepteam_s_own(tmp_path):
    printed = subprocess.run(
        [sys.executable, "-m", "tests.benchmark.deepteam_catalog"],
        cwd=tmp_path,
        env={**worker_environment(), **DEEPTEAM_ENV, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    own = json.loads(printed.stdout.splitlines()[-1])  # DeepEval may say a word first
    assert {name: [v.name, list(v.types)] for name, v in VULNERABILITIES.items()} == own[
        "vulnerabilities"
    ]
    assert {name: [a.name, a.multi_turn, list(a.options)] for name, a in ATTACKS.items()} == own[
        "attacks"
    ]
    assert {f.class_name: list(f.categories) for f in FRAMEWORKS.values()} == own["frameworks"]
