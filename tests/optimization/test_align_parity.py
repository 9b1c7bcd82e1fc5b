"""Alignment parity: the criteria --align proposes are DeepEval's own PromptOptimizer's.

One search of the example's helpfulness criteria against the strict reading of its
labels, run twice against one deterministic loopback judge (``FactCheckingJudge``: its
answers come from a hash of the whole request until its criteria say to fail answers
missing a fact, so any difference in a prompt shows up as another verdict, hence another
score or rewrite):
  (a) by DeepEval's own ``PromptOptimizer.optimize()`` (GEPA), with DeepEval's own OpenAI
      model class as the optimiser model and the G-Eval's model, a model callback that
      measures DeepEval's G-Eval with the candidate as its criteria on the labelled run,
      and an agreement metric (``tests/optimization/deepeval_reference``, the harness the
      ``optimize`` parity test uses);
  (b) by the pipeline: the optimiser's process, each verdict scored in the worker pool by
      the pipeline's judge (cache, pacing) from the stored run, the optimiser model the
      pipeline's judge too.
The texts tried, in the order first tried, the best text and DeepEval's final Pareto table
must be the same, and the judge must have received the same requests.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from n8n_deepeval_pipeline.benchmark.config import load_benchmark
from n8n_deepeval_pipeline.calibration.alignment_split import LabelledRun, split_labelled
from n8n_deepeval_pipeline.calibration.judge_text import judge_text
from n8n_deepeval_pipeline.judging.prices import PriceTable
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.optimization.judge_alignment import (
    AlignmentPlan,
    StoredVersion,
    search,
)
from n8n_deepeval_pipeline.optimization.pool_scoring import ScoringServices
from n8n_deepeval_pipeline.orchestration.resources.score_journal import FileScoreJournal
from n8n_deepeval_pipeline.tables.ids import case_id, run_id
from n8n_deepeval_pipeline.tables.rows import AgentOutput, ExpandedRun
from n8n_deepeval_pipeline.tables.steps import dataset_rows
from n8n_deepeval_pipeline.testing.fact_checking_judge import INSTRUCTION, FactCheckingJudge
from n8n_deepeval_pipeline.worker.pool import WorkerPool
from tests.conftest import EXAMPLE
from tests.reference_run import run_reference

pytestmark = pytest.mark.slow

MODEL = "gpt-4.1"  # an OpenAI model DeepEval knows: strict schemas, log-probabilities
SEED = 0
GEPA = {"iterations": 3, "minibatchSize": 6, "paretoSize": 4}
VERSION = "f7ee35b359b459b3432927c2fa722185e4bf0a1915fe90208c4b3d63317c3ca5"


def benchmark_with_align(folder: Path) -> Path:
    text = (EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8")
    section = json.dumps({"gepa": GEPA, "split": {"heldOut": 0.3, "seed": SEED}})
    for name in ("dataset.csv", "outputs.jsonl", "workflow.json"):
        (folder / name).write_bytes((EXAMPLE / name).read_bytes())
    path = folder / "benchmark.yaml"
    path.write_text(f"{text}calibration:\n  align: {section}\n", encoding="utf-8")
    return path


def stored_version(benchmark: Any) -> StoredVersion:
    """The example's first version as the results store keeps it: rows, runs, outputs."""
    rows = dataset_rows(benchmark.dataset, VERSION, None)
    runs, outputs = [], []
    for line in (EXAMPLE / "outputs.jsonl").read_text(encoding="utf-8").splitlines():
        recorded = json.loads(line)
        if recorded.get("workflow_hash", VERSION) != VERSION:
            continue
        case = case_id(VERSION, recorded["row_id"])
        run = run_id(case, recorded["run_index"])
        runs.append(ExpandedRun(workflow_hash=VERSION, run_id=run, case_id=case,
                                run_index=recorded["run_index"], row_id=recorded["row_id"],
                                run_name="support_agent"))  # fmt: skip
        outputs.append(AgentOutput(workflow_hash=VERSION, run_id=run,
                                   actual_output=recorded["output"]))  # fmt: skip
    return StoredVersion(runs=runs, rows=rows, outputs=outputs, tools=None, images=[])


def strict_labels() -> list[LabelledRun]:
    sheet = csv.DictReader((EXAMPLE / "labels-author-strict.csv").open(encoding="utf-8"))
    return sorted(
        (
            LabelledRun(run_id=row["run_id"], case_id=row["case_id"], workflow_hash=VERSION,
                        cluster=row["row_id"], verdicts=(row["label"] == "pass",))
            for row in sheet
            if row["metric"] == "helpfulness"
        ),
        key=lambda run: run.run_id,
    )  # fmt: skip


def plan_of(folder: Path, judge: JudgeSpec) -> AlignmentPlan:
    benchmark = load_benchmark(benchmark_with_align(folder))
    config = benchmark.metrics[benchmark.metric_labels.index("helpfulness")]
    split = split_labelled(strict_labels(), 0.3, SEED)
    assert split.problem() is None
    stored = {VERSION: stored_version(benchmark)}
    return AlignmentPlan(benchmark, config, judge_text(config), split, stored, judge)


def reference(tmp: Path, plan: AlignmentPlan, judge: FactCheckingJudge) -> Any:
    written = yaml.safe_load((EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8"))
    metric = next(m for m in written["metrics"] if m.get("name") == "helpfulness")
    version = plan.stored[VERSION]
    rows = {row.row_id: row for row in version.rows}
    outputs = {output.run_id: output for output in version.outputs}
    runs = {
        run.run_id: {
            "input": rows[run.row_id].input,
            "actual_output": outputs[run.run_id].actual_output,
            "expected_output": rows[run.row_id].expected_output,
        }
        for run in version.runs
    }
    request = plan.request()
    spec = {
        "base_url": judge.base_url,
        "model": MODEL,
        "alignment": {
            "metric": ["g_eval", metric],
            "runs": runs,
            "people": {run.run_id: run.people for run in plan.split.examples},
        },
        "goldens": [
            {"name": golden.id, "input": golden.input, "expected_output": golden.expected_output}
            for golden in request.goldens
        ],
        "text": request.text,
        "options": {"iterations": 3, "minibatch_size": 6, "pareto_size": 4},
        "seed": SEED,
        "concurrency": request.concurrency,
    }
    return run_reference("tests.optimization.deepeval_reference", tmp, spec, timeout_s=900)


def canonical(bodies: list[dict[str, Any]]) -> set[str]:
    # A set: the pipeline judges a text on a run once, DeepEval each time it asks.
    return {json.dumps(body, sort_keys=True) for body in bodies}


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("align-parity")
    judge = FactCheckingJudge(latency_s=0.0, distinct_text=True).start()
    pool = WorkerPool(size=2, timeout_s=120)
    try:
        spec = JudgeSpec(provider="openai", model=MODEL, base_url=judge.base_url,
                         api_key="sk-parity", state_dir=str(tmp / "judge"))  # fmt: skip
        plan = plan_of(tmp, spec)
        theirs = reference(tmp, plan, judge)
        reference_bodies = list(judge.bodies)
        judge.bodies.clear()
        services = ScoringServices(
            judge=spec,
            prices=PriceTable(),
            pool=pool,
            score_journal=FileScoreJournal,
            evaluation_timeout_s=120,
        )
        (tmp / "search").mkdir()
        ours = search(plan, services, tmp / "search")
        bodies = list(judge.bodies)
    finally:
        pool.close()
        judge.stop()
    return {"theirs": theirs, "ours": ours, "bodies": bodies, "reference_bodies": reference_bodies,
            "plan": plan}  # fmt: skip


def test_the_criteria_proposed_are_deepevals_own(searched: dict[str, Any]) -> None:
    theirs, ours, plan = searched["theirs"], searched["ours"], searched["plan"]
    assert ours.stop == "finished"
    assert ours.tried == theirs["tried"]
    assert ours.tried[0] == plan.text.text and len(ours.tried) >= 2
    assert ours.best_text == theirs["best"] == f"{plan.text.text}\n{INSTRUCTION}"
    pareto = {candidate.text: candidate.scores for candidate in ours.candidates if candidate.kept}
    assert pareto == theirs["pareto"]
    print(f"candidates tried: {len(ours.tried)}; pareto: {pareto}")


def test_the_judge_received_the_same_requests(searched: dict[str, Any]) -> None:
    ours, theirs = canonical(searched["bodies"]), canonical(searched["reference_bodies"])
    assert ours == theirs
    formats = {json.loads(body).get("response_format", {}).get("json_schema", {}).get("name")
               for body in ours}  # fmt: skip
    assert {"ScorerDiagnosisSchema", "RewriterSchema"} <= formats
    assert any(json.loads(body).get("logprobs") for body in ours)  # G-Eval's weighted score
    print(f"identical request bodies: {len(ours)} distinct, {len(searched['bodies'])} sent")
