"""The metric catalog's reference page, written from the catalog itself (``CATALOG``).

A summary table of every metric, the options every metric (and every judge metric)
takes, then a section per metric with its own options, from its config model's schema.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

from benchmark_file_page import SchemaPage
from markdown_text import code, first_paragraph, listed, prose, table

from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema
from n8n_deepeval_pipeline.config.model import StatedDefaults
from n8n_deepeval_pipeline.metrics.catalog import CATALOG
from n8n_deepeval_pipeline.metrics.entry import MetricEntry
from n8n_deepeval_pipeline.metrics.left_out import LEFT_OUT
from n8n_deepeval_pipeline.metrics.options import (
    JUDGE_OPTIONS,
    MetricConfig,
    ReasonedMetricConfig,
)

_CATEGORY_TITLES = {
    "custom": "Custom metrics",
    "agentic": "Agentic metrics",
    "multi-turn": "Multi-turn metrics",
    "rag": "RAG metrics",
    "safety": "Safety metrics",
    "others": "Other metrics",
    "community": "Community metrics",
    "mcp": "MCP metrics",
    "images": "Image metrics",
    "n8n": "n8n's metrics",
}
# What a metric needs, in the names a benchmark file uses (input and output: every run has).
_NEEDS = {
    "expected_output": "`expectedOutput`",
    "context": "`context`",
    "retrieval_context": "`retrievalContext`",
    "tools_called": "tools called",
    "expected_tools": "`expectedTools`",
    "trace": "trace",
    "turns": "turns",
    "turn_retrieval_context": "turns with retrieval context",
    "chatbot_role": "`chatbotRole`",
    "expected_outcome": "`expectedOutcome`",
    "scenario": "`scenario`",
    "mcp_servers": "MCP servers",
    "input_images": "an image in the input",
    "output_images": "an image in the output",
}


def _schema(model: type[MetricConfig]) -> dict[str, Any]:
    return model.model_json_schema(
        by_alias=True, ref_template="#/$defs/{model}", schema_generator=StatedDefaults
    )


class CatalogPage:
    """The catalog's page, with types written as the benchmark file's page writes them."""

    def __init__(self) -> None:
        self.types = SchemaPage(benchmark_json_schema())
        every = _schema(MetricConfig)["properties"]
        self.common = {name: spec for name, spec in every.items() if name not in JUDGE_OPTIONS}
        self.judge = {name: spec for name, spec in every.items() if name in JUDGE_OPTIONS}
        self.reasoned = {
            name: spec
            for name, spec in _schema(ReasonedMetricConfig)["properties"].items()
            if name not in every
        }

    def _type(self, spec: dict[str, Any]) -> str:
        # Objects a metric option holds (a judge, a DAG) are sections of the benchmark page.
        return self.types.type_of(spec).replace("](#", "](benchmark-file.md#")

    def _rows(self, properties: dict[str, Any], required: set[str]) -> list[tuple[str, ...]]:
        return [
            (
                code(name),
                self._type(spec),
                "required"
                if name in required
                else code(json.dumps(spec["default"], ensure_ascii=False))
                if spec.get("default") is not None
                else "unset",
                prose(spec.get("description", "")),
            )
            for name, spec in properties.items()
        ]

    def own_options(self, entry: MetricEntry) -> tuple[dict[str, Any], set[str]]:
        """The options of this metric that are not the shared ones, or differ from them."""
        schema = _schema(entry.config_model)
        shared = {**self.common, **self.judge, **self.reasoned}
        own = {
            name: spec
            for name, spec in schema["properties"].items()
            if name != "metric" and spec != shared.get(name)
        }
        return own, set(schema.get("required", []))

    def summary(self) -> str:
        """One row per metric."""
        rows = []
        for entry in CATALOG.values():
            own, required = self.own_options(entry)
            rows.append(
                (
                    f"[{code(entry.slug)}](#{entry.slug})",
                    entry.name,
                    entry.category,
                    _passes_when(entry, compact=True),
                    _needs(entry),
                    ", ".join(code(name) for name in own if name in required) or "—",
                )
            )
        headers = ["slug", "metric", "category", "passes at", "needs", "required options"]
        return table(headers, rows)

    def section(self, entry: MetricEntry) -> str:
        """One metric: what it is, what runs it, what it needs, its own options."""
        implementation = (
            f"DeepEval's {code(entry.implementation)}"
            if entry.implementation
            else "this project's own scoring, after n8n's built-in evaluation"
        )
        lines = [
            f"### {entry.name} {{#{entry.slug}}}",
            "",
            f"{code('metric: ' + entry.slug)} · {entry.category} · {implementation}.",
            "",
            first_paragraph(entry.config_model.__doc__),
            "",
            f"Passes when {_passes_when(entry)}. Needs {_needs(entry)}.",
        ]
        if issubclass(entry.config_model, ReasonedMetricConfig):
            lines.append(f"Takes {listed([code(name) for name in self.reasoned], 'and')} too.")
        if entry.complement_score:
            lines.append(
                "DeepEval scores the share of good verdicts; the score reported is 1 − that, "
                "the seed's lower-is-better meaning."
            )
        own, required = self.own_options(entry)
        if own:
            rows = self._rows(own, required)
            lines += ["", table(["option", "type", "default", "description"], rows)]
        return "\n".join(lines) + "\n"

    def markdown(self) -> str:
        """The whole page."""
        by_category: dict[str, list[MetricEntry]] = {}
        for entry in CATALOG.values():
            by_category.setdefault(entry.category, []).append(entry)
        parts = [
            "# Metric catalog\n",
            f"Every metric a benchmark can use ({len(CATALOG)}), written from the catalog "
            "(`n8n-deepeval metrics --json` prints the same) when the site is built. A "
            "metric is one entry of the benchmark file's `metrics` list, named by its "
            "slug; [Metrics](../concepts/metrics.md) says how to read their scores.\n",
            self.summary(),
            "## Options every metric takes\n",
            table(
                ["option", "type", "default", "description"], self._rows(self.common, {"metric"})
            ),
            "## A metric's judge\n",
            "A metric that calls a judge may name its own, or a panel of judges "
            "([the judge](../concepts/judge.md)); one that calls none refuses these.\n",
            table(["option", "type", "default", "description"], self._rows(self.judge, set())),
            "## Reasons and concurrency\n",
            "Most judge metrics (each says so below) also take:\n",
            table(["option", "type", "default", "description"], self._rows(self.reasoned, set())),
        ]
        for category, entries in by_category.items():
            parts.append(f"## {_CATEGORY_TITLES[category]}\n")
            parts += [self.section(entry) for entry in entries]
        parts += [
            "## Left out\n",
            f"DeepEval {version('deepeval')}'s metrics no benchmark can use, and why "
            "(`n8n-deepeval metrics --json` lists them under `leftOut`):\n",
            table(
                ["DeepEval metric", "why"],
                [(code(left.implementation), prose(left.why)) for left in LEFT_OUT],
            ),
        ]
        return "\n".join(parts)


def _passes_when(entry: MetricEntry, compact: bool = False) -> str:
    """``score ≥ threshold (default 0.5)``, or ``≥ 0.5`` for the summary table."""
    threshold = entry.config_model.model_fields["threshold"].default
    sign = "≤" if entry.direction == "lower_is_better" else "≥"
    return f"{sign} {threshold}" if compact else f"score {sign} threshold (default {threshold})"


def _needs(entry: MetricEntry) -> str:
    needs = ["a judge"] if entry.needs_judge else []
    needs += [_NEEDS[field] for field in entry.required_fields if field in _NEEDS]
    if entry.config_model.fields_from_options is not MetricConfig.fields_from_options:
        needs.append("the fields its options name")
    return listed(needs, "and") or "nothing but the output"


def page() -> str:
    """The metric catalog's page."""
    return CatalogPage().markdown()
