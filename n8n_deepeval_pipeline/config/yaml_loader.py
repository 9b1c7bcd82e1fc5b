r"""Benchmark YAML read with PyYAML's safe loader, refusing what it would let pass silently.

A key given twice in one mapping would keep only its last value, and deep nesting would
exhaust Python's recursion limit: both are refused with the line they are on. So are
aliases that expand to more than ``MAX_VALUES`` values (a "billion laughs": nine
aliases of nine aliases… took ``validate`` past two minutes and a variant past 5 GB),
nesting that aliases make deeper than the limit, and a lone UTF-16 surrogate
(``"\ud800"``), which no file, table or request can hold. Every problem is one line
that says where it is (the caller names the file).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from n8n_deepeval_pipeline.data_limits import MAX_DEPTH, text_problem

# Values a document may expand to through its aliases: hundreds of times a large
# benchmark file (a few hundred values), far below what slows a command down.
MAX_VALUES = 100_000
_MERGE_KEY = "tag:yaml.org,2002:merge"


class YamlProblem(ValueError):
    """The text is not a YAML document this project accepts; the message names the line."""


class _StrictLoader(yaml.SafeLoader):
    """The safe loader with a nesting limit and no repeated keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH and parent is not None:  # the root is at depth 1
                problem = f"nested deeper than {MAX_DEPTH} levels"
                raise yaml.MarkedYAMLError(problem=problem, problem_mark=parent.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        self._refuse_repeated_keys(node)
        return super().construct_mapping(node, deep)

    def _refuse_repeated_keys(self, node: MappingNode) -> None:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            # A merge (<<: *base) may be overridden on purpose; complex keys are PyYAML's.
            if key_node.tag == _MERGE_KEY or not isinstance(key_node, ScalarNode):
                continue
            key = self.construct_object(key_node)
            if key in first_line:
                raise ConstructorError(
                    problem=f"key {key!r} repeats (first on line {first_line[key]}): keep one",
                    problem_mark=key_node.start_mark,
                )
            first_line[key] = key_node.start_mark.line + 1


def _expanded(node: Node, depth: int, sizes: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """The values ``node`` expands to and how deep it nests, each alias counted in full.

    An alias is the node it names, so each node is measured once (``sizes``, by id).
    """
    known = sizes.get(id(node))
    if known is None:
        if depth > MAX_DEPTH:
            raise yaml.MarkedYAMLError(
                problem=f"aliases nest it deeper than {MAX_DEPTH} levels",
                problem_mark=node.start_mark,
            )
        children: list[Node] = []
        if isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        elif not isinstance(node, ScalarNode):
            children = list(node.value)
        elif (problem := text_problem(node.value)) is not None:
            raise yaml.MarkedYAMLError(problem=problem, problem_mark=node.start_mark)
        measured = [_expanded(child, depth + 1, sizes) for child in children]
        known = (
            1 + sum(size for size, _ in measured),
            1 + max((h for _, h in measured), default=0),
        )
        sizes[id(node)] = known
    if known[0] > MAX_VALUES or depth + known[1] > MAX_DEPTH + 1:
        what = (
            f"expands to more than {MAX_VALUES:,} values through aliases"
            if known[0] > MAX_VALUES
            else f"aliases nest it deeper than {MAX_DEPTH} levels"
        )
        raise yaml.MarkedYAMLError(problem=what, problem_mark=node.start_mark)
    return known


def load_yaml(text: str) -> Any:
    """The document in ``text``; a problem is a ``YamlProblem`` naming its line and column."""
    loader = _StrictLoader(text)  # a SafeLoader: no arbitrary objects
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded(node, 1, {})  # before anything is built from it
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        raise YamlProblem(_describe(error)) from None
    finally:
        loader.dispose()


def _describe(error: yaml.YAMLError) -> str:
    """``line 3, column 7: <problem>``: PyYAML's own text names ``<unicode string>``."""
    if not isinstance(error, yaml.MarkedYAMLError) or error.problem_mark is None:
        return str(error)
    mark = error.problem_mark
    text = f"line {mark.line + 1}, column {mark.column + 1}: {error.problem}"
    if error.context and error.context_mark is not None:
        text += f" ({error.context} on line {error.context_mark.line + 1})"
    return text
