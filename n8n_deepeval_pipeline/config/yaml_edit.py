"""A mapping entry added to a YAML file's text, leaving every other byte as the user wrote it.

The document is not loaded and dumped again (that would drop its comments, quoting,
order and blank lines): it is composed only to find where the mapping at a path ends,
and the new entry's text is inserted there, in the mapping's own style, at its
indentation (block), or before its closing brace (flow, as JSON, which YAML reads). A
mapping missing at the end of the path is added to its parent the same way. The result
is checked by loading it: it must be the document as it was, plus the entry, or the edit
is refused (``YamlEditError``) and nothing is written.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml


class YamlEditError(ValueError):
    """The entry cannot be added without rewriting the file (the message says why)."""


class _BlockText(yaml.SafeDumper):
    """Multi-line text as a literal block (``|``), as a person writes a prompt."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = (
        "|"
        if "\n" in value and not any(line != line.rstrip() for line in value.split("\n"))
        else None
    )
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockText.add_representer(str, _text)


def _child(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found: yaml.Node = value_node
            return found
    return None


def _block(entry: dict[str, Any], indent: int) -> str:
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


def _check(before: str, after: str, path: tuple[str, ...], key: str, value: Any) -> None:
    """The edited text must load as the document plus the entry, and nothing else."""
    expected = copy.deepcopy(yaml.safe_load(before))
    holder = expected
    for part in path:
        holder = holder.setdefault(part, {})
    holder[key] = value
    try:
        loaded = yaml.safe_load(after)
    except yaml.YAMLError as error:
        raise YamlEditError(f"the edited file would not be valid YAML: {error}") from None
    if loaded != expected:
        raise YamlEditError("the edited file would not read back as the document plus the entry")
