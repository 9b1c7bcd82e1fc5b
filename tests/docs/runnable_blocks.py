"""The shell blocks the docs mark as runnable, and a runner for them.

A block is marked by its fence's info string, `` ```sh {.runnable} ``: GitHub shows it as
shell, and the site adds a "run by the tests" note. Each command line must exit 0, or the
code its trailing comment states (`# exits 5`, also inside a longer comment such as
`# f7b1504dcb09, exits 5: it regressed`). The blocks of one page run in order in one
sandbox, so a later block may use what an earlier one made.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^```sh \{\.runnable\}\s*$")
_EXPECTED = re.compile(r"#.*\bexits (\d+)\b")
# What a fresh clone holds that the blocks may use; the virtual environment is linked.
SANDBOX_COPIES = ("examples", "scripts", "schemas", "pyproject.toml", "constraints.txt")
_FOREIGN = ("N8N_DEEPEVAL_", "N8N_API_", "DAGSTER_HOME", "DEEPEVAL_")


@dataclass(frozen=True)
class Command:
    """One command line of a runnable block, where it is, and the exit code it states."""

    source: str  # path:line
    text: str
    expected_exit: int


def runnable_blocks(text: str, name: str) -> list[list[Command]]:
    """The runnable blocks of a Markdown text, each as its command lines."""
    blocks: list[list[Command]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if not MARKER.match(lines[index]):
            index += 1
            continue
        block: list[Command] = []
        index += 1
        pending, start = "", 0
        while index < len(lines) and not lines[index].startswith("```"):
            line = lines[index]
            if not pending:
                start = index + 1
            pending += line.rstrip("\\") + (" " if line.endswith("\\") else "")
            if not line.endswith("\\"):
                if pending.strip() and not pending.lstrip().startswith("#"):
                    expected = _EXPECTED.search(pending)
                    block.append(
                        Command(
                            source=f"{name}:{start}",
                            text=pending.strip(),
                            expected_exit=int(expected.group(1)) if expected else 0,
                        )
                    )
                pending = ""
            index += 1
        if index >= len(lines):
            raise ValueError(f"{name}: a runnable block is not closed")
        blocks.append(block)
        index += 1
    return blocks


def documents() -> dict[str, str]:
    """The README and every page of the docs, by path from the repository's root."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in paths}


def venv_is_current() -> bool:
    """Whether scripts/bootstrap.sh installed the venv from these pyproject and constraints.

    Otherwise `scripts/example.sh` in a sandbox would reinstall the project into the shared
    venv from the sandbox, which holds no package.
    """
    files = (ROOT / "pyproject.toml").read_bytes() + (ROOT / "constraints.txt").read_bytes()
    stamp = hashlib.sha256(files).hexdigest()[:16]
    return (ROOT / ".venv" / f".installed-{stamp}").is_file()


def make_sandbox(folder: Path) -> Path:
    """A folder laid out as a fresh clone (examples, scripts, the venv linked) to run in."""
    if not venv_is_current():
        raise RuntimeError("the venv is older than pyproject.toml: source scripts/bootstrap.sh")
    for name in SANDBOX_COPIES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name)
        else:
            shutil.copy2(source, folder / name)
    (folder / ".venv").symlink_to(ROOT / ".venv")
    return folder


def sandbox_environment(folder: Path) -> dict[str, str]:
    """This environment without the project's settings, the venv's commands first."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(_FOREIGN)}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(folder / "home")  # nothing the blocks write lands in the real home
    env["DEEPEVAL_POOL_SIZE"] = "2"  # the tests share 2 cores with other work
    return env


def script(commands: list[Command]) -> str:
    """A bash script that runs the commands and stops at the first unexpected exit code."""
    lines = []
    for command in commands:
        said = shlex.quote(f"{command.source}: `{command.text}`")
        lines += [
            command.text,
            f"code=$?; if [ $code -ne {command.expected_exit} ]; then",
            f'  echo {said}" exited $code, expected {command.expected_exit}" >&2; exit 90',
            "fi",
        ]
    return "\n".join(lines) + "\n"


def run_blocks(blocks: list[list[Command]], folder: Path, timeout_s: float = 900) -> None:
    """Run the blocks in order in ``folder``; an unexpected exit code raises, saying where."""
    commands = [command for block in blocks for command in block]
    done = subprocess.run(
        ["bash", "-c", script(commands)],
        cwd=folder,
        env=sandbox_environment(folder),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
            f"\n--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}"
        )
