"""The console script exits without the interpreter's teardown, and loses nothing by it."""

import subprocess
import sys

from tests.conftest import EXAMPLE

_WITH_EXIT_HANDLER = """
import atexit, sys
from n8n_deepeval_pipeline.cli import entry
atexit.register(lambda: open(sys.argv[1], "w").write("handled"))
entry(sys.argv[2:])
"""

_WITH_A_THREAD = """
import sys, threading, time
from n8n_deepeval_pipeline.cli import entry
def finish():
    time.sleep(0.5)
    open(sys.argv[1], "w").write("finished")
threading.Thread(target=finish).start()
entry(sys.argv[2:])
"""


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "n8n_deepeval_pipeline.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_whole_output_arrives_through_a_pipe_and_codes_are_kept():
    listed = _script("metrics", "--json")
    assert listed.returncode == 0
    assert listed.stdout.rstrip().endswith("}")  # the whole JSON, flushed before the exit
    assert '"slug": "tools_used"' in listed.stdout
    refused = _script("validate", str(EXAMPLE / "missing.yaml"))
    assert refused.returncode == 2
    assert "does not exist" in refused.stderr
    hashed = _script("hash", str(EXAMPLE / "workflow.json"))
    assert hashed.returncode == 0
    assert len(hashed.stdout.split()[0]) == 64


def test_exit_handlers_run_and_a_running_thread_finishes(tmp_path):
    for child, marker in ((_WITH_EXIT_HANDLER, "handled"), (_WITH_A_THREAD, "finished")):
        out = tmp_path / f"{marker}.txt"
        done = subprocess.run(
            [sys.executable, "-c", child, str(out), "metrics"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert out.read_text() == marker


def test_every_command_of_the_group_is_wired_to_a_command_of_its_name():
    import click

    from n8n_deepeval_pipeline.cli import main

    context = click.Context(main)
    names = main.list_commands(context)
    assert names[:4] == ["validate", "hash", "schema", "metrics"]
    assert {name: main.get_command(context, name).name for name in names} == {
        name: name for name in names
    }
    assert main.get_command(context, "nonsense") is None
