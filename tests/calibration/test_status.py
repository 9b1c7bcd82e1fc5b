"""A judge-backed metric's standing: calibrated, uncalibrated (and why), too few labels."""

import pytest
import yaml

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.calibration.measurement import measure, render_calibration
from n8n_deepeval_pipeline.calibration.status import (
    UnknownMetricError,
    gated_metrics,
    judged_metrics,
    metrics_to_review,
)
from tests.calibration.judged_labels import judged
from tests.conftest import EXAMPLE


def with_calibration(example_copy, **section):
    document = yaml.safe_load(example_copy.read_text())
    document["calibration"] = section
    example_copy.write_text(yaml.safe_dump(document))
    return load_benchmark(example_copy)


def agreeing(metric: str, runs: int, wrong: int = 0):
    """``runs`` labels, alternating pass and fail, of which the judge gets ``wrong`` wrong."""
    return [
        judged(f"row{i}", 0, i % 2 == 0, (i % 2 == 0) != (i < wrong), metric=metric)
        for i in range(runs)
    ]


def test_only_judge_backed_metrics_are_calibrated(example_copy):
    benchmark = load_benchmark(example_copy)
    assert judged_metrics(benchmark) == ["helpfulness", "bias"]


def test_a_review_asks_about_the_metrics_named_or_else_the_judged_ones(example_copy):
    benchmark = load_benchmark(example_copy)
    assert metrics_to_review(benchmark, []) == ["helpfulness", "bias"]
    assert metrics_to_review(benchmark, ["tool_correctness"]) == ["tool_correctness"]
    with pytest.raises(UnknownMetricError) as refused:
        metrics_to_review(benchmark, ["bias", "tone", "pace"])
    assert str(refused.value) == (
        "'tone' is not one of the benchmark's metrics (tool_correctness, tool_permission, "
        "agent_loop_detection, exact_answer, no_refund_promise, helpfulness, bias)"
    )


def test_each_standing_says_why(example_copy):
    benchmark = with_calibration(example_copy, minKappa=0.6, minLabels=20, gate=True)
    labels = (
        agreeing("helpfulness", 40)  # every verdict right: kappa 1
        + [judged(f"row{i}", 0, True, i % 3 == 0, metric="bias") for i in range(30)]
        + agreeing("exact_answer", 5)  # no judge: never gated
    )
    found = measure(benchmark, labels)
    standing = {s.metric: s for s in found.standings}
    assert set(standing) == {"helpfulness", "bias"}
    assert standing["helpfulness"].state == "calibrated" and not standing["helpfulness"].gated
    assert standing["helpfulness"].why == "kappa 1.00 [1.00, 1.00] over 40 labels"
    assert standing["bias"].state == "uncalibrated" and standing["bias"].gated
    assert standing["bias"].why == (
        "every label says pass: kappa cannot rise above 0 until people label runs that fail too"
    )
    assert found.gated == ("bias",)
    assert gated_metrics(benchmark, lambda: labels) == frozenset({"bias"})
    printed = render_calibration(found)
    assert "bias" in printed and "uncalibrated, decides no run" in printed


def test_too_few_labels_say_how_many_more_and_an_interval_below_min_kappa_fails(example_copy):
    benchmark = with_calibration(example_copy, minKappa=0.6, minLabels=30, gate=True)
    found = measure(
        benchmark,
        agreeing("helpfulness", 12) + agreeing("bias", 40, wrong=12),
        with_thresholds=False,
    )
    standing = {s.metric: s for s in found.standings}
    assert (standing["helpfulness"].state, standing["helpfulness"].needed) == (
        "too_few_labels", 18)  # fmt: skip
    assert standing["helpfulness"].why == "12 of 30 labels (calibration.minLabels): 18 more needed"
    bias = standing["bias"]
    assert bias.state == "uncalibrated" and bias.kappa_low < 0.6 < bias.kappa_high
    assert bias.why.endswith("the interval reaches below minKappa 0.6")
    assert found.gated == ("helpfulness", "bias")


def test_without_the_gate_nothing_is_kept_from_deciding(example_copy):
    benchmark = with_calibration(example_copy, minLabels=5, gate=False)
    labels = agreeing("bias", 10, wrong=5)
    assert measure(benchmark, labels).standings[1].state == "uncalibrated"
    assert gated_metrics(benchmark, read_nothing) == frozenset()  # no label read
    assert gated_metrics(load_benchmark(EXAMPLE / "benchmark.yaml"), read_nothing) == frozenset()


def read_nothing():
    raise AssertionError("the labels are read only under calibration.gate")
