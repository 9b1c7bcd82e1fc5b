"""An aligned metric written into the benchmark file beside the one it was aligned from.

The metric the file configures is kept as it is; the aligned one is a copy of its entry
(every key as the user wrote it) with the rewritten text and its own ``label``
(``helpfulness`` → ``helpfulness_aligned``), inserted right after it as text
(``config.yaml_edit``), so the file's comments, order and quoting stay. Both are then
scored by every run, side by side. Labels are kept per metric: the aligned metric starts
with none of its own (the old metric's labels trained it, so they would flatter it), and
``calibration`` measures it once people label its runs.

The aligned metric decides no run until the user says so: when ``aggregate.metrics`` is
unset (every metric counts), the metrics that count now are written there, so the pass
rule is the same as before; the user lists the aligned metric there (or replaces the old
one with it) once convinced. The edited text must read back as a benchmark in which the
new metric is the one scored in the search, the old metrics unchanged and counted as
before, or nothing is written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from n8n_deepeval_pipeline.benchmark.config import Benchmark, parse_benchmark
from n8n_deepeval_pipeline.calibration.judge_text import CandidateTextError, with_text
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.config.yaml_edit import YamlEditError, with_entry, with_item, with_value
from n8n_deepeval_pipeline.config.yaml_loader import load_yaml
from n8n_deepeval_pipeline.metrics.custom import ConversationalDagConfig, DagConfig
from n8n_deepeval_pipeline.metrics.options import CriteriaMetricConfig, MetricConfig

SUFFIX = "_aligned"
_STEPS_KEYS = ("evaluationSteps", "evaluation_steps")


class AlignedMetricError(ValueError):
    """The aligned metric cannot be written into the file (the message says why)."""


def aligned_label(benchmark: Benchmark, label: str) -> str:
    """A label for the aligned metric that no metric of the benchmark has yet."""
    taken = set(benchmark.metric_labels)
    name, number = f"{label}{SUFFIX}", 2
    while name in taken:
        name, number = f"{label}{SUFFIX}_{number}", number + 1
    return name


def _entry(written: dict[str, Any], aligned: MetricConfig, label: str) -> dict[str, Any]:
    """The file's entry of the metric, with the aligned text and the new label."""
    entry: dict[str, Any] = {}
    for key, value in written.items():  # the label right after the metric's slug
        if key != "label":
            entry[key] = copy.deepcopy(value)
        if key == "metric":
            entry["label"] = label
    if isinstance(aligned, CriteriaMetricConfig) and aligned.evaluation_steps is not None:
        key = next(key for key in _STEPS_KEYS if key in entry)
        entry[key] = list(aligned.evaluation_steps)
    elif isinstance(aligned, CriteriaMetricConfig):
        entry["criteria"] = aligned.criteria
    elif isinstance(aligned, DagConfig | ConversationalDagConfig):
        nodes = entry["dag"]["nodes"]
        for node_id, node in aligned.dag.nodes.items():
            for field in ("instructions", "criteria"):
                if field in nodes[node_id]:
                    nodes[node_id][field] = getattr(node, field)
    return entry


def with_aligned_metric(
    text: str, benchmark: Benchmark, config: MetricConfig, aligned_text: str
) -> tuple[str, str]:
    """``text`` with the aligned metric after ``config``'s entry, deciding nothing; its label."""
    index = benchmark.metric_labels.index(config.result_label())
    label = aligned_label(benchmark, config.result_label())
    aligned = with_text(config, aligned_text)
    written = load_yaml(text)["metrics"][index]
    edited = with_item(text, ("metrics",), index, _entry(written, aligned, label))
    counted = benchmark.counted_labels
    aggregate = load_yaml(edited).get("aggregate") or {}
    if "metrics" not in aggregate:
        edited = with_entry(edited, ("aggregate",), "metrics", counted)
    elif not isinstance(aggregate["metrics"], list):  # allConnected: every metric counts
        edited = with_value(edited, ("aggregate", "metrics"), counted)
    return edited, label


def already_there(benchmark: Benchmark, config: MetricConfig, aligned_text: str) -> str | None:
    """The label of a metric of the benchmark that is the aligned one already (None: none)."""
    try:
        aligned = with_text(config, aligned_text).model_copy(update={"label": None})
    except CandidateTextError:
        return None
    return next(
        (
            metric.result_label()
            for metric in benchmark.metrics
            if metric.model_copy(update={"label": None}) == aligned
        ),
        None,
    )


def adopt_aligned(path: Path, benchmark: Benchmark, config: MetricConfig, aligned_text: str) -> str:
    """Write the aligned metric into benchmark file ``path``; its label.

    ``AlignedMetricError`` (and nothing written) when it cannot be added as text, or the
    edited file would not read back as the benchmark plus the aligned metric alone.
    """
    try:
        edited, label = with_aligned_metric(
            path.read_text(encoding="utf-8"), benchmark, config, aligned_text
        )
        adopted = parse_benchmark(load_yaml(edited), path)
    except (YamlEditError, CandidateTextError) as error:
        raise AlignedMetricError(f"{path}: {error}") from None
    except BenchmarkConfigError as error:  # it names the file
        raise AlignedMetricError(str(error)) from None
    expected = with_text(config, aligned_text).model_copy(update={"label": label})
    index = benchmark.metric_labels.index(config.result_label())
    if (
        adopted.metrics[index + 1] != expected
        or [*adopted.metrics[: index + 1], *adopted.metrics[index + 2 :]] != benchmark.metrics
        or adopted.counted_labels != benchmark.counted_labels
    ):
        raise AlignedMetricError(
            f"{path}: the edited file does not read back as the benchmark plus {label}"
        )
    temporary = path.with_name(f".{path.name}.align")
    temporary.write_text(edited, encoding="utf-8")
    temporary.replace(path)
    return label
