"""A fitted threshold written into the benchmark file, the rest of the file left as it was.

The file is not loaded and dumped again (that would drop its comments, reorder its keys and
rewrite its quoting): PyYAML's composer gives the position of every node, so only the
metric's ``threshold`` value is replaced, or a ``threshold:`` line (or, in a flow mapping,
a ``, threshold: …`` entry) is added after its ``metric:``. The new text is validated as
a benchmark before it is written, and must give the metric the new threshold.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from n8n_deepeval_pipeline.benchmark.config import Benchmark, parse_benchmark
from n8n_deepeval_pipeline.config.yaml_loader import load_yaml

_DECIMALS = 4


class AdoptionError(ValueError):
    """The threshold cannot be written into the file; the message says why."""


def _entry(mapping: MappingNode, key: str) -> tuple[ScalarNode, Node] | None:
    for key_node, value_node in mapping.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return key_node, value_node
    return None


def _metric_node(text: str, index: int) -> MappingNode:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    found = _entry(root, "metrics") if isinstance(root, MappingNode) else None
    if found is None or not isinstance(found[1], SequenceNode) or index >= len(found[1].value):
        raise AdoptionError("the file's metrics list is not where its YAML says it is")
    node = found[1].value[index]
    if not isinstance(node, MappingNode):
        raise AdoptionError(f"metrics[{index}] is not a mapping")
    return node


def threshold_text(value: float) -> str:
    """The threshold as the file gets it: a float, at most four decimals."""
    return repr(float(round(value, _DECIMALS)))


def with_threshold(text: str, index: int, value: float) -> str:
    """``text`` with the threshold of ``metrics[index]`` set to ``value``."""
    node = _metric_node(text, index)
    written = threshold_text(value)
    existing = _entry(node, "threshold")
    if existing is not None:
        start, end = existing[1].start_mark.index, existing[1].end_mark.index
        return text[:start] + written + text[end:]
    anchor = _entry(node, "metric")
    if anchor is None:
        raise AdoptionError(f"metrics[{index}] has no 'metric' key to add the threshold after")
    key_node, value_node = anchor
    if node.flow_style:
        at = value_node.end_mark.index
        return text[:at] + f", threshold: {written}" + text[at:]
    line_end = text.find("\n", value_node.end_mark.index)
    at = len(text) if line_end == -1 else line_end
    indent = " " * key_node.start_mark.column
    return text[:at] + f"\n{indent}threshold: {written}" + text[at:]


def adopt_threshold(path: Path, benchmark: Benchmark, metric: str, value: float) -> str:
    """Write ``value`` as ``metric``'s threshold into benchmark file ``path``; the new text."""
    labels = benchmark.metric_labels
    if metric not in labels:
        raise AdoptionError(f"unknown metric {metric!r} (the benchmark's: {', '.join(labels)})")
    index = labels.index(metric)
    config = benchmark.metrics[index]
    if config.strict_mode:
        raise AdoptionError(
            f"{metric} has strictMode on, which pins its threshold: turn it off to adopt one"
        )
    text = path.read_text(encoding="utf-8")
    changed = with_threshold(text, index, value)
    adopted = parse_benchmark(load_yaml(changed), path)
    if adopted.metrics[index].threshold != float(threshold_text(value)):
        raise AdoptionError(f"{metric}: the edited file does not read back the new threshold")
    path.write_text(changed, encoding="utf-8")
    return changed
