"""`dataset synthesize` and `init --synthesize`: DeepEval's Synthesizer in its own process,
against a deterministic loopback judge, the rows written with their provenance."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.console.scaffold import WorkflowSource, scaffold
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from tests.live.n8n_server import load_workflow
from tests.n8n_api.fake_n8n import FakeN8nApi
from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT
from tests.workflow.test_harness import CHAT_AGENT

PROVIDER = "N8N_DEEPEVAL_JUDGE_PROVIDER"


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[LoopbackJudge]:
    """A loopback judge as the environment's judge; its free text differs by prompt."""
    server = LoopbackJudge(latency_s=0.0, free_text=True).start()
    for name, value in {PROVIDER: "openai", "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4.1",
                        "N8N_DEEPEVAL_JUDGE_BASE_URL": server.base_url,
                        "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-synthesis-test",
                        "N8N_DEEPEVAL_HOME": str(tmp_path / "home")}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    yield server
    server.stop()


def workflow_file(tmp_path: Path, workflow: dict[str, Any] = WEBHOOK_AGENT) -> str:
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(workflow), encoding="utf-8")
    return str(path)


def synthesize(*args: str) -> Any:
    return CliRunner().invoke(main, ["dataset", "synthesize", *args])


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# ---- refusals: no process is started -------------------------------------------------------


def test_options_and_files_are_refused_before_the_judge_is_asked(
    judge: LoopbackJudge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = workflow_file(tmp_path)
    both = synthesize(source, "--out", "x.jsonl", "--data-table", "t")
    assert (
        both.exit_code == 2 and "give exactly one of --out FILE or --data-table NAME" in both.output
    )
    csv = synthesize(source, "--out", "rows.csv")
    assert csv.exit_code == 2 and "rows are written as JSON lines: a .jsonl file" in csv.output
    bad = tmp_path / "contexts.jsonl"
    bad.write_text('["fine"]\n"not a list"\n')
    refused = synthesize(source, "--out", str(tmp_path / "o.jsonl"), "--from-contexts", str(bad))
    assert refused.exit_code == 2
    assert f"{bad}: invalid contexts (--from-contexts)" in refused.output
    assert "line 2: must be a non-empty JSON list of passages" in refused.output
    docs = tmp_path / "guide.md"
    docs.write_text("Returns within 30 days.")
    no_embedder = synthesize(source, "--out", "o.jsonl", "--from-docs", str(docs))
    assert (
        no_embedder.exit_code == 2 and "--from-docs needs an embedding model" in no_embedder.output
    )
    two = synthesize(
        source, "--out", "o.jsonl", "--from-docs", str(docs), "--from-contexts", str(bad)
    )
    assert two.exit_code == 2 and "at most one of --from-contexts, --from-docs" in two.output
    evolution = synthesize(source, "--out", "o.jsonl", "--evolution", "creative")
    assert evolution.exit_code == 2 and "unknown evolution 'creative'" in evolution.output
    scratch = synthesize(source, "--out", "o.jsonl", "--evolution", "multi-context")
    assert scratch.exit_code == 2 and "no multi-context evolution there" in scratch.output
    expected = synthesize(source, "--out", "o.jsonl", "--with-expected-output")
    assert expected.exit_code == 2 and "from scratch DeepEval writes no expected" in expected.output
    missing = synthesize(str(tmp_path / "gone.json"), "--out", "o.jsonl")
    assert missing.exit_code == 2 and "gone.json: no such file" in missing.output
    monkeypatch.setenv(PROVIDER, "dry-run")
    dry = synthesize(source, "--out", "o.jsonl")
    assert dry.exit_code == 2 and "synthesis needs a real judge" in dry.output
    assert judge.requests == 0 and not (tmp_path / "o.jsonl").exists()


def test_a_conversational_benchmark_is_scaffolded_with_a_simulation_section(tmp_path: Path) -> None:
    source = WorkflowSource(load_workflow("chat_agent"), file=tmp_path / "workflow.json")
    made = scaffold(source, tmp_path / "b.yaml", False, "3 goldens synthesized", simulation=True)
    document = yaml.safe_load(made.text)
    assert document["simulation"] == {"maxUserTurns": 5}
    assert document["dataset"] == {"path": "live_chat_agent.dataset.jsonl", "idColumn": "rowId"}
    assert "messagesColumn" not in document["target"]  # the simulated user writes the messages
    assert [m["metric"] for m in document["metrics"]] == [
        "turn_relevancy",
        "knowledge_retention",
        "conversation_completeness",
        "tool_permission",
    ]
    assert (
        "# conversational goldens: scenario, expectedOutcome, userDescription, context" in made.text
    )


# ---- the Synthesizer's process ---------------------------------------------------------------


@pytest.mark.slow
def test_from_scratch_rows_say_where_they_came_from_and_a_second_run_adds_only_new_ones(
    judge: LoopbackJudge, tmp_path: Path
) -> None:
    out = tmp_path / "synthetic.jsonl"
    first = synthesize(workflow_file(tmp_path), "--out", str(out), "--count", "3", "--seed", "7")
    assert first.exit_code == 0, first.output
    print(first.output)  # the report quotes it
    rows = lines(out)
    said, cost = first.stdout.splitlines()
    assert said.endswith(f"{len(rows)} new in {out}, 0 already there")
    assert cost.startswith("judge openai:gpt-4.1 · calls ") and cost.endswith(
        " · cost $" + cost.split("$")[1]
    )
    assert "synthesizing 3 goldens from scratch for workflow file workflow.json" in first.stderr
    assert rows and len({row["input"] for row in rows}) == len(rows)
    for row in rows:
        assert row["rowId"].startswith("syn-") and row["synthetic"] is True
        assert (row["source"], row["expectedOutput"], row["quality"]) == ("scratch", None, None)
        assert len(row["evolutions"]) == 1 and row["synthesizedBy"] == "openai:gpt-4.1"
    # The styling read off the workflow reached DeepEval's prompt.
    prompts = [json.dumps(body["messages"]) for body in judge.bodies]
    assert any("the `question` field of the JSON body" in prompt for prompt in prompts)
    again = synthesize(workflow_file(tmp_path), "--out", str(out), "--count", "3", "--seed", "7")
    assert again.exit_code == 0, again.output
    assert f"0 new in {out}, {len(rows)} already there" in again.stdout  # the cache answered
    assert "calls 0 (+" in again.stdout
    assert lines(out) == rows


@pytest.mark.slow
def test_from_contexts_each_row_names_its_line_and_carries_its_passages_and_score(
    judge: LoopbackJudge, tmp_path: Path
) -> None:
    contexts = tmp_path / "contexts.jsonl"
    contexts.write_text('["Refunds take 5 days."]\n["Shipping is free over 50 EUR."]\n')
    out = tmp_path / "rows.jsonl"
    result = synthesize(workflow_file(tmp_path), "--out", str(out), "--from-contexts",
                        str(contexts), "--count", "1", "--with-expected-output")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: --with-expected-output fills expectedOutput" in result.stderr
    rows = lines(out)
    by_source = {row["source"]: row for row in rows}
    assert set(by_source) <= {"contexts.jsonl line 1", "contexts.jsonl line 2"} and rows
    for row in rows:
        line = int(row["source"].rsplit(" ", 1)[1])
        assert row["context"] == json.loads(contexts.read_text().splitlines()[line - 1])
        assert 0 <= row["quality"] <= 1 and row["expectedOutput"].startswith("Loopback text")


@pytest.mark.slow
def test_conversational_goldens_go_to_a_data_table_once(
    judge: LoopbackJudge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeN8nApi() as n8n:
        n8n.workflows["wf"] = load_workflow("chat_agent")
        monkeypatch.setenv("N8N_API_URL", n8n.base_url)
        monkeypatch.setenv("N8N_API_KEY", "test-key")
        result = synthesize(
            "wf", "--data-table", "goldens", "--conversational", "--count", "2", "--seed", "3"
        )
        assert result.exit_code == 0, result.output
        assert "new in Data Table 'goldens', 0 already there" in result.stdout
        (table,) = n8n.tables.values()
        row = table["rows"][0]
        assert (
            row["userDescription"]
            == "someone who writes to the n8n workflow 'live chat agent' through its chat"
        )
        assert row["scenario"].startswith("Loopback text") and row["synthetic"] == "true"
        assert row["expectedOutcome"] is None and "input" not in row
        again = synthesize(
            "wf", "--data-table", "goldens", "--conversational", "--count", "2", "--seed", "3"
        )
        assert f"0 new in Data Table 'goldens', {len(table['rows'])} already there" in again.stdout


@pytest.mark.slow
def test_a_judge_outage_exits_3_with_what_it_cost_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = LoopbackJudge(latency_s=0.0, fail_always=True).start()
    try:
        for name, value in {PROVIDER: "openai", "N8N_DEEPEVAL_JUDGE_MODEL": "gpt-4.1",
                            "N8N_DEEPEVAL_JUDGE_BASE_URL": server.base_url,
                            "N8N_DEEPEVAL_JUDGE_API_KEY": "sk-outage-key",
                            "N8N_DEEPEVAL_JUDGE_MAX_ATTEMPTS": "2",
                            "N8N_DEEPEVAL_HOME": str(tmp_path / "home")}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        out = tmp_path / "rows.jsonl"
        result = synthesize(workflow_file(tmp_path), "--out", str(out))
    finally:
        server.stop()
    assert result.exit_code == 3, result.output
    assert "HTTP 500" in result.output and "sk-outage-key" not in result.output
    assert result.stdout.splitlines()[-1].startswith(
        "judge openai:gpt-4.1 · calls 0 (+0 cached, 1 retries)"
    )
    assert not out.exists()


@pytest.mark.slow
def test_init_synthesize_writes_a_benchmark_on_synthesized_rows_that_validates(
    judge: LoopbackJudge, tmp_path: Path
) -> None:
    out = tmp_path / "bench" / "support.benchmark.yaml"
    result = CliRunner().invoke(main, ["init", workflow_file(tmp_path), "--synthesize", "3",
                                       "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(out.read_text("utf-8"))
    assert "simulation" not in document and "messagesColumn" not in document["target"]
    assert document["dataset"]["columnMapping"] == {"input": "input"}
    rows = lines(out.parent / document["dataset"]["path"])
    assert f"ok {out}: {len(rows)} rows" in result.stdout  # validated
    assert all(row["synthetic"] and row["source"] == "scratch" for row in rows)
    assert "golden(s) synthesized: review them" in out.read_text("utf-8")
    # The workflow also reads a customer, which synthesized rows lack: sent empty, said so.
    assert """row.get('customer')""" in out.read_text("utf-8")
    assert "synthesized rows hold only the input" in out.read_text("utf-8")


@pytest.mark.slow
def test_from_dataset_varies_the_rows_drawn_from_executions(
    judge: LoopbackJudge, tmp_path: Path
) -> None:
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text(
        json.dumps({"rowId": "ex-1", "input": "Where is order A3301?",
                    "context": ["A3301 shipped on Monday."]}) + "\n"
        + json.dumps({"rowId": "ex-2", "input": "Can I return a tent?",
                      "context": ["Tents can be returned within 30 days."]}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    out = tmp_path / "variations.jsonl"
    result = synthesize(workflow_file(tmp_path), "--out", str(out), "--from-dataset",
                        str(traffic), "--count", "1", "--evolutions", "0")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = lines(out)
    assert rows and {row["source"] for row in rows} <= {"traffic.jsonl row ex-1",
                                                       "traffic.jsonl row ex-2"}  # fmt: skip
    seeds = {"traffic.jsonl row ex-1": ["A3301 shipped on Monday."],
             "traffic.jsonl row ex-2": ["Tents can be returned within 30 days."]}  # fmt: skip
    assert all(row["context"] == seeds[row["source"]] and row["evolutions"] == [] for row in rows)
    # DeepEval read the style off the rows themselves (its PromptStyling extraction).
    asked = " ".join(json.dumps(body["messages"]) for body in judge.bodies)
    assert "Where is order A3301?" in asked and "PromptStyling" in json.dumps(judge.bodies)


@pytest.mark.slow
def test_init_synthesize_for_a_chat_agent_writes_simulated_conversations_that_validate(
    judge: LoopbackJudge, tmp_path: Path
) -> None:
    out = tmp_path / "bench" / "chat.benchmark.yaml"
    result = CliRunner().invoke(main, ["init", workflow_file(tmp_path, CHAT_AGENT),
                                       "--synthesize", "3", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(out.read_text("utf-8"))
    assert document["simulation"] == {"maxUserTurns": 5}
    assert "messagesColumn" not in document["target"]
    metrics = {metric["metric"] for metric in document["metrics"]}
    assert {"turn_relevancy", "knowledge_retention"} <= metrics
    rows = lines(out.parent / document["dataset"]["path"])
    assert rows and all(row["scenario"] and row["synthetic"] for row in rows)
    assert f"ok {out}: {len(rows)} rows" in result.stdout  # the simulation section validates
