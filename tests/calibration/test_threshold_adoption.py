"""A fitted threshold written into the benchmark file: one value changes, nothing else."""

import difflib

import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.calibration.threshold_adoption import (
    AdoptionError,
    adopt_threshold,
    with_threshold,
)


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_an_existing_threshold_is_replaced_in_place(example_copy):
    before = example_copy.read_text()
    adopt_threshold(example_copy, load_benchmark(example_copy), "tool_correctness", 0.83333)
    after = example_copy.read_text()
    assert changed_lines(before, after) == ["-    threshold: 1.0", "+    threshold: 0.8333"]
    assert load_benchmark(example_copy).metrics[0].threshold == 0.8333


def test_a_missing_threshold_is_added_after_the_metric_its_comments_kept(example_copy):
    before = example_copy.read_text()
    adopt_threshold(example_copy, load_benchmark(example_copy), "helpfulness", 0.4125)
    after = example_copy.read_text()
    assert changed_lines(before, after) == ["+    threshold: 0.4125"]
    assert after.index("  - metric: g_eval\n    threshold: 0.4125\n    name: helpfulness") > 0
    assert "# Reported but not deciding a run" in after  # comments stay
    assert load_benchmark(example_copy).metrics[5].threshold == 0.4125


def test_a_flow_mapping_gets_an_entry():
    text = (
        "metrics:\n  - {metric: bias, label: b}  # keep me\n"
        "  - {metric: toxicity, threshold: 0.5}\n"
    )
    assert with_threshold(text, 0, 0.3) == (
        "metrics:\n  - {metric: bias, threshold: 0.3, label: b}  # keep me\n"
        "  - {metric: toxicity, threshold: 0.5}\n"
    )
    assert with_threshold(text, 1, 0.25).endswith("{metric: toxicity, threshold: 0.25}\n")


def test_strict_mode_and_unknown_metrics_are_refused_and_the_file_left_alone(example_copy):
    text = example_copy.read_text().replace(
        "  - metric: bias\n", "  - metric: bias\n    strictMode: true\n"
    )
    example_copy.write_text(text)
    benchmark = load_benchmark(example_copy)
    with pytest.raises(AdoptionError, match="strictMode on, which pins its threshold"):
        adopt_threshold(example_copy, benchmark, "bias", 0.3)
    with pytest.raises(AdoptionError, match="unknown metric 'tone'"):
        adopt_threshold(example_copy, benchmark, "tone", 0.3)
    assert example_copy.read_text() == text
