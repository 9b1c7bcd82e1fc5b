"""A Webhook-triggered agent with side effects, benchmarked on a real n8n without acting.

Real n8n nodes: Webhook → AI Agent (OpenAI Chat Model, an HTTP Request Tool "Order Lookup")
→ an HTTP Request "Notify" → Format. The agent reads its prompt as a Webhook trigger's
payload, `$json.body.chatInput`. Both HTTP nodes call a loopback service that counts its
requests; the language model is a loopback fake (FakeOpenAI) that calls the tool the
question names. Mocked, the service sees nothing and the agent answers from the mocks;
unmocked, it sees one request per node and run, and `validate` names both nodes. Mocked
as `judge`, the tool answers what a loopback judge wrote for the row, one judge call per
row whatever the runs, none on a second run (the judge's cache).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.judging.mock_writer import MockResponse
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.n8n_api.harness_run import HARNESS_PREFIX, KEPT_PREFIX
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, answer_for, prompt_text
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer
from tests.live.workflow_parts import link, node, webhook_agent

pytestmark = [pytest.mark.live, pytest.mark.slow]
LC = "@n8n/n8n-nodes-langchain."
MOCKS = {
    "nodes": {"Order Lookup": {"column": "lookup"}, "Notify": {"response": {"status": "queued"}}}
}


class CountingService:
    """A loopback HTTP service that answers JSON and counts every request by path."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.requests[self.path.split("/")[1]] += 1
                data = json.dumps({"status": "real service", "path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, format: str, *args: Any) -> None:
                """Stay quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def orders_agent(credential: str, service: str, steps: bool) -> dict[str, Any]:
    """The user's workflow; `steps`: the agent's Return Intermediate Steps."""
    lookup_url = "=" + service + "/orders/{{ $fromAI('orderId', 'the order id', 'string') }}"
    notify = {"method": "POST", "url": service + "/notify", "sendBody": True,
              "specifyBody": "json", "jsonBody": "={{ JSON.stringify({text: $json.output}) }}",
              "options": {}}  # fmt: skip
    text = "={{ 'Agent said: ' + $('AI Agent').item.json.output + ' · ' + $json.status }}"
    format_ = {"assignments": {"assignments": [
        {"id": "t", "name": "text", "value": text, "type": "string"}]}, "options": {}}  # fmt: skip
    workflow = webhook_agent("live orders agent", credential, returnIntermediateSteps=steps)
    workflow["nodes"] += [
        node("Order Lookup", "n8n-nodes-base.httpRequestTool", 4.2,
             {"url": lookup_url, "toolDescription": "Looks up an order by id", "options": {}}),
        node("Notify", "n8n-nodes-base.httpRequest", 4.2, notify),
        node("Format", "n8n-nodes-base.set", 3.4, format_),
    ]  # fmt: skip
    workflow["connections"].update(
        {
            "Order Lookup": link("AI Agent", "ai_tool"),
            "AI Agent": link("Notify"),
            "Notify": link("Format"),
        }
    )
    return workflow


@pytest.fixture(scope="module")
def orders(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    """Both versions of the agent in n8n (unpublished: only harness copies are called)."""
    service = CountingService()
    with FakeOpenAI() as llm:
        credential = n8n.openai_credential("Fake OpenAI", llm.base_url)
        ids = {
            steps: n8n.create_workflow(orders_agent(credential, service.url, steps), False)
            for steps in (True, False)
        }
        yield {"ids": ids, "llm": llm, "service": service}
    service.close()


def write_benchmark(
    tmp_path: Path,
    workflow_id: str,
    name: str = "live_orders",
    judge: dict[str, Any] | None = None,
    **target: Any,
) -> Path:
    (tmp_path / "cases.csv").write_text(
        "id,question,expected,tools,lookup\n"
        "o17,Please use order lookup for order 17,"
        'Agent said: The answer is Order 17 shipped on Monday. · queued,"[""Order_Lookup""]",'
        "Order 17 shipped on Monday\n"
        "o42,Please use order lookup for order 42,"
        'Agent said: The answer is Order 42 is delayed. · queued,"[""Order_Lookup""]",'
        "Order 42 is delayed\n",
        encoding="utf-8",
    )
    document = {
        "name": name,
        "workflow": {"id": workflow_id},
        "dataset": {"path": "cases.csv", "columnMapping": {
            "input": "question", "expectedOutput": "expected", "expectedTools": "tools"}},
        "runsPerRow": 2,
        "target": {"type": "n8n_workflow", "startNodeName": "AI Agent",
                   "endNodeName": "Format", **target},
        "metrics": [{"metric": "exact_match"}, {"metric": "tool_correctness"}],
        "compare": {"failOn": "likely_regression"},  # reachable with 2 runs per case
        **({"judge": judge} if judge else {}),
    }  # fmt: skip
    path = tmp_path / f"{name}.benchmark.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    return path


def outputs(database: Path, name: str = "live_orders") -> dict[str, tuple[Any, ...]]:
    """Run id (without the hash) → output, steps, error; and each run's tool score."""
    with duckdb.connect(str(database), read_only=True) as connection:
        rows = connection.execute(
            f"select o.run_id, o.actual_output, o.intermediate_steps, o.error, s.score "
            f"from {name}.agent_outputs o join {name}.metric_scores s using (run_id) "
            f"where s.metric = 'tool_correctness'"
        ).fetchall()
    return {run_id.split(":", 1)[1]: tuple(rest) for run_id, *rest in rows}


def test_mocked_nodes_never_reach_the_service_and_the_agent_answers_from_the_mocks(
    orders: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    service, llm = orders["service"], orders["llm"]
    service.requests.clear()
    path = write_benchmark(tmp_path, orders["ids"][True], mocks=MOCKS)
    validated = CliRunner().invoke(main, ["validate", str(path)])
    assert (validated.exit_code, validated.stderr) == (0, "")  # nothing acts on a service
    asked = len(llm.chat_requests())
    result = CliRunner().invoke(main, ["run", str(path)])
    print(result.stdout, "service requests with mocks:", dict(service.requests))
    assert result.exit_code == 0, result.output
    assert sum(service.requests.values()) == 0
    assert "runs 4 · pass rate 100.0% (allPass)" in result.stdout
    # The Webhook trigger's stand-in gave the agent $json.body.chatInput.
    questions = [r["messages"][-1]["content"] for r in llm.chat_requests()[asked:]
                 if r["messages"][-1]["role"] == "user"]  # fmt: skip
    assert sorted(set(questions)) == [
        "Please use order lookup for order 17", "Please use order lookup for order 42"]  # fmt: skip
    by_run = outputs(cli_home)
    answer, steps, error, tool_score = by_run["o17:0"]
    assert (answer, error, tool_score) == (
        "Agent said: The answer is Order 17 shipped on Monday. · queued", None, 1.0)  # fmt: skip
    (step,) = json.loads(steps)
    assert step["mocked"] is True
    assert step["action"]["tool"] == "Order_Lookup"
    assert step["action"]["toolInput"] == {"orderId": "17"}
    assert "Order 17 shipped on Monday" in step["observation"]
    assert {score for *_, score in by_run.values()} == {1.0}


def test_unmocked_every_run_calls_the_service_and_validate_named_both_nodes(
    orders: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    service = orders["service"]
    service.requests.clear()
    path = write_benchmark(tmp_path, orders["ids"][True])
    validated = CliRunner().invoke(main, ["validate", str(path)])
    print(validated.stderr)  # the closing note quotes this listing
    assert validated.exit_code == 0
    assert validated.stderr == (
        f'{path}: warning: acts on a real service: "Notify" (n8n-nodes-base.httpRequest) '
        "makes HTTP requests, on every run (mock it in target.mocks)\n"
        f'{path}: warning: acts on a real service: "Order Lookup" '
        "(n8n-nodes-base.httpRequestTool) makes HTTP requests, as a tool of AI Agent, "
        "on every run (mock it in target.mocks)\n"
    )
    result = CliRunner().invoke(main, ["run", str(path)])
    print(result.stdout, "service requests without mocks:", dict(service.requests))
    assert 'acts on a real service: "Notify"' in result.stderr  # run says so too
    assert service.requests == Counter({"orders": 4, "notify": 4})  # one per node and run
    answer, *_ = outputs(cli_home)["o17:0"]
    assert answer.endswith("· real service")


def test_with_intermediate_steps_off_the_mocked_tool_calls_are_read_from_the_execution(
    orders: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    service = orders["service"]
    service.requests.clear()
    path = write_benchmark(tmp_path, orders["ids"][False], mocks="services")
    result = CliRunner().invoke(main, ["run", str(path)])
    print(result.stdout)
    assert result.exit_code == 0, result.output
    assert sum(service.requests.values()) == 0  # services: both HTTP nodes mocked
    by_run = outputs(cli_home)
    answer, steps, *_ = by_run["o42:1"]
    assert answer == 'Agent said: The answer is {"mocked":true}. · undefined'
    assert json.loads(steps) == [
        {"action": {"tool": "Order_Lookup", "toolInput": {"orderId": "42"}},
         "observation": '[{"response":"{\\"mocked\\":true}"}]', "mocked": True}
    ]  # fmt: skip
    assert {score for *_, score in by_run.values()} == {1.0}


def mock_requests(judge: LoopbackJudge) -> list[dict[str, Any]]:
    """The requests the judge got to write a mock (not to score a metric)."""
    return [body for body in judge.bodies
            if "You stand in for one node" in prompt_text(body.get("messages", []))]  # fmt: skip


def test_a_judge_mocked_tool_answers_what_the_judge_wrote_and_never_reaches_the_service(
    orders: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    service = orders["service"]
    service.requests.clear()
    judge = LoopbackJudge(latency_s=0.0).start()
    mocks = {"nodes": {"Order Lookup": "judge", "Notify": {"response": {"status": "queued"}}}}
    settings = {"provider": "openai-compatible", "model": "loopback", "baseUrl": judge.base_url}
    try:
        path = write_benchmark(tmp_path, orders["ids"][True], name="live_judge_mocks",
                               judge=settings, mocks=mocks)  # fmt: skip
        validated = CliRunner().invoke(main, ["validate", str(path)])
        assert (validated.exit_code, validated.stderr) == (0, "")  # a judge mock does not act
        result = CliRunner().invoke(main, ["run", str(path)])
        print(result.stdout, "service requests with judge mocks:", dict(service.requests))
        assert result.exit_code == 0, result.output
        written = mock_requests(judge)
        again = CliRunner().invoke(main, ["run", str(path)])
        assert again.exit_code == 0, again.output
        asked_again = len(mock_requests(judge)) - len(written)
    finally:
        judge.stop()
    assert sum(service.requests.values()) == 0
    # One judge call per row (2 rows, 2 runs each), none on the second run: the cache.
    assert (len(written), asked_again) == (2, 0)
    prompt = prompt_text(written[0]["messages"])
    assert "n8n-nodes-base.httpRequestTool" in prompt and "Looks up an order by id" in prompt
    by_run = outputs(cli_home, "live_judge_mocks")
    for case in ("o17", "o42"):
        (request,) = [body for body in written
                      if f"order {case[1:]}" in prompt_text(body["messages"])]  # fmt: skip
        items = MockResponse.model_validate_json(answer_for(request)).as_items()
        for run in (0, 1):  # both runs of the case got the one answer written for it
            answer, steps, error, tool_score = by_run[f"{case}:{run}"]
            (step,) = json.loads(steps)
            assert (error, tool_score, step["mocked"]) == (None, 1.0, True)
            assert step["action"]["tool"] == "Order_Lookup"
            assert step["action"]["toolInput"] == {"orderId": case[1:]}
            # n8n records a Code Tool's text as its item's response: the judge's items.
            (observed,) = json.loads(step["observation"])
            assert json.loads(observed["response"]) == items
            assert answer.startswith("Agent said: The answer is [{") and answer.endswith("queued")


def test_a_judge_that_writes_no_usable_mock_is_each_rows_named_error_and_nothing_is_called(
    orders: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    service, llm = orders["service"], orders["llm"]
    service.requests.clear()
    judge = LoopbackJudge(latency_s=0.0, faults=["invalid_json"] * 4)  # 2 rows, asked twice
    judge.start()
    settings = {"provider": "openai-compatible", "model": "garbling", "baseUrl": judge.base_url}
    mocks = {"nodes": {"Order Lookup": "judge"}}
    asked = len(llm.chat_requests())
    try:
        path = write_benchmark(tmp_path, orders["ids"][True], name="live_judge_garbled",
                               judge=settings, mocks=mocks)  # fmt: skip
        # --verbose: Dagster's log says whether a harness copy was called
        result = CliRunner().invoke(main, ["run", str(path), "--verbose"])
    finally:
        judge.stop()
    print(result.stdout, result.stderr[-1500:])
    assert result.exit_code == 3  # every target call failed: not a passing run
    assert sum(service.requests.values()) == 0 and len(llm.chat_requests()) == asked
    assert "calling n8n:webhook" not in result.stderr  # no harness copy for no row
    errors = [error for _, _, error, _ in outputs(cli_home, "live_judge_garbled").values()]
    assert len(errors) == 4
    assert all(
        error.startswith(
            'target_error: mock "Order Lookup": the judge wrote no response: the judge '
            "answered twice with JSON that does not fit MockResponse"
        )
        for error in errors
    ), errors


def test_two_overlapping_runs_of_one_benchmark_both_finish_with_every_run_answered(
    n8n: N8nServer, orders: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = orders["llm"]
    path = write_benchmark(tmp_path, orders["ids"][True], name="live_overlap", mocks=MOCKS,
                           maxConcurrency=1)  # fmt: skip
    cli = Path(sys.executable).parent / "n8n-deepeval"
    processes = []
    # 4 runs × 2 model calls, one at a time: the first run calls for ~32 s, long enough for
    # the second to start up and call its copy on a loaded machine
    llm.delay_s = 4.0
    try:
        for index in range(2):  # each process inherits its own home
            use_cli(monkeypatch, n8n, tmp_path / f"home{index}")
            processes.append(subprocess.Popen(
                [str(cli), "run", str(path), "--verbose"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True))  # fmt: skip
            if index == 0:  # the second starts while the first is calling its copy
                wait_for_copy(n8n, "live_overlap")
        finished = [process.communicate(timeout=300) for process in processes]
    finally:
        llm.delay_s = 0.0
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, (stdout, stderr) in zip(processes, finished, strict=True):
        print(stdout, stderr[-2000:])
        assert process.returncode == 0, stderr[-2000:]
        assert "runs 4 · pass rate 100.0% (allPass)" in stdout
        assert "removed a harness copy" not in stderr
    # They did overlap: the second called its copy before the first had all its answers.
    first, second = (stderr for _, stderr in finished)
    assert logged_at(second, "calling n8n:webhook") < logged_at(first, "called 4/4")
    for index in range(2):
        by_run = outputs(tmp_path / f"home{index}" / "results.duckdb", "live_overlap")
        assert [error for _, _, error, _ in by_run.values()] == [None] * 4
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        left = [w["name"] for w in client.workflows() if HARNESS_PREFIX in str(w["name"])]
    assert [name for name in left if "live_overlap" in name] == []


def logged_at(log: str, text: str) -> str:
    """The time stamp of the first log line holding ``text`` (sortable as text)."""
    return next(line[:19] for line in log.splitlines() if text in line)


def wait_for_copy(n8n: N8nServer, benchmark: str, timeout_s: float = 120.0) -> None:
    """Wait until a harness copy of the benchmark exists in n8n."""
    deadline = time.monotonic() + timeout_s
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        while time.monotonic() < deadline:
            names = [str(w["name"]) for w in client.workflows()]
            if any(name.startswith(f"{HARNESS_PREFIX} {benchmark} ") for name in names):
                return
            time.sleep(0.5)
    raise TimeoutError(f"no harness copy of {benchmark} after {timeout_s:.0f} s")


def test_a_kept_harness_copy_keeps_its_runs_executions_and_by_default_none_are_left(
    n8n: N8nServer, orders: dict[str, Any], cli_home: Path, tmp_path: Path
) -> None:
    """A harness run's executions vanished with its copy: nothing was left to inspect."""

    def execution_ids(workflow_id: str | None = None) -> set[str]:
        query = {"limit": 250, **({"workflowId": workflow_id} if workflow_id else {})}
        return {str(e["id"]) for e in n8n.api("GET", "/executions", query).json()["data"]}

    before = execution_ids()
    path = write_benchmark(tmp_path, orders["ids"][True], name="live_copy_default", mocks=MOCKS)
    assert CliRunner().invoke(main, ["run", str(path)]).exit_code == 0
    # by default the copy is deleted, and n8n deletes its executions with it
    assert execution_ids() == before
    path = write_benchmark(tmp_path, orders["ids"][True], name="live_copy_kept", mocks=MOCKS,
                           keepHarnessCopy=True)  # fmt: skip
    result = CliRunner().invoke(main, ["run", str(path), "--verbose"])
    assert result.exit_code == 0, result.output
    with N8nClient(n8n.base_url, n8n.api_key) as client:
        kept = [w for w in client.workflows() if "live_copy_kept" in str(w["name"])]
        try:
            (copy,) = kept
            assert str(copy["name"]).startswith(f"{KEPT_PREFIX} live_copy_kept ")
            assert copy["active"] is False  # unpublished: its webhook answers no one
            assert f"harness copy {copy['id']} is kept in n8n" in result.stderr
            # the four runs (2 rows × 2) are there to inspect, each as it ran
            executions = n8n.api("GET", "/executions", {"workflowId": copy["id"],
                                                        "limit": 250}).json()["data"]  # fmt: skip
            assert len(executions) == 4
            assert {e["status"] for e in executions} == {"success"}
            # a later run of the benchmark leaves it where it is
            assert CliRunner().invoke(main, ["run", str(path)]).exit_code == 0
            names = [str(w["name"]) for w in client.workflows()]
            assert copy["name"] in names
        finally:
            for workflow in client.workflows():
                if "live_copy_kept" in str(workflow["name"]):
                    client.remove_workflow(str(workflow["id"]))
