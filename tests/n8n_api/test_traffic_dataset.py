"""Datasets drawn from executions, against FakeN8nApi (a fake of n8n's public API)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.console.dataset_commands import SELF_CONSISTENCY_WARNING
from n8n_deepeval_pipeline.n8n_api.traffic_dataset import rows_from_executions, since_from
from tests.live.n8n_server import load_workflow
from tests.n8n_api.fake_n8n import FakeN8nApi

TRIGGER = "When chat message received"
STEPS = [{"action": {"tool": "Calculator", "toolInput": {"input": "6*7"}}, "observation": "42"}]
WEBHOOK_AGENT = {
    "name": "support",
    "nodes": [
        {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2,
         "parameters": {"path": "support", "httpMethod": "POST"}},
        {"name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 3.1,
         "parameters": {"promptType": "define", "text": "={{ $json.body.question }}",
                        "options": {"systemMessage": "=Customer {{ $json.body.customer }}"}}},
        {"name": "Reply", "type": "n8n-nodes-base.respondToWebhook", "typeVersion": 1.1,
         "parameters": {}},
    ],
    "connections": {
        "Webhook": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
        "AI Agent": {"main": [[{"node": "Reply", "type": "main", "index": 0}]]},
    },
}  # fmt: skip
START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def run(json_: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"data": {"main": [[{"json": json_}]]}}]


def execution(
    number: int, run_data: dict[str, Any], last: str, status: str = "success"
) -> dict[str, Any]:
    started = START + timedelta(minutes=number)
    return {
        "id": str(number),
        "workflowId": "wf",
        "status": status,
        "mode": "webhook",
        "startedAt": started.isoformat().replace("+00:00", ".000Z"),
        "data": {"resultData": {"runData": run_data, "lastNodeExecuted": last}},
    }


def webhook_execution(number: int, question: str, status: str = "success") -> dict[str, Any]:
    body = {"question": question, "customer": "C-7", "sessionId": f"s{number}"}
    agent = {"output": f"answer to {question}", "intermediateSteps": STEPS}
    run_data = {
        "Webhook": run({"headers": {"authorization": "Bearer t0k3n"}, "body": body}),
        "AI Agent": run(agent),
        "Reply": run(agent),
    }
    return execution(number, run_data, "Reply", status)


def chat_execution(number: int, session: str, message: str) -> dict[str, Any]:
    answer = f"Echo: {message}"
    run_data = {
        TRIGGER: run({"sessionId": session, "action": "sendMessage", "chatInput": message}),
        "AI Agent": run({"output": answer, "intermediateSteps": []}),
        "Format": run({"text": f"Agent said: {answer}"}),
    }
    return execution(number, run_data, "Format")


@pytest.fixture
def n8n(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeN8nApi]:
    with FakeN8nApi() as fake:
        fake.workflows["wf"] = WEBHOOK_AGENT
        monkeypatch.setenv("N8N_API_URL", fake.base_url)
        monkeypatch.setenv("N8N_API_KEY", "test-key")
        yield fake


def draw(*args: str) -> Any:
    result = CliRunner().invoke(main, ["dataset", "from-executions", "wf", *args])
    assert result.exit_code == 0, result.output
    return result


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_every_page_is_read_and_a_second_call_adds_only_new_executions(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    n8n.executions = [webhook_execution(n, f"question {n}") for n in range(1, 121)]
    out = tmp_path / "traffic.jsonl"

    first = draw("--limit", "500", "--out", str(out))
    assert n8n.pages_served == 3  # 50 + 50 + 20, up to n8n's last nextCursor
    assert "read 120 executions" in first.stderr
    assert "120 executions → 120 rows · 120 new" in first.stdout
    rows = lines(out)
    assert [row["input"] for row in rows[:2]] == ["question 1", "question 2"]  # oldest first
    assert rows[0]["customer"] == "C-7"  # read by the agent's system message
    assert set(rows[0]) == {"rowId", "input", "customer", "executionIds", "startedAt"}

    again = draw("--limit", "500", "--out", str(out))
    assert "0 new in" in again.stdout and len(lines(out)) == 120

    n8n.executions += [webhook_execution(121, "question 121"), webhook_execution(122, "q 1")]
    draw("--limit", "500", "--out", str(out))
    assert [row["input"] for row in lines(out)[120:]] == ["question 121", "q 1"]
    assert len({row["rowId"] for row in lines(out)}) == 122


def test_ids_are_hashes_of_the_input_so_a_repeated_question_is_one_row() -> None:
    executions = [webhook_execution(3, "same"), webhook_execution(2, "other"),
                  webhook_execution(1, "same")]  # fmt: skip
    draft = rows_from_executions(executions, WEBHOOK_AGENT)
    assert (draft.executions, len(draft.rows), draft.duplicates) == (3, 2, 1)
    again = rows_from_executions([webhook_execution(9, "same")], WEBHOOK_AGENT)
    by_input = {row["input"]: row for row in draft.rows}
    assert again.rows[0]["rowId"] == by_input["same"]["rowId"]
    # the row stands for both executions, in the order they were sent, from the first
    assert by_input["same"]["executionIds"] == ["1", "3"]
    assert by_input["same"]["startedAt"] == executions[2]["startedAt"]


def test_a_chat_session_of_three_messages_is_one_row_with_its_messages_in_order(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    n8n.workflows["wf"] = load_workflow("chat_agent")
    n8n.executions = [chat_execution(1, "s-a", "Hello"), chat_execution(2, "s-b", "Hi"),
                      chat_execution(3, "s-a", "What is 6*7?"),
                      chat_execution(4, "s-a", "Thanks")]  # fmt: skip
    out = tmp_path / "chats.jsonl"
    draw("--out", str(out))
    first, second = lines(out)
    assert first["messages"] == ["Hello", "What is 6*7?", "Thanks"]
    assert first["input"] == "Hello" and first["executionIds"] == ["1", "3", "4"]
    assert first["rowId"].startswith("chat-")
    assert second["messages"] == ["Hi"]
    assert "expectedOutput" not in first


def test_expected_outputs_only_on_request_and_with_a_warning(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    n8n.executions = [webhook_execution(1, "What is 6*7?")]
    out = tmp_path / "expected.jsonl"
    result = draw("--expected-from-output", "--out", str(out))
    assert SELF_CONSISTENCY_WARNING in result.stderr
    (row,) = lines(out)
    assert row["expectedOutput"] == "answer to What is 6*7?"  # the end node's answer
    assert row["expectedTools"] == ["Calculator"]


def test_the_last_answer_and_every_tool_of_a_session_are_its_expectations() -> None:
    executions = [chat_execution(1, "s", "Hello"), chat_execution(2, "s", "Bye")]
    executions[0]["data"]["resultData"]["runData"]["AI Agent"] = run(
        {"output": "x", "intermediateSteps": STEPS}
    )
    (row,) = rows_from_executions(executions, load_workflow("chat_agent"), True).rows
    assert (row["expectedOutput"], row["expectedTools"]) == (
        "Agent said: Echo: Bye",
        ["Calculator"],
    )


def test_redact_takes_out_e_mails_phones_and_credentials(n8n: FakeN8nApi, tmp_path: Path) -> None:
    question = "I am jane.doe@example.com, call +49 151 1234567, key sk-abcdefghijklmnop"
    n8n.executions = [webhook_execution(1, question)]
    out = tmp_path / "redacted.jsonl"
    draw("--redact", "--expected-from-output", "--out", str(out))
    text = out.read_text("utf-8")
    for secret in ("jane.doe@example.com", "1234567", "sk-abcdefghijklmnop"):
        assert secret not in text
    (row,) = lines(out)
    assert row["input"] == ("I am [redacted e-mail], call [redacted phone], key [redacted]")
    assert row["expectedOutput"] == f"answer to {row['input']}"


def test_status_and_since_filter_what_is_read(n8n: FakeN8nApi, tmp_path: Path) -> None:
    n8n.executions = [webhook_execution(1, "old"), webhook_execution(50, "failed", "error"),
                      webhook_execution(60, "recent")]  # fmt: skip
    out = tmp_path / "recent.jsonl"
    draw("--since", (START + timedelta(minutes=30)).isoformat(), "--out", str(out))
    assert [row["input"] for row in lines(out)] == ["recent"]
    every = tmp_path / "every.jsonl"
    draw("--status", "all", "--out", str(every))
    assert [row["input"] for row in lines(every)] == ["old", "failed", "recent"]


def test_since_takes_a_span_or_a_date() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert since_from("24h", now) == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert since_from("7d", now) == datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    assert since_from("2026-11-30", now) == datetime(2026, 11, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="neither a span"):
        since_from("yesterday", now)


def test_rows_go_to_a_data_table_once(n8n: FakeN8nApi) -> None:
    n8n.executions = [webhook_execution(1, "a"), webhook_execution(2, "b")]
    assert "2 new in Data Table 'traffic'" in draw("--data-table", "traffic").stdout
    assert "0 new in Data Table 'traffic'" in draw("--data-table", "traffic").stdout
    (table,) = n8n.tables.values()
    assert [row["input"] for row in table["rows"]] == ["a", "b"]
    assert table["rows"][0]["executionIds"] == '["1"]'  # lists as JSON text


def test_one_destination_and_an_n8n_are_required(
    n8n: FakeN8nApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    both = ["dataset", "from-executions", "wf", "--out", "x.jsonl", "--data-table", "t"]
    assert "exactly one of --out" in CliRunner().invoke(main, both).output
    monkeypatch.delenv("N8N_API_KEY")
    alone = ["dataset", "from-executions", "wf", "--out", str(tmp_path / "x.jsonl")]
    # only the variable that is not set is named
    assert CliRunner().invoke(main, alone).output == "Error: set N8N_API_KEY to read from n8n\n"


def test_no_row_writes_nothing_and_says_why(n8n: FakeN8nApi, tmp_path: Path) -> None:
    out = tmp_path / "traffic.jsonl"
    command = ["dataset", "from-executions", "wf", "--since", "24h"]
    nothing = CliRunner().invoke(main, [*command, "--out", str(out)])
    assert nothing.exit_code == 1
    assert "0 executions matched (status success since " in nothing.output
    assert "nothing written" in nothing.output and not out.exists()
    assert CliRunner().invoke(main, [*command, "--data-table", "traffic"]).exit_code == 1
    assert n8n.tables == {}  # no Data Table without columns
    n8n.executions = [webhook_execution(1, "x")]
    del n8n.executions[0]["data"]["resultData"]["runData"]["Webhook"]
    without_input = CliRunner().invoke(
        main, ["dataset", "from-executions", "wf", "--out", str(out)]
    )
    assert without_input.exit_code == 1 and not out.exists()
    assert "1 executions matched (status success), none with an input to replay" in (
        without_input.output
    )


def test_a_body_read_as_a_whole_is_kept_as_text_and_as_it_came_and_no_input_no_row() -> None:
    executions = [webhook_execution(1, "What is 6*7?"), webhook_execution(2, "x")]
    del executions[1]["data"]["resultData"]["runData"]["Webhook"]  # another version's trigger
    draft = rows_from_executions(executions, load_workflow("agent_echo"))
    (row,) = draft.rows
    body = {"question": "What is 6*7?", "customer": "C-7"}  # the user's sessionId left out
    assert row["body"] == body and json.loads(row["input"]) == body
    assert draft.without_input == 1


def test_a_whole_body_is_kept_without_its_session_so_one_request_is_one_row() -> None:
    executions = [webhook_execution(1, "What is 6*7?"), webhook_execution(2, "What is 6*7?")]
    draft = rows_from_executions(executions, load_workflow("agent_echo"))
    (row,) = draft.rows  # sessions s1 and s2, the same request
    assert draft.duplicates == 1
    assert "s1" not in json.dumps(row["body"]) and "s2" not in row["input"]


def test_redact_takes_out_a_credential_by_its_fields_name() -> None:
    execution = webhook_execution(1, "Hi")
    body = execution["data"]["resultData"]["runData"]["Webhook"][0]["data"]["main"][0][0]["json"]
    body["body"] |= {"apiKey": "abc123", "Authorization": "Basic dXNlcjpwYXNz", "pin": 1234}
    (row,) = rows_from_executions([execution], load_workflow("agent_echo"), redact=True).rows
    assert row["body"]["apiKey"] == row["body"]["Authorization"] == "[redacted]"
    assert row["body"]["pin"] == 1234  # not a credential's name
    for secret in ("abc123", "dXNlcjpwYXNz"):
        assert secret not in json.dumps(row)  # in the body and in the input's text


def test_editor_runs_only_on_request_and_n8n_evaluation_runs_never(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    n8n.executions = [webhook_execution(n, f"q{n}") for n in (1, 2, 3)]
    n8n.executions[0]["mode"], n8n.executions[1]["mode"] = "manual", "evaluation"
    out = tmp_path / "production.jsonl"
    draw("--out", str(out))
    assert [row["input"] for row in lines(out)] == ["q3"]
    draw("--include-manual", "--out", str(out))
    assert [row["input"] for row in lines(out)] == ["q3", "q1"]


def test_redact_into_a_file_of_unredacted_rows_rewrites_them_redacted(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    question = "I am jane.doe@example.com, my order is late"
    n8n.executions = [webhook_execution(1, question), webhook_execution(2, "plain")]
    out = tmp_path / "traffic.jsonl"
    draw("--expected-from-output", "--out", str(out))
    hand_written = {"rowId": "r-7", "input": "write to bob@example.org", "customer": "C-1"}
    with out.open("a", encoding="utf-8") as file:
        file.write(json.dumps(hand_written) + "\n")
    out.chmod(0o640)
    before = {row["input"]: row for row in lines(out)}

    n8n.executions.append(webhook_execution(3, question))
    result = draw("--redact", "--expected-from-output", "--out", str(out))
    text = out.read_text("utf-8")
    assert "jane.doe@example.com" not in text and "bob@example.org" not in text
    rows = {row["input"]: row for row in lines(out)}
    assert set(rows) == {
        "I am [redacted e-mail], my order is late",
        "plain",
        "write to [redacted e-mail]",
    }
    redacted = rows["I am [redacted e-mail], my order is late"]
    # the id a redacted draw gives the same input, so the new execution joined no copy
    assert redacted["rowId"] != before[question]["rowId"]
    assert redacted["executionIds"] == ["1"]
    assert redacted["expectedOutput"] == "answer to I am [redacted e-mail], my order is late"
    assert rows["plain"] == before["plain"]  # nothing to take out: the row as it was
    assert rows["write to [redacted e-mail]"]["rowId"] == "r-7"  # an id of its own stays
    assert "2 rows already there redacted" in result.stdout
    assert "0 new in" in result.stdout
    assert out.stat().st_mode & 0o777 == 0o640  # rewritten in place: the file keeps its mode


def test_redact_into_a_data_table_of_unredacted_rows_is_refused(n8n: FakeN8nApi) -> None:
    n8n.executions = [webhook_execution(1, "I am jane.doe@example.com")]
    draw("--data-table", "traffic")
    n8n.executions.append(webhook_execution(2, "plain"))
    refused = CliRunner().invoke(
        main, ["dataset", "from-executions", "wf", "--redact", "--data-table", "traffic"]
    )
    assert refused.exit_code == 1
    assert refused.output.endswith(
        "Error: Data Table 'traffic' holds 1 row(s) --redact would change (first: row "
        f"{n8n_row_id(n8n)!r}, column input): remove them or write to another table; "
        "nothing written\n"
    )
    (table,) = n8n.tables.values()
    assert len(table["rows"]) == 1


def n8n_row_id(n8n: FakeN8nApi) -> str:
    (table,) = n8n.tables.values()
    return str(table["rows"][0]["rowId"])


def test_a_dataset_file_the_user_names_is_made_as_their_umask_makes_files(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    n8n.executions = [webhook_execution(1, "a")]
    out = tmp_path / "made" / "here" / "traffic.jsonl"
    users = os.umask(0o022)
    try:
        draw("--out", str(out))
    finally:
        os.umask(users)
    modes = [stat.S_IMODE(path.stat().st_mode) for path in (out, out.parent, out.parent.parent)]
    assert modes == [0o644, 0o755, 0o755]  # not the private modes of the command's own files
    assert os.umask(users) == users  # the command put the test's umask back


def test_the_pipelines_own_calls_are_not_drawn_into_a_dataset(
    n8n: FakeN8nApi, tmp_path: Path
) -> None:
    """A benchmark's runs through the webhook are executions like a user's: drawn again,
    they would turn the benchmark's dataset into production traffic."""
    n8n.executions = [webhook_execution(n, f"question {n}") for n in (1, 2, 3)]
    webhook = n8n.executions[1]["data"]["resultData"]["runData"]["Webhook"][0]
    webhook["data"]["main"][0][0]["json"]["headers"]["x-n8n-deepeval-run"] = "h:r1:0"
    n8n.workflows["chat"] = load_workflow("chat_agent")
    chats = [chat_execution(n, f"s{n}", f"message {n}") for n in (4, 5)]
    trigger = chats[0]["data"]["resultData"]["runData"][TRIGGER][0]["data"]["main"][0][0]
    trigger["json"]["evalContext"] = {"runId": "h:scenario:0", "isEvalRun": True}
    n8n.executions += [{**chat, "workflowId": "chat"} for chat in chats]
    out = tmp_path / "traffic.jsonl"
    draw("--out", str(out))
    assert [row["input"] for row in lines(out)] == ["question 1", "question 3"]
    chat_out = tmp_path / "chats.jsonl"
    result = CliRunner().invoke(
        main, ["dataset", "from-executions", "chat", "--out", str(chat_out)]
    )
    assert result.exit_code == 0, result.output
    assert [row["messages"] for row in lines(chat_out)] == [["message 5"]]
