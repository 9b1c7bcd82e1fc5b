"""Optimiser parity: the candidates the pipeline's search proposes are DeepEval's own.

One search, run twice against one deterministic loopback judge (it answers from a hash of
the whole request, so any difference in a prompt or a schema's form shows up as another
answer, hence another score or another rewrite) and one deterministic loopback agent
whose answer depends on its system message and the input:
  (a) by DeepEval's own ``PromptOptimizer.optimize()`` (GEPA), with DeepEval's own OpenAI
      model class as the optimiser model and the metrics' model, and a model callback that
      posts the prompt and the input to the agent (``tests/optimization/deepeval_reference``);
  (b) by the pipeline: the optimiser's process, each candidate set as the agent's system
      message on a harness copy of the workflow made in a test double of n8n's API and
      called over its webhook, the metrics scored in the worker pool by the pipeline's
      judge (cache, pacing), the optimiser model the pipeline's judge too.
The texts tried, in the order first tried, the best text and DeepEval's final Pareto table
must be the same, and the judge must have received the same requests. Run again, the
search replays its journal: no workflow call, no judge call, the same outcome."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.client import N8nClient
from n8n_deepeval_pipeline.optimization.pool_scoring import ScoringServices
from n8n_deepeval_pipeline.optimization.request import OptimizationOutcome, Round
from n8n_deepeval_pipeline.optimization.workflow_search import (
    SearchPlan,
    SearchServices,
    search,
    split_rows,
)
from n8n_deepeval_pipeline.orchestration.resources.score_journal import FileScoreJournal
from n8n_deepeval_pipeline.tables.steps import dataset_rows
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.worker.pool import WorkerPool
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash
from n8n_deepeval_pipeline.workflow.prompt_parameter import prompt_parameter
from tests.optimization.fake_harness_n8n import FakeHarnessN8n, system_message
from tests.reference_run import run_reference

pytestmark = pytest.mark.slow

SEED = 4  # a seed whose search accepts a rewrite: DeepEval's whole loop is exercised
MODEL = "gpt-4.1"  # an OpenAI model DeepEval knows: strict schemas, log-probabilities
SYSTEM = "You are the support agent of Acme Outdoor. Answer briefly."
QUESTIONS = [
    ("q1", "Where is my order A1?", "It ships tomorrow."),
    ("q2", "Can I return boots after 40 days?", "Returns are accepted within 30 days."),
    ("q3", "Do you sell tents?", "Yes, three models of tents."),
    ("q4", "What is 6*7?", "42"),
    ("q5", "How do I reset my password?", "Use the link on the sign-in page."),
    ("q6", "Is the store open on Sunday?", "Yes, from 10 to 4."),
    ("q7", "Do you ship to Canada?", "Yes, in 5 to 8 days."),
]
GEPA_OPTIONS = {"iterations": 4, "minibatchSize": 3, "paretoSize": 2, "patience": 3}
METRICS = [
    {"metric": "answer_relevancy"},
    {"metric": "g_eval", "name": "Helpfulness", "criteria": "Does the answer help the customer?",
     "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"]},
]  # fmt: skip


def node(name: str, kind: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": kind, "typeVersion": 1, "position": [0, 0],
            "parameters": parameters or {}}  # fmt: skip


def link(target: str, kind: str = "main") -> dict[str, Any]:
    return {kind: [[{"node": target, "type": kind, "index": 0}]]}


WORKFLOW = {
    "name": "Acme support",
    "nodes": [
        {**node("When chat message received", "@n8n/n8n-nodes-langchain.chatTrigger"),
         "webhookId": "chat-1"},
        node("AI Agent", "@n8n/n8n-nodes-langchain.agent", {"options": {"systemMessage": SYSTEM}}),
        node("OpenAI Chat Model", "@n8n/n8n-nodes-langchain.lmChatOpenAi"),
        node("Format", "n8n-nodes-base.set"),
    ],
    "connections": {
        "When chat message received": link("AI Agent"),
        "OpenAI Chat Model": link("AI Agent", "ai_languageModel"),
        "AI Agent": link("Format"),
    },
}  # fmt: skip


def write_benchmark(folder: Path) -> Path:
    (folder / "workflow.json").write_text(json.dumps(WORKFLOW), encoding="utf-8")
    lines = ["id,input,expectedOutput"] + [
        f'{key},"{text}","{want}"' for key, text, want in QUESTIONS
    ]
    (folder / "cases.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    document = {
        "name": "acme_support",
        "workflow": "workflow.json",
        "dataset": {"path": "cases.csv"},
        "target": {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format"},
        "metrics": METRICS,
        "optimize": {"gepa": GEPA_OPTIONS, "split": {"heldOut": 0.3, "seed": SEED},
                     "concurrency": 3},
    }  # fmt: skip
    path = folder / "benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def judge_spec(judge: LoopbackJudge, state: Path) -> JudgeSpec:
    return JudgeSpec(provider="openai", model=MODEL, base_url=judge.base_url,
                     api_key="sk-parity", state_dir=str(state))  # fmt: skip


def plan_of(path: Path, judge: JudgeSpec) -> SearchPlan:
    benchmark = load_benchmark(path)
    rows = dataset_rows(benchmark.dataset, workflow_hash(WORKFLOW), None)
    assert benchmark.optimize is not None
    split = split_rows(rows, benchmark.optimize.split.held_out, benchmark.optimize.split.seed)
    return SearchPlan(benchmark, WORKFLOW, prompt_parameter(WORKFLOW), split, judge)


def pipeline(plan: SearchPlan, fake: FakeHarnessN8n, pool: WorkerPool, folder: Path,
             rounds: list[Round]) -> OptimizationOutcome:  # fmt: skip
    scoring = ScoringServices(
        judge=lambda choice: plan.model,
        prices=PriceTable(),
        pool=pool,
        score_journal=FileScoreJournal,
        evaluation_timeout_s=120,
    )
    services = SearchServices(lambda: N8nClient(fake.base_url, "n8n-key"), fake.base_url, scoring)
    return search(plan, services, folder, rounds.append)


def reference(tmp: Path, plan: SearchPlan, judge: LoopbackJudge, fake: FakeHarnessN8n) -> Any:
    options = {"iterations": 4, "minibatch_size": 3, "pareto_size": 2, "patience": 3}
    spec = {
        "base_url": judge.base_url,
        "model": MODEL,
        "agent": f"{fake.base_url}/answer",
        "metrics": [(config["metric"], config) for config in METRICS],
        "goldens": [
            {"name": row.row_id, "input": row.input, "expected_output": row.expected_output}
            for row in plan.split.training
        ],
        "text": SYSTEM,
        "options": options,
        "seed": SEED,
        "concurrency": 3,
    }
    return run_reference("tests.optimization.deepeval_reference", tmp, spec, timeout_s=900)


def canonical(bodies: list[dict[str, Any]]) -> set[str]:
    # A set: the pipeline's cache answers a prompt asked twice only once.
    return {json.dumps(body, sort_keys=True) for body in bodies}


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("optimize-parity")
    judge = LoopbackJudge(latency_s=0.0, distinct_text=True).start()
    pool = WorkerPool(size=2, timeout_s=120)
    try:
        with FakeHarnessN8n() as fake:
            plan = plan_of(write_benchmark(tmp), judge_spec(judge, tmp / "judge"))
            theirs = reference(tmp, plan, judge, fake)
            reference_bodies = list(judge.bodies)
            judge.bodies.clear()
            rounds: list[Round] = []
            ours = pipeline(plan, fake, pool, tmp / "search", rounds)
            bodies = list(judge.bodies)
            calls, created = sum(fake.calls.values()), len(fake.created)
            copies = list(fake.created)
            judge.bodies.clear()
            again = pipeline(plan, fake, pool, tmp / "search", [])
            replayed = {"bodies": list(judge.bodies), "calls": sum(fake.calls.values()) - calls,
                        "created": len(fake.created) - created}  # fmt: skip
            left = dict(fake.workflows)
            # A search cut short (here by a budget, as a kill would cut it) and started again
            # replays what it had and pays for the rest only.
            config = plan.benchmark.optimize
            capped = config.model_copy(update={"budget": config.budget.model_copy(
                update={"workflow_calls": 10})})  # fmt: skip
            cut_plan = replace(plan, benchmark=plan.benchmark.model_copy(
                update={"optimize": capped}))  # fmt: skip
            cut = pipeline(cut_plan, fake, pool, tmp / "cut", [])
            resumed = pipeline(plan, fake, pool, tmp / "cut", [])
    finally:
        pool.close()
        judge.stop()
    return {"theirs": theirs, "ours": ours, "rounds": rounds, "bodies": bodies,
            "reference_bodies": reference_bodies, "calls": calls, "again": again,
            "replayed": replayed, "created": created, "left": left, "plan": plan,
            "copies": copies, "cut": cut, "resumed": resumed}  # fmt: skip


def test_the_candidates_are_deepevals_own(searched: dict[str, Any]) -> None:
    theirs, ours = searched["theirs"], searched["ours"]
    assert ours.stop == "finished"
    assert ours.tried == theirs["tried"]
    assert len(ours.tried) >= 3, "the search should have proposed a few candidates"
    assert ours.tried[0] == SYSTEM and all("revised_prompt" in text for text in ours.tried[1:])
    assert ours.best_text == theirs["best"] != SYSTEM  # a rewrite was accepted, and won
    # The workflow's prompt, dominated and dropped from DeepEval's table, keeps its scores.
    assert ours.base_score is not None and ours.best_score > ours.base_score
    pareto = {candidate.text: candidate.scores for candidate in ours.candidates if candidate.kept}
    assert pareto == theirs["pareto"]
    print(f"candidates tried: {len(ours.tried)}; best: {ours.best_text[:60]!r}")
    for number, found in enumerate(searched["rounds"], start=1):
        spent = found.spend
        print(f"round {found.number}/{found.total}: best {found.best_score} · "
              f"{spent.answer_calls} workflow calls · {spent.judge_calls} judge calls")  # fmt: skip
        assert found.number == number


def test_the_judge_received_the_same_requests(searched: dict[str, Any]) -> None:
    ours, theirs = canonical(searched["bodies"]), canonical(searched["reference_bodies"])
    assert ours == theirs
    formats = {json.loads(body)["response_format"]["json_schema"]["name"]
               for body in ours if "response_format" in json.loads(body)}  # fmt: skip
    assert {"ScorerDiagnosisSchema", "RewriterSchema"} <= formats
    print(f"identical request bodies: {len(ours)} distinct, {len(searched['bodies'])} sent")


def test_every_answer_came_from_a_harness_copy_of_the_candidate(searched: dict[str, Any]) -> None:
    ours, plan = searched["ours"], searched["plan"]
    # One copy per candidate, each the workflow with the candidate as its system message.
    assert [system_message(copy) for copy in searched["copies"]] == ours.tried
    assert all(copy["name"].startswith("[n8n-deepeval harness] acme_support optimize ")
               for copy in searched["copies"])  # fmt: skip
    assert searched["left"] == {}, "every harness copy is removed at the end"
    assert ours.spend.answer_calls == searched["calls"]
    held_out = {row.row_id for row in plan.split.held_out}
    assert held_out and not held_out & {row.row_id for row in plan.split.training}


def test_a_search_run_again_replays_its_journal_for_nothing(searched: dict[str, Any]) -> None:
    again, ours, replayed = searched["again"], searched["ours"], searched["replayed"]
    assert (again.tried, again.best_text) == (ours.tried, ours.best_text)
    assert replayed == {"bodies": [], "calls": 0, "created": 0}
    assert again.spend.answer_calls == again.spend.judge_calls == 0
    assert again.spend.replayed_answers == ours.spend.answer_calls


def test_a_search_cut_short_resumes_without_paying_again(searched: dict[str, Any]) -> None:
    cut, resumed, ours = searched["cut"], searched["resumed"], searched["ours"]
    assert (cut.stop, cut.stop_detail) == ("budget", "workflow calls: 10 of 10")
    assert cut.spend.answer_calls == 10
    assert resumed.spend.replayed_answers == 10  # the cut search's answers, not asked again
    assert resumed.spend.answer_calls == ours.spend.answer_calls - 10
    assert resumed.spend.replayed_scores > 0
    assert (resumed.tried, resumed.best_text) == (ours.tried, ours.best_text)
