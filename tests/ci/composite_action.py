"""The `run:` steps of a composite action (action.yml), run as a GitHub runner runs them.

Each step's `env:` is evaluated (`${{ inputs.x }}`, `${{ steps.id.outputs.x }}`,
`${{ github.x }}`, `${{ runner.x }}`, `a || b`: what action.yml uses), its script runs
under `bash --noprofile --norc -eo pipefail` with the variables GitHub gives a step
(GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY, GITHUB_EVENT_PATH, …), and what it
writes to GITHUB_OUTPUT and GITHUB_PATH is read back for the next steps, as the runner
does. `uses:` steps (actions/setup-python, actions/cache, actions/upload-artifact) are
other repositories' JavaScript actions: they cannot run here and are listed as skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class StepRun:
    """One run step: its id, exit code and output."""

    id: str | None
    exit_code: int
    stdout: str
    stderr: str


@dataclass
class ActionRun:
    """What a run of the action did, step by step, and where it stopped."""

    steps: list[StepRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # the `uses:` steps
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """The job's exit code: the first failing step's, else 0."""
        return next((step.exit_code for step in self.steps if step.exit_code), 0)

    @property
    def logs(self) -> str:
        return "".join(step.stdout + step.stderr for step in self.steps)


def run_script(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``script`` as both runners run a step's shell: bash, no profile, -eo pipefail."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _lookup(path: str, context: dict[str, Any]) -> str:
    value: Any = context
    for part in path.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return "" if value is None else str(value)


def evaluate(text: str, context: dict[str, Any]) -> str:
    """``text`` with each ``${{ a.b || c.d }}`` replaced by its first non-empty operand."""

    def one(match: re.Match[str]) -> str:
        for operand in match.group(1).split("||"):
            value = _lookup(operand.strip(), context)
            if value:
                return value
        return ""

    return _EXPRESSION.sub(one, text)


def _read_outputs(path: Path) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as the runner reads them."""
    found: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index + 1)
            found[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            found[name] = value
        index += 1
    return found


def run_composite_action(
    action_dir: Path,
    inputs: dict[str, str],
    github: dict[str, str],
    runner: dict[str, str],
    environ: dict[str, str],
    workspace: Path,
) -> ActionRun:
    """Run the action's `run:` steps in ``workspace``, as the runner would, until one fails.

    ``environ``: the job's environment (the runner's GITHUB_* variables among it).
    """
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    context: dict[str, Any] = {"github": github, "runner": runner, "steps": {}}
    defaults = {
        name: evaluate(str(spec.get("default", "")), context)
        for name, spec in action["inputs"].items()
    }
    context["inputs"] = {**defaults, **inputs}
    done = ActionRun()
    path_entries: list[str] = []
    step_files = Path(runner["temp"]) / "step-files"
    step_files.mkdir(parents=True, exist_ok=True)
    for number, step in enumerate(action["runs"]["steps"]):
        if "uses" in step:
            done.skipped.append(step["uses"])
            continue
        output_file = step_files / f"output-{number}"
        path_file = step_files / f"path-{number}"
        output_file.touch()
        path_file.touch()
        env = {
            **environ,
            **{name: evaluate(str(value), context) for name, value in step.get("env", {}).items()},
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_PATH": str(path_file),
            "GITHUB_ACTION_PATH": str(action_dir),
        }
        env["PATH"] = os.pathsep.join([*reversed(path_entries), environ["PATH"]])
        assert step.get("shell") == "bash", "a composite action's run step names its shell"
        finished = run_script(evaluate(step["run"], context), workspace, env)
        step_id = step.get("id")
        done.steps.append(StepRun(step_id, finished.returncode, finished.stdout, finished.stderr))
        outputs = _read_outputs(output_file)
        path_entries += path_file.read_text(encoding="utf-8").split()
        if step_id:
            context["steps"][step_id] = {"outputs": outputs}
            done.outputs[step_id] = outputs
        if finished.returncode != 0:
            break
    return done
