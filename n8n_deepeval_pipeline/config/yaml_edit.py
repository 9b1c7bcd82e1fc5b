"""An entry added to a YAML file's text, leaving every other byte as the user wrote it.

The document is not loaded and dumped again (that would drop its comments, quoting,
order and blank lines): it is composed only to find where the mapping at a path ends,
and the new entry's text is inserted there, in the mapping's own style, at its
indentation (block), or before its closing brace (flow, as JSON, which YAML reads). A
mapping missing at the end of the path is added to its parent the same way. An item is
added to a list after a given item the same way (``with_item``), and a scalar value
replaced where it stands (``with_value``). The result is checked by loading it: it must be
the document as it was, plus the change, or the edit is refused (``YamlEditError``) and
nothing is written.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml


class YamlEditError(ValueError):
    """The entry cannot be added without rewriting the file (the message says why)."""


class _BlockText(yaml.SafeDumper):
    """Text and collections as people write them.

    Multi-line text as a literal block (``|``), as a prompt is written; a list or mapping of
    one-line values on one line (``[INPUT, ACTUAL_OUTPUT]``).
    """


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = (
        "|"
        if "\n" in value and not any(line != line.rstrip() for line in value.split("\n"))
        else None
    )
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _one_line(value: Any) -> bool:
    return isinstance(value, bool | int | float) or (isinstance(value, str) and "\n" not in value)


def _list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    flow = bool(value) and all(_one_line(item) for item in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


def _mapping(dumper: yaml.SafeDumper, value: dict[Any, Any]) -> yaml.MappingNode:
    flow = bool(value) and all(_one_line(item) for item in value.values())
    node = dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=flow)
    return node


_BlockText.add_representer(str, _text)
_BlockText.add_representer(list, _list)
_BlockText.add_representer(dict, _mapping)


def _child(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found: yaml.Node = value_node
            return found
    return None


def _block(entry: dict[str, Any] | list[Any], indent: int) -> str:
    dumped = yaml.dump(entry, Dumper=_BlockText, sort_keys=False, allow_unicode=True, width=4096)
    return "".join(
        " " * indent + line if line.strip() else line for line in dumped.splitlines(True)
    )


def _after_content(text: str, index: int) -> int:
    """Where the next entry goes: after the last line before ``index`` with content.

    A block ends where the next token begins, after the blank lines and comments that
    follow it; those stay with what comes next.
    """
    lines = text[:index].splitlines(keepends=True)
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    at = sum(len(line) for line in lines)
    if at and text[at - 1] != "\n":  # the value ends mid-line: its comment stays with it
        newline = text.find("\n", at)
        at = len(text) if newline == -1 else newline + 1
    return at


def _insert(text: str, mapping: yaml.MappingNode, entry: dict[str, Any]) -> str:
    """``entry`` added at the end of ``mapping``, in its style."""
    if mapping.flow_style or not mapping.value:
        close = text.rfind("}", 0, mapping.end_mark.index)
        if close == -1:
            raise YamlEditError("the mapping is empty and not written with braces")
        pairs = ", ".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                          for k, v in entry.items())  # fmt: skip
        separator = ", " if mapping.value else ""
        return text[:close] + separator + pairs + text[close:]
    indent = mapping.value[0][0].start_mark.column
    at = _after_content(text, mapping.value[-1][1].end_mark.index)
    prefix = "" if at == 0 or text[at - 1] == "\n" else "\n"
    return text[:at] + prefix + _block(entry, indent) + text[at:]


def _at(text: str, path: tuple[str, ...]) -> yaml.Node:
    """The node at ``path`` of the document's mappings (``YamlEditError`` when there is none)."""
    node: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    for depth, part in enumerate(path):
        found = _child(node, part) if isinstance(node, yaml.MappingNode) else None
        if found is None:
            raise YamlEditError(f"{'.'.join(path[: depth + 1])} is not in the file")
        node = found
    if node is None:
        raise YamlEditError("the document is empty")
    return node


def with_item(text: str, path: tuple[str, ...], after: int, value: Any) -> str:
    """``text`` with ``value`` added to the list at ``path``, right after its item ``after``."""
    sequence = _at(text, path)
    if not isinstance(sequence, yaml.SequenceNode) or after >= len(sequence.value):
        raise YamlEditError(f"{'.'.join(path)} has no item {after}")
    item = sequence.value[after]
    if sequence.flow_style:
        at = item.end_mark.index
        edited = text[:at] + ", " + json.dumps(value, ensure_ascii=False) + text[at:]
    else:
        at = _after_content(text, item.end_mark.index)
        prefix = "" if at == 0 or text[at - 1] == "\n" else "\n"
        edited = text[:at] + prefix + _block([value], sequence.start_mark.column) + text[at:]
    expected = copy.deepcopy(yaml.safe_load(text))
    _holder(expected, path[:-1])[path[-1]].insert(after + 1, value)
    _loads_as(edited, expected)
    return edited


def with_value(text: str, path: tuple[str, ...], value: Any) -> str:
    """``text`` with the scalar at ``path`` replaced by ``value`` (as JSON, which YAML reads)."""
    node = _at(text, path)
    if not isinstance(node, yaml.ScalarNode):
        raise YamlEditError(f"{'.'.join(path)} is not a single value")
    start, end = node.start_mark.index, node.end_mark.index
    edited = text[:start] + json.dumps(value, ensure_ascii=False) + text[end:]
    expected = copy.deepcopy(yaml.safe_load(text))
    _holder(expected, path[:-1])[path[-1]] = value
    _loads_as(edited, expected)
    return edited


def with_entry(text: str, path: tuple[str, ...], key: str, value: Any) -> str:
    """``text`` with ``key: value`` added to the mapping at ``path`` (made if missing)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise YamlEditError("the document is not a mapping")
    node: yaml.MappingNode = root
    for depth, part in enumerate(path):
        found = _child(node, part)
        if found is None:
            nested: Any = {key: value}
            for outer in reversed(path[depth + 1 :]):
                nested = {outer: nested}
            edited = _insert(text, node, {part: nested})
            break
        if not isinstance(found, yaml.MappingNode):
            raise YamlEditError(f"{'.'.join(path[: depth + 1])} is not a mapping")
        node = found
    else:
        if _child(node, key) is not None:
            raise YamlEditError(f"{'.'.join(path)} already has {key!r}")
        edited = _insert(text, node, {key: value})
    _check(text, edited, path, key, value)
    return edited


def _holder(document: Any, path: tuple[str, ...]) -> Any:
    """The mapping at ``path`` of a loaded document (made where missing)."""
    holder = document
    for part in path:
        holder = holder.setdefault(part, {})
    return holder


def _check(before: str, after: str, path: tuple[str, ...], key: str, value: Any) -> None:
    """The edited text must load as the document plus the entry, and nothing else."""
    expected = copy.deepcopy(yaml.safe_load(before))
    _holder(expected, path)[key] = value
    _loads_as(after, expected)


def _loads_as(after: str, expected: Any) -> None:
    """The edited text must load as ``expected``, and nothing else."""
    try:
        loaded = yaml.safe_load(after)
    except yaml.YAMLError as error:
        raise YamlEditError(f"the edited file would not be valid YAML: {error}") from None
    if loaded != expected:
        raise YamlEditError("the edited file would not read back as the document plus the change")
