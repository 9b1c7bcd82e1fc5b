"""The benchmark file's reference page, written from its JSON schema.

Every object of the schema gets a section with a row per field: its name, type, default
and description. The metric configs are the metric catalog's page; here they are links.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from markdown_text import code, listed, prose, table

from n8n_deepeval_pipeline.benchmark.config import benchmark_json_schema

METRICS_PAGE = "metrics.md"
_REF = "#/$defs/"


def _def_name(ref: str) -> str:
    return ref.removeprefix(_REF)


def anchor(name: str) -> str:
    """The anchor of a schema object's section."""
    return name.lower()


class SchemaPage:
    """The page of one benchmark JSON schema (``benchmark_json_schema()``)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs: dict[str, dict[str, Any]] = schema["$defs"]
        self.metric_configs = self._metric_configs()

    def _metric_configs(self) -> dict[str, str]:
        """Config model name → metric slug, from the metric list's discriminator."""
        mapping = self.schema["properties"]["metrics"]["items"]["discriminator"]["mapping"]
        return {_def_name(ref): slug for slug, ref in mapping.items()}

    def objects(self) -> list[tuple[str, dict[str, Any], list[str]]]:
        """(name, schema, where it is used) for the top level and each object it reaches."""
        used: dict[str, list[str]] = {}
        order: list[str] = []
        queue: deque[tuple[str, dict[str, Any], str]] = deque([("Benchmark", self.schema, "")])
        seen = {"Benchmark"}
        while queue:
            name, node, path = queue.popleft()
            order.append(name)
            for _field, spec, where in self._fields(node, path):
                for ref in _refs(spec):
                    target = _def_name(ref)
                    if target in self.metric_configs:
                        continue
                    if where not in used.setdefault(target, []):
                        used[target].append(where)
                    if target not in seen:
                        seen.add(target)
                        queue.append((target, self.defs[target], where + "."))
        return [
            (name, self.schema if name == "Benchmark" else self.defs[name], used.get(name, []))
            for name in order
        ]

    def _fields(self, node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any], str]]:
        """(field, schema, path) of an object's fields; a metric's fields count as the list's.

        The metric configs have their own page, but what they hold (a judge, a DAG) is
        described here once.
        """
        found = []
        for field, spec in node.get("properties", {}).items():
            found.append((field, spec, f"{path}{field}"))
            if field == "metrics" and not path:
                for name in self.metric_configs:
                    found += [
                        (option, option_spec, f"metrics[].{option}")
                        for option, option_spec in self.defs[name]["properties"].items()
                    ]
        return found

    def type_of(self, spec: dict[str, Any]) -> str:
        """A field's type in words, with links to the objects it holds."""
        if "$ref" in spec:
            return self._link(_def_name(spec["$ref"]))
        if "const" in spec:
            return code(spec["const"])
        if "enum" in spec:
            return listed([code(value) for value in spec["enum"]])
        for union in ("anyOf", "oneOf"):
            if union in spec:
                choices = [part for part in spec[union] if part.get("type") != "null"]
                return " or ".join(dict.fromkeys(self.type_of(part) for part in choices))
        kind = spec.get("type")
        if kind == "array":
            if "prefixItems" in spec:
                return "[" + ", ".join(self.type_of(item) for item in spec["prefixItems"]) + "]"
            return "list of " + self.type_of(spec.get("items", {}))
        if kind == "object" or "additionalProperties" in spec:
            return self._map_type(spec)
        if kind == "string" and spec.get("format") == "path":
            return "path"
        if kind is None:
            return "any"
        return str(kind) + _bounds(spec)

    def _map_type(self, spec: dict[str, Any]) -> str:
        values = spec.get("additionalProperties")
        keys = spec.get("propertyNames", {}).get("enum")
        key = "name" if keys is None else listed([code(key) for key in keys])
        if not isinstance(values, dict):
            return "object"
        return f"map of {key} → {self.type_of(values)}"

    def _link(self, name: str) -> str:
        if name in self.metric_configs:
            slug = self.metric_configs[name]
            return f"[{code(slug)}]({METRICS_PAGE}#{slug})"
        return f"[{name}](#{anchor(name)})"

    def field_type(self, spec: dict[str, Any]) -> str:
        """A field's type; the metric list names the catalog rather than 46 configs."""
        items = spec.get("items", {})
        if items.get("discriminator", {}).get("propertyName") == "metric":
            return f"list of metric configs ([metric catalog]({METRICS_PAGE}))"
        return self.type_of(spec)

    def description(self, spec: dict[str, Any]) -> str:
        """A field's description, or the description of the one object it holds."""
        if spec.get("description"):
            return prose(spec["description"])
        refs = [_def_name(ref) for ref in _refs(spec)]
        if len(refs) == 1 and refs[0] in self.defs:
            return prose(self.defs[refs[0]].get("description", "")).split("\n\n")[0]
        return ""

    def section(self, name: str, node: dict[str, Any], used: list[str]) -> str:
        """One object's section: what it is, where it is used, its fields."""
        title = "The benchmark file" if name == "Benchmark" else f"{code(used[0])} · {name}"
        lines = [f"## {title} {{#{anchor(name)}}}", ""]
        if node.get("description"):
            lines += [prose(node["description"]), ""]
        if used:
            lines += ["Used by: " + ", ".join(code(path) for path in used) + ".", ""]
        required = set(node.get("required", []))
        rows = [
            (
                code(field),
                self.field_type(spec),
                _default(field, spec, required),
                self.description(spec),
            )
            for field, spec in node.get("properties", {}).items()
        ]
        lines.append(table(["field", "type", "default", "description"], rows))
        return "\n".join(lines)

    def markdown(self) -> str:
        """The whole page."""
        intro = (
            "# Benchmark file\n\n"
            "Every field of a benchmark file, written from its JSON schema "
            "(`n8n-deepeval schema`, `schemas/benchmark.schema.json`) when the site is "
            "built. Names are camelCase, as in YAML; a field the schema does not know is "
            "an error that names it. Editors validate the file as it is typed with the "
            "first line `# yaml-language-server: $schema=<path>/benchmark.schema.json`. "
            "[Writing a benchmark](../guides/benchmark-file.md) walks through a whole "
            "file; each metric's options are in the [metric catalog](metrics.md).\n"
        )
        return intro + "\n" + "\n".join(self.section(*item) for item in self.objects())


def _refs(spec: Any) -> list[str]:
    """Every $ref under a field's schema."""
    if isinstance(spec, dict):
        found = [spec["$ref"]] if "$ref" in spec else []
        return found + [ref for value in spec.values() for ref in _refs(value)]
    if isinstance(spec, list):
        return [ref for value in spec for ref in _refs(value)]
    return []


def _bounds(spec: dict[str, Any]) -> str:
    said = [
        f"{sign} {spec[key]}"
        for key, sign in (
            ("minimum", "≥"),
            ("exclusiveMinimum", ">"),
            ("maximum", "≤"),
            ("exclusiveMaximum", "<"),
        )
        if key in spec
    ]
    return f" ({', '.join(said)})" if said else ""


def _default(field: str, spec: dict[str, Any], required: set[str]) -> str:
    if field in required:
        return "required"
    if "default" not in spec:  # a default factory, which the schema does not state
        if _refs(spec):
            return "its fields' defaults"
        return "empty" if spec.get("type") in ("object", "array") else "unset"
    if "default" not in spec or spec["default"] is None:
        return "unset"
    if isinstance(spec["default"], dict) and _refs(spec):
        return "its fields' defaults"
    return code(json.dumps(spec["default"], ensure_ascii=False))


def page() -> str:
    """The benchmark file's reference page, from the schema the code publishes."""
    return SchemaPage(benchmark_json_schema()).markdown()
