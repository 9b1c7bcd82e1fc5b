"""Every configured secret is taken out of whatever leaves the process, by value.

A secret is put where a server echoes it back: the n8n API key into an n8n error body
(``validate``, ``run``, ``dataset synthesize`` print it), a webhook token sent as a header
into the target's answer (stored in ``results.duckdb``, the report's files, stdout). Each
output is then searched for it. A secret too short to take out by value is left alone
(never mangling the text around it) and ``validate`` says so.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.console.printed import printable
from n8n_deepeval_pipeline.redaction import configured_secrets, redact, treat_as_secrets
from tests.conftest import EXAMPLE
from tests.n8n_api.fake_n8n import FakeN8nApi, FakeN8nWebhooks
from tests.test_cli_private_files import cli

N8N_KEY = "n8n_api_8f2c41d7e9b3a065"
WEBHOOK_TOKEN = "whk-3b9e7a51c2d40f86"


def webhook_benchmark(folder: Path, url: str) -> Path:
    """The example's rows sent to ``url`` with the token in a header (a copy of the example)."""
    document = yaml.safe_load((EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8"))
    for name in ("workflow.json", "dataset.csv"):
        (folder / name).write_bytes((EXAMPLE / name).read_bytes())
    document["runsPerRow"] = 1
    document["target"] = {
        "type": "n8n_webhook",
        "url": url,
        "headers": {"Authorization": "Bearer {{ env.WEBHOOK_TOKEN }}"},
        "env": ["WEBHOOK_TOKEN"],
    }
    document["metrics"] = [{"metric": "exact_match"}, {"metric": "bias"}]
    document.pop("aggregate")
    path = folder / "benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def files_holding(root: Path, secret: str) -> list[str]:
    return [
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and secret.encode() in path.read_bytes()
    ]


@pytest.mark.slow
def test_a_webhook_token_echoed_in_the_answer_is_stored_and_printed_nowhere(tmp_path, monkeypatch):
    home, out = tmp_path / "home", tmp_path / "out"
    monkeypatch.setenv("WEBHOOK_TOKEN", WEBHOOK_TOKEN)  # the commands' environment
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "dry-run")
    with FakeN8nWebhooks() as fake:
        benchmark = webhook_benchmark(tmp_path, f"{fake.base_url}/webhook/echo-auth")
        ran = cli(home, "run", str(benchmark), "--json")
        reported = cli(home, "report", str(benchmark), "--out", str(out))
        sent = [request["headers"].get("Authorization") for request in fake.requests]
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert reported.returncode == 0, reported.stderr[-2000:]
    assert sent == [f"Bearer {WEBHOOK_TOKEN}"] * 9  # really sent, and echoed back
    for text in (ran.stdout, ran.stderr, reported.stdout, reported.stderr):
        assert WEBHOOK_TOKEN not in text
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as db:
        query = "select actual_output from support_agent.agent_outputs"
        outputs = [output for (output,) in db.execute(query).fetchall()]
        tables = db.execute(
            "select table_schema, table_name from information_schema.tables"
        ).fetchall()
        stored = {
            table: json.dumps(db.execute(f'select * from "{schema}"."{table}"').fetchall(),
                              default=str)
            for schema, table in tables
        }  # fmt: skip
    # the answer is kept, the token in it is not
    assert all(output.startswith("You sent Bearer [redacted]; ") for output in outputs), outputs
    assert [table for table, text in stored.items() if WEBHOOK_TOKEN in text] == []
    assert "[redacted]" in stored["agent_outputs"]  # in the steps too
    assert files_holding(home, WEBHOOK_TOKEN) == []
    assert files_holding(out, WEBHOOK_TOKEN) == []
    results = json.loads((out / "eval-results.json").read_text(encoding="utf-8"))
    assert "You sent Bearer [redacted]" in json.dumps(results)
    # the report asked for holds every answer: private, as in the home
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in out.iterdir()} == {
        "report.html": 0o600,
        "eval-results.json": 0o600,
        "eval-pr-comment.md": 0o600,
    }
    assert stat.S_IMODE(out.stat().st_mode) == 0o700


def _n8n_benchmark(folder: Path) -> Path:
    document = yaml.safe_load((EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8"))
    for name in ("dataset.csv", "outputs.jsonl"):
        (folder / name).write_bytes((EXAMPLE / name).read_bytes())
    document["workflow"] = {"id": "wf-1"}
    path = folder / "benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["validate", "{benchmark}"],
        ["run", "{benchmark}"],
        ["dataset", "synthesize", "wf-1", "--out", "{folder}/rows.jsonl"],
        ["init", "wf-1", "--out", "{folder}/new.yaml"],
    ],
)
def test_the_n8n_key_quoted_in_an_n8n_error_is_printed_redacted(tmp_path, monkeypatch, command):
    benchmark = _n8n_benchmark(tmp_path)
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "openai")
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_MODEL", "gpt-4.1")
    with FakeN8nApi() as n8n:
        n8n.refuse_key = True
        monkeypatch.setenv("N8N_API_URL", n8n.base_url)
        monkeypatch.setenv("N8N_API_KEY", N8N_KEY)
        args = [part.format(benchmark=benchmark, folder=tmp_path) for part in command]
        result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "HTTP 401" in result.output and "API key [redacted] is invalid" in result.output
    assert N8N_KEY not in result.output


def test_a_secret_too_short_to_redact_leaves_the_text_whole_and_validate_says_so(
    tmp_path, monkeypatch
):
    assert redact("expected x", ["x"]) == "expected x"
    assert redact(f"expected {WEBHOOK_TOKEN}", [WEBHOOK_TOKEN]) == "expected [redacted]"
    monkeypatch.setenv("WEBHOOK_TOKEN", "x")
    assert "x" not in configured_secrets()
    with FakeN8nWebhooks() as fake:
        benchmark = webhook_benchmark(tmp_path, f"{fake.base_url}/webhook/echo-auth")
    result = CliRunner().invoke(main, ["validate", str(benchmark)])
    assert result.exit_code == 0, result.output
    assert (
        f"{benchmark}: warning: WEBHOOK_TOKEN holds a secret of 1 character(s): too short to "
        "take out of what is printed and stored (8 at least), so it is left in; use a longer one"
    ) in result.stderr


def test_the_variables_a_benchmark_sends_are_secrets_whatever_their_name(monkeypatch):
    monkeypatch.setenv("SUPPORT_HOOK_AUTH", "hook-auth-51b2e7c0")
    monkeypatch.setenv("HOOK_PROXY", "http://me:proxy-pass-9d1e@proxy:3128")
    assert "hook-auth-51b2e7c0" not in configured_secrets()  # not a credential by its name
    assert "proxy-pass-9d1e" in configured_secrets()  # a URL's password
    treat_as_secrets(["SUPPORT_HOOK_AUTH"])  # as loading a benchmark whose env lists it does
    assert "hook-auth-51b2e7c0" in configured_secrets()


def test_what_is_printed_shows_control_characters_as_escapes_and_keeps_colours():
    row_id = "r1\x00\u202eevil\x1b]0;pwned\x07\x1b[2J"
    assert printable(f"failing: {row_id}\n") == (
        "failing: r1\\x00\\u202eevil\\x1b]0;pwned\\x07\\x1b[2J\n"
    )
    assert printable("\x1b[31mERROR\x1b[0m\tstep\n") == "\x1b[31mERROR\x1b[0m\tstep\n"
