"""Variants of a real n8n agent benchmarked side by side: the same agent with three models.

Real n8n all the way (Chat Trigger → AI Agent with the OpenAI Chat Model, Calculator and
Simple Memory → Format); the language model is the loopback FakeOpenAI, which answers by
model (gpt-4.1-nano never calls a tool) and reports its own token usage, and the judge is
the loopback judge. The workflow (gpt-4o-mini) and its variants big (gpt-4o) and nano
(gpt-4.1-nano) are three versions, called side by side, scored in turn; nano is judged
head to head against the workflow with DeepEval's Arena G-Eval.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.statistics.version_comparison import wilson_interval
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, answer_for, prompt_text
from tests.live.conftest import use_cli
from tests.live.fake_llm import FakeOpenAI
from tests.live.n8n_server import N8nServer

pytestmark = [pytest.mark.live, pytest.mark.slow]
MODELS = {"base": "gpt-4o-mini", "big": "gpt-4o", "nano": "gpt-4.1-nano"}
MUL, HELLO = "What is 6*7?", "Hello"


@pytest.fixture(scope="module")
def agent(n8n: N8nServer) -> Iterator[dict[str, Any]]:
    # Each completion takes 0.3 s, so that the versions' runs last long enough to overlap.
    with FakeOpenAI(delay_s=0.3) as llm:
        workflow = n8n.chat_agent(n8n.openai_credential("Fake OpenAI", llm.base_url))
        workflow_id = n8n.create_workflow(workflow, activate=False)
        try:
            yield {"id": workflow_id, "llm": llm}
        finally:
            n8n.delete_workflow(workflow_id)


def write_benchmark(tmp_path: Path, workflow_id: str) -> Path:
    (tmp_path / "cases.csv").write_text(
        "id,question,expected,tools\n"
        f'mul,{MUL},Agent said: The answer is 42.,"[""Calculator""]"\n'
        f"hello,{HELLO},Agent said: Echo: Hello,[]\n",
        encoding="utf-8",
    )
    model = "OpenAI Chat Model"
    document = {
        "name": "live_variants",
        "workflow": {"id": workflow_id},
        "dataset": {"path": "cases.csv", "columnMapping": {
            "input": "question", "expectedOutput": "expected", "expectedTools": "tools"}},
        "runsPerRow": 2,
        "target": {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format",
                   "variants": {"big": {model: {"model": MODELS["big"]}},
                                "nano": {model: {"model": MODELS["nano"]}}}},
        "metrics": [
            {"metric": "exact_match"}, {"metric": "tool_correctness"},
            {"metric": "arena_g_eval", "name": "clearer", "against": "base",
             "criteria": "Which answer gives the user what they asked for?",
             "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"]},
        ],
    }  # fmt: skip
    path = tmp_path / "variants.benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


@pytest.fixture
def env(n8n: N8nServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackJudge]:
    judge = LoopbackJudge(latency_s=0.0).start()
    use_cli(monkeypatch, n8n, tmp_path / "home", workers=2, provider="openai", model="gpt-4.1",
            base_url=judge.base_url, api_key="sk-live-variants")  # fmt: skip
    yield judge
    judge.stop()


def invoke(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(main, list(args))
    print(f"$ n8n-deepeval {' '.join(args)}\n{result.output}")  # the closing note quotes these
    assert result.exit_code == code, result.output
    return result


def stored(home: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(home / "results.duckdb"), read_only=True) as connection:
        return connection.execute(sql).fetchall()


def _overlap(arrivals: list[tuple[float, str]]) -> float:
    """The share of the shortest version's call window that every version's windows share."""
    windows: dict[str, list[float]] = defaultdict(list)
    for at, model in arrivals:
        windows[model].append(at)
    starts = [min(times) for times in windows.values()]
    ends = [max(times) for times in windows.values()]
    shortest = min(end - start for start, end in zip(starts, ends, strict=True))
    return max(0.0, min(ends) - max(starts)) / shortest if shortest else 0.0


def _nano_won_mul(judge: LoopbackJudge) -> int:
    """How many of nano's head-to-head judgements of the mul row the judge gave nano.

    The loopback judge's answer is drawn from the request: read it again, and find whose
    answer the masked winner was (nano's is the only one that echoes the question).
    """
    wins = 0
    for body in judge.bodies:
        prompt = prompt_text(body["messages"])
        if "arena_test_cases" not in prompt or "What is 6*7?" not in prompt.split("Contestants")[1]:
            continue
        shown = dict(re.findall(r'^ {4}"(\w+)": "(.*)",?$', prompt, re.M))
        if not any("Echo: What is 6*7?" in text for text in shown.values()):
            continue  # big against the base would be here: neither echoes
        winner = json.loads(answer_for(body))["winner"]
        wins += "Echo: What is 6*7?" in shown[winner]
    return wins


def test_variants_run_side_by_side_with_their_own_tokens_cost_and_arena(
    agent: dict[str, Any], env: LoopbackJudge, tmp_path: Path
) -> None:
    path = write_benchmark(tmp_path, agent["id"])
    home = tmp_path / "home"
    llm = agent["llm"]
    seen = len(llm.usages)  # the model serves this module's other test too
    ran = invoke("run", str(path))
    usages, arrivals = llm.usages[seen:], llm.arrivals[seen:]

    # Three versions, each a partition with its own snapshot, the variants naming their base.
    snapshots = stored(home, "select workflow_hash, variant, base_hash, canonical_json "
                             "from live_variants.workflow_snapshot")  # fmt: skip
    by_name = {variant or "base": (digest, base) for digest, variant, base, _ in snapshots}
    assert sorted(by_name) == ["base", "big", "nano"]
    base_hash = by_name["base"][0]
    assert by_name["base"][1] is None and by_name["nano"][1] == by_name["big"][1] == base_hash
    nano_json = next(text for digest, _, _, text in snapshots if digest == by_name["nano"][0])
    assert '"value":"gpt-4.1-nano"' in nano_json

    # The workflow's own tokens, as the model reported them, per version; priced per model.
    usage = stored(home, "select workflow_hash, sum(llm_prompt_tokens), "
                         "sum(llm_completion_tokens), sum(llm_cost_usd), count(*) "
                         "from live_variants.agent_outputs group by 1")  # fmt: skip
    tokens = {digest: (prompt, completion, cost, runs) for digest, prompt, completion, cost, runs
              in usage}  # fmt: skip
    reported: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for model, prompt, completion in usages:
        reported[model][0] += prompt
        reported[model][1] += completion
    prices = PriceTable()
    for name, model in MODELS.items():
        prompt, completion, cost, runs = tokens[by_name[name][0]]
        assert runs == 4
        assert [prompt, completion] == reported[model], name
        assert cost == pytest.approx(prices.cost(model, prompt, completion))
    assert tokens[by_name["nano"][0]][0] < tokens[by_name["base"][0]][0]  # no tool round trip

    # The calls of the three versions overlapped: a drift of the model met them alike.
    overlap = _overlap(arrivals)
    print(f"calls overlapping across versions: {overlap:.0%} of the shortest window")
    assert overlap > 0.5

    # The matrix: nano drops the tool case; big costs more for the same pass rate.
    matrix = json.loads(invoke("compare", str(path), "--variants", "--json").stdout)
    rows = {row["name"]: row for row in matrix["versions"]}
    assert [row["pass_rate"]["passed"] for row in matrix["versions"]] == [4, 4, 2]
    assert matrix["frontier"] == ["base", "nano"]  # big: dearer than base, no better
    (mul,) = [case for case in rows["nano"]["cases"] if case["row_id"] == "mul"]
    assert (mul["candidate"]["passed"], mul["verdict"]) == (0, "likely_regression")
    clearer = {name: row["metrics"][2] for name, row in rows.items()}
    assert clearer["base"]["results"] == 0  # the opponent plays no game against itself
    # Identical answers (hello; every big run): the swapped positions split the wins evenly.
    assert (clearer["big"]["wins"], clearer["big"]["results"]) == (2, 4)
    nano_wins = 1 + _nano_won_mul(env)
    assert (clearer["nano"]["wins"], clearer["nano"]["results"]) == (nano_wins, 4)
    interval = wilson_interval(nano_wins, 4)
    assert clearer["nano"]["interval"] == {"lower": interval.lower, "upper": interval.upper}
    invoke("compare", str(path), "--variants")
    assert "frontier (no other costs less per run and passes more): base, nano" in ran.stdout

    written = invoke("report", str(path), "--out", str(tmp_path / "report")).stdout
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert '<section id="variants">' in html and "Cost per run against pass rate" in html
    print(f"report: {written.splitlines()[0]}")


def test_an_edit_after_variants_is_compared_with_the_workflow_not_a_variant(
    agent: dict[str, Any], env: LoopbackJudge, tmp_path: Path, n8n: N8nServer
) -> None:
    path = write_benchmark(tmp_path, agent["id"])
    invoke("run", str(path), "--variant", "base", "--variant", "nano")
    before = stored(tmp_path / "home", "select workflow_hash from live_variants.workflow_snapshot "
                                       "where variant is null")[0][0]  # fmt: skip
    workflow = n8n.api("GET", f"/workflows/{agent['id']}").json()
    for node in workflow["nodes"]:
        if node["name"] == "AI Agent":
            node["parameters"]["options"]["systemMessage"] = "Answer like a pirate."
    body = {key: workflow[key] for key in ("name", "nodes", "connections", "settings")}
    n8n.api("PUT", f"/workflows/{agent['id']}", json=body).raise_for_status()
    try:
        invoke("run", str(path), "--variant", "base")
        compared = json.loads(invoke("compare", str(path), "--json").stdout)
        # the version registered just before the edit is nano; the baseline is the workflow
        assert compared["baseline"] == before[:12]
    finally:
        for node in workflow["nodes"]:
            if node["name"] == "AI Agent":
                node["parameters"]["options"].pop("systemMessage")
        n8n.api("PUT", f"/workflows/{agent['id']}", json=body).raise_for_status()
