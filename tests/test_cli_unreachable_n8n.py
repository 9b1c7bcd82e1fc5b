"""An n8n out of reach is the outside world failing: its own exit code, the host, one line."""

from __future__ import annotations

import socket

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.console.exits import EXIT_N8N_UNREACHABLE


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


@pytest.fixture
def unreachable(example_copy, monkeypatch, tmp_path):
    """The example with its workflow in an n8n that nothing answers for."""
    document = yaml.safe_load(example_copy.read_text())
    document["workflow"] = {"id": "wf-1"}
    example_copy.write_text(yaml.safe_dump(document))
    origin = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("N8N_API_URL", f"{origin}/some/path?token=secret-in-url")
    monkeypatch.setenv("N8N_API_KEY", "k-secret")
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    return example_copy, origin


def said(origin: str) -> str:
    return (
        f"Error: n8n at {origin} cannot be reached (ConnectError: [Errno 111] Connection "
        "refused): is it running, and does N8N_API_URL name it?\n"
    )


@pytest.mark.parametrize(
    "command",
    [["run"], ["backfill"], ["validate"]],
)
def test_commands_that_read_the_workflow_from_n8n_exit_8_naming_the_host(unreachable, command):
    path, origin = unreachable
    done = CliRunner().invoke(main, [*command, str(path)])
    assert done.exit_code == EXIT_N8N_UNREACHABLE == 8, done.output
    assert done.stderr == said(origin)  # one line: not "invalid benchmark"
    assert "secret" not in done.output


def test_dataset_from_executions_exits_8_naming_the_host(unreachable, tmp_path):
    _, origin = unreachable
    out = tmp_path / "traffic.jsonl"
    done = CliRunner().invoke(main, ["dataset", "from-executions", "wf-1", "--out", str(out)])
    assert (done.exit_code, done.stderr) == (8, said(origin))
    assert not out.exists()


def test_a_run_whose_step_lost_n8n_exits_8_with_that_line(example_copy, monkeypatch, tmp_path):
    from n8n_deepeval_pipeline.orchestration import local_runner
    from n8n_deepeval_pipeline.orchestration.local_runner import Materialised
    from tests.test_cli_exit_codes import FakeRunner

    line = (
        "n8n at http://127.0.0.1:5999 cannot be reached (ReadTimeout: timed out): is it "
        "running, and does N8N_API_URL name it?"
    )
    lost = Materialised(completed=False, failed_checks=(), errors=(f"N8nUnreachable: {line}",))

    def fake_runner(path, instance, judge_cache=True, selection=None, benchmark=None):
        return FakeRunner(benchmark, {"a" * 64: lost}, {})

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("n8n_deepeval_pipeline.console.benchmarks.runner", fake_runner)
    monkeypatch.setattr(local_runner, "local_instance", __import__("contextlib").nullcontext)
    done = CliRunner().invoke(main, ["run", str(example_copy)])
    assert done.exit_code == 8, done.output
    assert done.stderr.splitlines()[-1] == f"Error: {line}"


HARNESS = {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "AI Agent",
           "mocks": "services"}  # fmt: skip


@pytest.mark.parametrize(
    "section",
    [
        {},
        {"target": {**HARNESS, "variants": {"nano": {"AI Agent": {"options.maxIterations": 3}}}}},
        {"redTeam": {"vulnerabilities": [{"name": "ExcessiveAgency"}]}},
    ],
    ids=["plain", "variants", "red team"],
)
def test_a_harness_run_exits_8_in_one_line_before_any_run_starts(unreachable, section, tmp_path):
    """The workflow is a file; only the harness copy needs n8n: it is asked first.

    Before, the run started and a step failed: exit 4 with Dagster's error on several lines
    (the variants' processes and the red team each their own), after 12 to 45 s.
    """
    path, origin = unreachable
    document = yaml.safe_load(path.read_text())
    document["workflow"] = "workflow.json"
    document.update({"target": HARNESS, "metrics": [{"metric": "exact_match"}], **section})
    document.pop("aggregate")
    path.write_text(yaml.safe_dump(document))
    done = CliRunner().invoke(main, ["run", str(path)])
    assert (done.exit_code, done.stderr.splitlines()[-1]) == (8, said(origin).strip())
    assert "secret" not in done.output
    assert not (tmp_path / "home" / "dagster").exists()  # no instance opened, no run made


def test_a_step_that_lost_n8n_is_read_from_dagster_s_error_as_well():
    """A step's error names the class with its module when it caused the step to fail."""
    from n8n_deepeval_pipeline.console.exits import n8n_unreachable

    line = "n8n at http://127.0.0.1:5999 cannot be reached (ConnectError: refused): is it …"
    errors = (
        "dagster._core.errors.DagsterExecutionStepExecutionError: Error occurred while "
        'executing op "support_agent__agent_outputs":',
        f"n8n_deepeval_pipeline.n8n_api.client.N8nUnreachable: {line}",
    )
    assert n8n_unreachable(errors) == line
    assert n8n_unreachable((f"N8nUnreachable: {line}",)) == line
    assert n8n_unreachable(("ValueError: N8nUnreachable: no",)) is None
