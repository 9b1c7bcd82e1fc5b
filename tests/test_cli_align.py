"""`calibration --align` on the example, through the commands a user types.

The judge is ``FactCheckingJudge``, a loopback test double: its G-Eval verdicts are drawn
from a hash of each request (random with respect to the answers) until its criteria say
that an answer leaving out a fact of the expected output fails; then it fails exactly
those answers. Its diagnosis and rewrite (DeepEval's optimiser asks it for both) add that
sentence when the verdicts disagree with people. So the search has something to find, and
the held-out rows show whether what it found carries over:

- labelled by the guide's author (the two sheets of the example), the rewrite agrees with
  people on rows it never saw: kappa rises there, and the aligned metric is written;
- labelled so that the rewrite fits the training rows and contradicts the held-out ones,
  kappa falls there, and nothing is written.
"""

import csv
import json
import shutil
from collections import Counter

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.statistics.held_out_draw import held_out_ids
from n8n_deepeval_pipeline.testing.fact_checking_judge import (
    INSTRUCTION,
    FactCheckingJudge,
    states_every_fact,
)
from tests.conftest import EXAMPLE, loopback_judge_environment

CRITERIA = "Does the answer resolve the customer's question accurately and concisely?"
GEPA = {"iterations": 3, "minibatchSize": 6, "paretoSize": 4}


def invoke(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


@pytest.fixture
def judge(tmp_path, monkeypatch):
    judge = FactCheckingJudge(latency_s=0.0).start()
    for name, value in loopback_judge_environment(tmp_path / "home", judge.base_url).items():
        monkeypatch.setenv(name, value)
    yield judge
    judge.stop()


def with_align(path, **align):
    """The example as written, with a calibration section (JSON, which YAML reads) after it."""
    text = (EXAMPLE / "benchmark.yaml").read_text()
    section = json.dumps({"gepa": GEPA, **align})
    path.write_text(f"{text}calibration:\n  align: {section}\n")


def run_and_label(path, *sheets):
    ran = invoke("run", path)
    assert ran.exit_code == 0, ran.output
    for sheet in sheets:
        imported = invoke("labels", "import", path, sheet)
        assert imported.exit_code == 0, imported.output


def aligned(path, *options, metric="helpfulness"):
    result = invoke("calibration", path, "--align", metric, "--json", *options)
    return result, json.loads(result.stdout) if result.stdout.startswith("{") else None


def label_by_the_rule(path, sheet, metric, contrary=False):
    """Label every run of ``metric`` as people who fail answers missing a fact would, or
    (``contrary``) the opposite on the rows the split holds out."""
    exported = invoke("labels", "export", path, "--out", sheet, "--blind", "--metric", metric)
    assert exported.exit_code == 0, exported.output
    rows = list(csv.DictReader(sheet.open()))
    held = held_out_ids({row["row_id"] for row in rows}, 0.3, seed=0) if contrary else set()
    for row in rows:
        fact = states_every_fact(row["output"], row["expected_output"])
        row.update(label="pass" if fact != (row["row_id"] in held) else "fail", reviewer="ann")
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert invoke("labels", "import", path, sheet).exit_code == 0


def test_the_rule_the_double_follows_is_the_strict_reading_of_the_example():
    for sheet, differ in (("labels-author-strict.csv", 0), ("labels-author.csv", 1)):
        rows = [r for r in csv.DictReader((EXAMPLE / sheet).open()) if r["metric"] == "helpfulness"]
        people = [r["label"] in ("pass", "4", "5") for r in rows]
        rule = [states_every_fact(r["output"], r["expected_output"]) for r in rows]
        assert sum(a != b for a, b in zip(people, rule, strict=True)) == differ


@pytest.mark.slow
def test_aligned_criteria_that_agree_on_held_out_rows_are_written(judge, example_copy):
    with_align(example_copy)
    folder = example_copy.parent
    run_and_label(example_copy, folder / "labels-author.csv", folder / "labels-author-strict.csv")
    before = example_copy.read_text()

    result, found = aligned(example_copy)
    assert result.exit_code == 0, result.output
    assert found["outcome"]["best_text"] == f"{CRITERIA}\n{INSTRUCTION}"
    assert found["held_out_rows"] == ["calc-discount", "ord-status-1", "returns-policy"]
    assert not set(found["held_out_rows"]) & set(found["training_rows"])
    before_kappa, after_kappa = found["before"]["kappa"]["kappa"], found["after"]["kappa"]["kappa"]
    # Only ord-status-1's third run leaves out a fact there: the strict reading fails it, the
    # other does not, and the aligned judge fails it too (18 labels: ff 1, fp 0, pf 1, pp 16).
    assert found["after"]["confusion"] == {"fail_fail": 1, "fail_pass": 0, "pass_fail": 1,
                                           "pass_pass": 16}  # fmt: skip
    assert after_kappa == pytest.approx(0.6400, abs=1e-4) and before_kappa < 0.1
    assert found["decision"] == "improved"
    assert (
        found["judge_calls"]
        == (found["outcome"]["spend"]["judge_calls"] + found["held_out_spend"]["judge_calls"])
        > 0
    )
    assert found["written"].startswith("helpfulness_aligned written into")
    text = example_copy.read_text()
    assert text.startswith(before[: before.index("  - metric: bias")])  # the rest as it was
    assert "    label: helpfulness_aligned\n    name: helpfulness\n    criteria: |-\n" in text
    print(
        f"held-out kappa {before_kappa:.2f} → {after_kappa:.2f}; judge calls "
        f"{found['judge_calls']} (search {found['outcome']['spend']['judge_calls']}, held out "
        f"{found['held_out_spend']['judge_calls']})"
    )

    # Asked again: every verdict and every optimiser call is replayed, and nothing is added.
    judge.bodies.clear()
    again, repeated = aligned(example_copy)
    assert again.exit_code == 0, again.output
    assert judge.bodies == [] and repeated["judge_calls"] == 0
    assert repeated["outcome"]["best_text"] == found["outcome"]["best_text"]
    assert repeated["written"].endswith("has it already, as helpfulness_aligned: nothing written")
    assert example_copy.read_text() == text

    # The aligned metric is scored by the next run beside the old one, and decides nothing.
    summary = json.loads(invoke("run", example_copy, "--json").stdout)
    metrics = {metric["metric"]: metric for metric in summary["metrics"]}
    assert metrics["helpfulness_aligned"]["decides"] is False
    assert metrics["helpfulness"]["decides"] is True


@pytest.mark.slow
def test_a_search_cut_short_and_resumed_asks_the_judge_what_a_whole_one_asks(
    judge, tmp_path, monkeypatch
):
    """Each request once: the cut search's verdicts are replayed, its model calls cached.

    A request body can be sent twice by design: two repeats of a row with the same answer
    ask the same question, and each run index is judged afresh. So the whole search's
    requests are counted, in a home of their own, and compared with the cut and resumed
    searches' together.
    """
    asked, found = {}, {}
    for name, caps in (("whole", [None]), ("cut", [6, None])):
        monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / name / "home"))
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / name / "home" / "dagster"))
        copy = tmp_path / name / "support_agent"
        shutil.copytree(EXAMPLE, copy)
        path = copy / "benchmark.yaml"
        with_align(path)
        run_and_label(path, copy / "labels-author.csv", copy / "labels-author-strict.csv")
        judge.bodies.clear()
        for cap in caps:
            with_align(path, **({"budget": {"judgeCalls": cap}} if cap else {}))
            found.setdefault(name, []).append(aligned(path)[1])
        asked[name] = Counter(json.dumps(body, sort_keys=True) for body in judge.bodies)
    (whole,), (cut, resumed) = found["whole"], found["cut"]
    assert (cut["outcome"]["stop"], cut["outcome"]["best_text"]) == ("budget", CRITERIA)
    assert cut["outcome"]["stop_detail"].startswith("judge calls: ")
    assert resumed["outcome"]["spend"]["replayed_scores"] > 0
    assert resumed["outcome"]["best_text"] == whole["outcome"]["best_text"]
    assert resumed["after"] == whole["after"]
    assert asked["cut"] == asked["whole"]
    paid = cut["judge_calls"] + resumed["judge_calls"]
    assert paid == whole["judge_calls"] == sum(asked["whole"].values())


@pytest.mark.slow
def test_a_rewrite_that_fits_the_training_rows_only_is_reported_not_written(
    judge, example_copy, tmp_path
):
    with_align(example_copy)
    ran = invoke("run", example_copy)
    assert ran.exit_code == 0, ran.output
    # People who fail answers missing a fact on the training rows, and the very opposite on
    # the held-out rows: what the search learns from the first does not hold on the second.
    label_by_the_rule(example_copy, tmp_path / "labels.csv", "helpfulness", contrary=True)
    before = example_copy.read_text()

    result, found = aligned(example_copy)
    assert result.exit_code == 1, result.output
    assert found["outcome"]["best_text"] == f"{CRITERIA}\n{INSTRUCTION}"  # it fit the training
    assert found["outcome"]["best_score"] == 1.0
    assert found["after"]["raw_agreement"] == 0.0  # and contradicts every held-out label
    assert found["after"]["kappa"]["kappa"] < found["before"]["kappa"]["kappa"]
    assert (found["decision"], found["written"]) == ("not_improved", None)
    assert example_copy.read_text() == before
    text = invoke("calibration", example_copy, "--align", "helpfulness")
    assert text.exit_code == 1
    assert "held-out kappa did not improve: nothing written" in text.output


DAG = """  - metric: dag
    name: facts
    dag:
      nodes:
        check: {type: binaryJudgement, evaluationParams: [ACTUAL_OUTPUT, EXPECTED_OUTPUT],
                criteria: "Does the actual output give the facts of the expected output?",
                children: [right, wrong]}
        right: {type: verdict, verdict: true, score: 10}
        wrong: {type: verdict, verdict: false, score: 0}
"""


@pytest.mark.slow
def test_a_dags_judgement_criteria_are_aligned_and_its_graph_kept(judge, example_copy, tmp_path):
    with_align(example_copy)
    text = example_copy.read_text().replace("  - metric: bias\n", "  - metric: bias\n" + DAG)
    example_copy.write_text(text)
    ran = invoke("run", example_copy)
    assert ran.exit_code == 0, ran.output
    label_by_the_rule(example_copy, tmp_path / "labels.csv", "facts")

    result, found = aligned(example_copy, metric="facts")
    assert result.exit_code == 0, result.output
    assert found["text_kind"] == "dag_nodes"
    question = "Does the actual output give the facts of the expected output?"
    assert found["outcome"]["best_text"] == f"[check] criteria\n{question}\n{INSTRUCTION}"
    assert found["after"]["kappa"]["kappa"] == 1.0 > found["before"]["kappa"]["kappa"]
    assert found["written"].startswith("facts_aligned written into")
    written = example_copy.read_text()
    assert written.startswith(text[: text.index("aggregate:")])  # facts, and all before it
    nodes = yaml.safe_load(written)["metrics"][-1]["dag"]["nodes"]
    assert nodes["check"]["criteria"] == f"{question}\n{INSTRUCTION}"
    assert nodes["right"] == {"type": "verdict", "verdict": True, "score": 10}


@pytest.mark.parametrize(
    ("metric", "said"),
    [
        ("bias", "--align bias: Bias asks its judge with DeepEval's own prompts, not with text "
         "of the benchmark file: only G-Eval and DAG metrics have criteria to rewrite (--adopt "
         "fits its threshold instead)"),
        ("exact_answer", "--align exact_answer: Exact Match calls no judge: there is no judge "
         "to align"),
        ("helpfulnes", "--align helpfulnes: not one of the benchmark's metrics"),
        ("helpfulness", "--align helpfulness: its judge is the dry-run judge, whose placeholder "
         "verdicts agree with nobody"),
    ],
)  # fmt: skip
def test_a_metric_that_cannot_be_aligned_is_refused_in_one_line(
    example_copy, tmp_path, monkeypatch, metric, said
):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    monkeypatch.setenv("N8N_DEEPEVAL_JUDGE_PROVIDER", "dry-run")
    result = invoke("calibration", example_copy, "--align", metric)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith(f"Error: {said}")


def test_an_optimiser_process_that_fails_exits_4_not_1(example_copy, tmp_path, monkeypatch):
    # 1 says the labels showed no gain; a search that crashed must be told apart in CI.
    from types import SimpleNamespace

    from n8n_deepeval_pipeline.orchestration import judge_alignment, prompt_optimization
    from n8n_deepeval_pipeline.worker.launcher import ChildFailed

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    closed = []
    pool = SimpleNamespace(pool=SimpleNamespace(close=lambda: closed.append(True)))
    monkeypatch.setattr(prompt_optimization, "cli_resources", lambda: SimpleNamespace(pool=pool))
    plan = SimpleNamespace(split=SimpleNamespace(examples=[]))
    monkeypatch.setattr(judge_alignment, "plan_alignment", lambda runner, metric, res: plan)
    monkeypatch.setattr(judge_alignment, "alignment_folder", lambda plan: tmp_path / "search")

    def crashed(*args, **kwargs):
        raise ChildFailed("the optimiser's process", "died", -9, ["boom"], tmp_path / "log")

    monkeypatch.setattr(judge_alignment, "run_alignment", crashed)
    result = invoke("calibration", example_copy, "--align", "helpfulness")
    assert result.exit_code == 4, result.output
    assert "the optimiser's process died (exit code -9, SIGKILL)" in result.output
    assert "| boom" in result.output and closed == [True]
    assert "helpfulness_aligned" not in example_copy.read_text()
