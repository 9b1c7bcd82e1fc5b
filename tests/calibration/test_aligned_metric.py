"""The aligned metric written beside the old one: the file as it was around it, deciding nothing."""

import difflib

import pytest
import yaml

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.calibration.aligned_metric import (
    AlignedMetricError,
    adopt_aligned,
    aligned_label,
    already_there,
)
from n8n_deepeval_pipeline.calibration.judge_text import judge_text
from tests.calibration.test_judge_text import DAG

ALIGNED = (
    "Does the answer resolve the customer's question accurately and concisely?\n"
    "An answer that leaves out a fact of the expected output fails."
)


def added_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert all(line.startswith("+") for line in changed), "nothing of the file is removed"
    return [line[1:] for line in changed]


def test_the_aligned_g_eval_follows_the_old_one_which_stays_and_still_decides(example_copy):
    before = example_copy.read_text()
    benchmark = load_benchmark(example_copy)
    helpfulness = benchmark.metrics[benchmark.metric_labels.index("helpfulness")]
    label = adopt_aligned(example_copy, benchmark, helpfulness, ALIGNED)
    after = example_copy.read_text()
    assert label == "helpfulness_aligned"
    assert added_lines(before, after) == [
        "  - metric: g_eval",
        "    label: helpfulness_aligned",
        "    name: helpfulness",
        "    criteria: |-",
        "      Does the answer resolve the customer's question accurately and concisely?",
        "      An answer that leaves out a fact of the expected output fails.",
        "    evaluationParams: [INPUT, ACTUAL_OUTPUT, EXPECTED_OUTPUT]",
    ]
    assert after.index("helpfulness_aligned") < after.index("  - metric: bias")
    adopted = load_benchmark(example_copy)
    assert adopted.metric_labels[5:8] == ["helpfulness", "helpfulness_aligned", "bias"]
    aligned = adopted.metrics[6]
    assert (aligned.name, aligned.criteria, aligned.evaluation_params) == (
        "helpfulness", ALIGNED, helpfulness.evaluation_params)  # fmt: skip
    assert adopted.counted_labels == benchmark.counted_labels  # aggregate.metrics lists it not
    # The same text aligned again is there already; another one gets the next free label.
    assert already_there(adopted, helpfulness, ALIGNED) == "helpfulness_aligned"
    assert already_there(adopted, helpfulness, ALIGNED + " Be strict.") is None
    assert aligned_label(adopted, "helpfulness") == "helpfulness_aligned_2"


def test_with_every_metric_deciding_the_ones_deciding_now_are_pinned(example_copy):
    text = example_copy.read_text()
    start = text.index("aggregate:")
    text = text[:start] + text[text.index("consistency:") :]
    example_copy.write_text(text)
    benchmark = load_benchmark(example_copy)
    assert benchmark.aggregate.metrics is None
    adopt_aligned(example_copy, benchmark, benchmark.metrics[5], ALIGNED)
    adopted = load_benchmark(example_copy)
    assert adopted.aggregate.metrics == benchmark.counted_labels
    assert "helpfulness_aligned" not in adopted.counted_labels
    assert "aggregate:\n  metrics: [tool_correctness, tool_permission, " in example_copy.read_text()
    # allConnected (every metric) is replaced by the list, where it stands.
    example_copy.write_text(text.replace("consistency:", "aggregate: {metrics: allConnected}\n"
                                         "consistency:"))  # fmt: skip
    adopt_aligned(example_copy, load_benchmark(example_copy), benchmark.metrics[5], ALIGNED)
    assert 'aggregate: {metrics: ["tool_correctness", "tool_permission",' in (
        example_copy.read_text())  # fmt: skip


def test_steps_and_dag_nodes_keep_the_keys_the_user_wrote(tmp_path, example_copy):
    document = yaml.safe_load(example_copy.read_text())
    document["metrics"] = [
        {"metric": "g_eval", "name": "polite", "evaluation_steps": ["Greets.", "Never rude."],
         "evaluationParams": ["ACTUAL_OUTPUT"]},
        DAG,
    ]  # fmt: skip
    document["aggregate"] = {"metrics": ["polite"]}
    example_copy.write_text(yaml.safe_dump(document, sort_keys=False))
    benchmark = load_benchmark(example_copy)
    adopt_aligned(example_copy, benchmark, benchmark.metrics[0], "Greets.\nNever rude.\nThanks.")
    dag = benchmark.metrics[1]
    text = judge_text(dag).text.replace("Is it the expected total?", "Is it the total, exactly?")
    adopt_aligned(example_copy, load_benchmark(example_copy), dag, text)
    written = yaml.safe_load(example_copy.read_text())["metrics"]
    assert [metric.get("label") for metric in written] == [None, "polite_aligned", None,
                                                           "total_aligned"]  # fmt: skip
    assert written[1]["evaluation_steps"] == ["Greets.", "Never rude.", "Thanks."]
    assert "evaluationSteps" not in written[1]
    nodes = written[3]["dag"]["nodes"]
    assert nodes["correct"]["criteria"] == "Is it the total, exactly?"
    assert nodes["extract"] == DAG["dag"]["nodes"]["extract"]
    assert load_benchmark(example_copy).aggregate.metrics == ["polite"]


def test_a_file_that_cannot_take_the_metric_is_left_alone(example_copy):
    benchmark = load_benchmark(example_copy)
    before = example_copy.read_text()
    # The file changed since the benchmark was read: bias is gone.
    example_copy.write_text(
        before.replace("  - metric: bias\n", "").replace("helpfulness, bias]", "helpfulness]")
    )
    changed = example_copy.read_text()
    with pytest.raises(AlignedMetricError, match="does not read back as the benchmark plus "
                                                 "helpfulness_aligned"):  # fmt: skip
        adopt_aligned(example_copy, benchmark, benchmark.metrics[5], ALIGNED)
    assert example_copy.read_text() == changed
    # A text that makes an invalid metric is refused with the file's own error.
    with pytest.raises(AlignedMetricError, match="the criteria are empty"):
        adopt_aligned(example_copy, load_benchmark(example_copy), benchmark.metrics[5], " ")
    assert example_copy.read_text() == changed
