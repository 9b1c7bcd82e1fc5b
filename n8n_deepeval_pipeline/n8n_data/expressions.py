"""n8n expressions over a run's item (``={{ $json.output }}``), read as data, never run.

n8n stores a parameter that starts with ``=`` as an expression: text in which each
``{{ … }}`` is evaluated against the item (``$json``). Without the ``=`` the value is
fixed text. This module reads the part of that language that picks fields of an item:

- paths into the item: ``$json.output``, ``$json.result.answer``,
  ``$json["my field"][0]``, ``$json.result?.answer``, and ``$input.item.json`` as
  another name for ``$json``;
- text literals (``'…'`` or ``"…"``) and ``+`` between operands (text concatenation, or
  a sum when every operand is a number);
- fixed text around the ``{{ }}`` blocks (``=Q: {{ $json.input }}``).

Anything else (other nodes' data such as ``$node[…]`` or ``$('…')``, function and method
calls, other operators) is refused by ``parse_expression`` with a message that says what
is supported. A path walks objects by key and lists by index, and reads a string that
holds JSON text (an output stored as text) as the structure it holds. A path that finds
nothing, or finds null, raises ``NothingFoundError`` naming the path.

``parse_path`` and ``resolve_path`` read the same paths without ``$json`` (``a.b.0``,
``row["my column"]``), as the seed's Consistency node reads its ``labelField``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Segment = str | int
Segments = tuple[Segment, ...]

PATH_SUPPORTED = (
    "field names separated by dots (evalContext.caseId, row.my column, result.answer), "
    'each optionally followed by [index] or ["name"]'
)
SUPPORTED = (
    "a fixed text, or '=' then text with {{ … }} blocks holding paths into the run's item "
    '($json.output, $json.result.answer, $json["my field"][0], $json.a?.b, '
    "$input.item.json.a), 'text' literals, and + between them"
)

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_INDEX = re.compile(r"\d+")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "`": "`"}
# Names n8n offers in expressions that read something other than the item itself.
_OTHER_SOURCES = {
    "$node": "another node's output",
    "$items": "another node's items",
    "$item": "another item",
    "$prevNode": "the previous node",
    "$env": "the environment",
    "$vars": "n8n variables",
    "$secrets": "external secrets",
    "$execution": "the execution",
    "$workflow": "the workflow",
    "$parameter": "node parameters",
    "$now": "the clock",
    "$today": "the clock",
    "$jmespath": "a function",
    "$if": "a function",
    "$max": "a function",
    "$min": "a function",
    "$fromAI": "a function",
}


class ExpressionError(ValueError):
    """The expression uses something beyond ``$json`` paths, text literals and ``+``."""


class NothingFoundError(LookupError):
    """A path found no value (or null) in the item."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path} found nothing")


@dataclass(frozen=True)
class ItemPath:
    """A path into the item, with the text it was written as."""

    segments: Segments
    text: str


@dataclass(frozen=True)
class TextLiteral:
    """A quoted text inside ``{{ }}``."""

    value: str


Operand = ItemPath | TextLiteral


@dataclass(frozen=True)
class Block:
    """One ``{{ … }}``: operands joined with ``+``."""

    operands: tuple[Operand, ...]


@dataclass(frozen=True)
class Expression:
    """A parsed parameter value: fixed text and ``{{ }}`` blocks, in order."""

    source: str
    parts: tuple[str | Block, ...]

    @property
    def is_fixed(self) -> bool:
        """Whether the value reads nothing from the item (fixed text)."""
        return not any(isinstance(part, Block) for part in self.parts)

    def paths(self) -> tuple[str, ...]:
        """The item paths the expression reads, as written."""
        return tuple(
            operand.text
            for part in self.parts
            if isinstance(part, Block)
            for operand in part.operands
            if isinstance(operand, ItemPath)
        )

    def evaluate(self, item: Mapping[str, Any]) -> Any:
        """The value for ``item``: a lone ``{{ }}`` keeps its type, anything else is text.

        Raises ``NothingFoundError`` when a path finds nothing.
        """
        if len(self.parts) == 1 and isinstance(self.parts[0], Block):
            return _block_value(self.parts[0], item)
        return "".join(
            part if isinstance(part, str) else as_text(_block_value(part, item))
            for part in self.parts
        )


def as_text(value: Any) -> str:
    """A value as n8n prints it in text: strings as they are, other values as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _block_value(block: Block, item: Mapping[str, Any]) -> Any:
    values = [
        operand.value
        if isinstance(operand, TextLiteral)
        else _found(resolve_path(item, operand.segments), operand.text)
        for operand in block.operands
    ]
    if len(values) == 1:
        return values[0]
    if all(_is_number(value) for value in values):
        return sum(values)
    return "".join(as_text(value) for value in values)


def _found(value: Any, path: str) -> Any:
    if value is None:
        raise NothingFoundError(path)
    return value


def _step(value: Any, segment: Segment) -> Any:
    """One step of a path; None when there is nothing there."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, Mapping):
        return value.get(str(segment))
    if isinstance(value, list):
        index = segment if isinstance(segment, int) else None
        if isinstance(segment, str) and _INDEX.fullmatch(segment):
            index = int(segment)
        return value[index] if index is not None and index < len(value) else None
    return None


def resolve_path(item: Any, segments: Segments) -> Any:
    """The value at ``segments`` in ``item``, or None when there is nothing there."""
    value = item
    for segment in segments:
        value = _step(value, segment)
        if value is None:
            return None
    return value


class _Reader:
    """A cursor over an expression's text; every error names the expression."""

    def __init__(self, text: str, position: int, whole: str, supported: str = SUPPORTED) -> None:
        self.text = text
        self.position = position
        self.whole = whole
        self.supported = supported

    def fail(self, reason: str) -> ExpressionError:
        return ExpressionError(f"{reason} in {self.whole!r}; supported: {self.supported}")

    def skip_spaces(self) -> None:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1

    def peek(self, length: int = 1) -> str:
        return self.text[self.position : self.position + length]

    def take(self, expected: str) -> bool:
        if self.text.startswith(expected, self.position):
            self.position += len(expected)
            return True
        return False

    def identifier(self) -> str | None:
        match = _IDENTIFIER.match(self.text, self.position)
        if match is None:
            return None
        self.position = match.end()
        return match.group()

    def string(self) -> str:
        quote = self.text[self.position]
        self.position += 1
        chars: list[str] = []
        while self.position < len(self.text):
            char = self.text[self.position]
            self.position += 1
            if char == quote:
                return "".join(chars)
            if char == "\\" and self.position < len(self.text):
                escaped = self.text[self.position]
                self.position += 1
                chars.append(_ESCAPES.get(escaped, escaped))
            else:
                chars.append(char)
        raise self.fail(f"an unclosed {quote} quote")


def _refuse_name(reader: _Reader, name: str) -> ExpressionError:
    if name == "$" and reader.peek() == "(":
        return reader.fail("$('…') reads another node's output, which is not supported")
    if name in _OTHER_SOURCES:
        return reader.fail(f"{name} reads {_OTHER_SOURCES[name]}, which is not supported")
    if reader.peek() == "(":
        return reader.fail(f"calling {name}(…) is not supported")
    if name.startswith("$"):
        return reader.fail(f"{name} is not supported")
    return reader.fail(f"a bare name {name!r} (write $json.{name})")


def _path(reader: _Reader, start: int) -> ItemPath:
    segments: list[Segment] = []
    while True:
        optional = reader.take("?.")
        if optional and reader.peek() == "[":
            pass
        elif optional or reader.take("."):
            name = reader.identifier()
            if name is None:
                raise reader.fail("a '.' not followed by a field name")
            segments.append(name)
            continue
        if not reader.take("["):
            break
        reader.skip_spaces()
        if reader.peek() in ("'", '"'):
            segments.append(reader.string())
        else:
            match = _INDEX.match(reader.text, reader.position)
            if match is None:
                raise reader.fail("a [ … ] that holds neither a quoted name nor an index")
            reader.position = match.end()
            segments.append(int(match.group()))
        reader.skip_spaces()
        if not reader.take("]"):
            raise reader.fail("a '[' without its ']'")
    if reader.peek() == "(":
        called = segments[-1] if segments else "$json"
        raise reader.fail(f"calling .{called}(…) is not supported (no function or method calls)")
    return ItemPath(tuple(segments), reader.text[start : reader.position])


def _operand(reader: _Reader) -> Operand:
    reader.skip_spaces()
    start = reader.position
    if reader.peek() in ("'", '"'):
        return TextLiteral(reader.string())
    name = reader.identifier()
    if name is None:
        shown = reader.peek() or "the end"
        raise reader.fail(f"unexpected {shown!r} where a $json path or a 'text' was expected")
    if name == "$input":
        if not (reader.take(".item.json") and not _IDENTIFIER.match(reader.peek())):
            raise reader.fail("$input is supported only as $input.item.json")
        return _path(reader, start)
    if name == "$json":
        return _path(reader, start)
    raise _refuse_name(reader, name)


def _block(reader: _Reader) -> Block:
    operands = [_operand(reader)]
    while True:
        reader.skip_spaces()
        if reader.take("}}"):
            return Block(tuple(operands))
        if reader.take("+"):
            operands.append(_operand(reader))
            continue
        if reader.position >= len(reader.text):
            raise reader.fail("a '{{' without its '}}'")
        raise reader.fail(f"unsupported {reader.peek()!r} (only + joins operands)")


def parse_expression(text: str) -> Expression:
    """Parse a parameter value as n8n stores it; ``ExpressionError`` if it is unsupported."""
    if not text.startswith("="):
        if "{{" in text:
            raise ExpressionError(
                f"{text!r} has {{{{ }}}} but does not start with '=': n8n would judge that "
                f"text verbatim; write '={text.strip()}' for an expression"
            )
        return Expression(text, (text,) if text else ())
    body = text[1:]
    parts: list[str | Block] = []
    position = 0
    while True:
        start = body.find("{{", position)
        if start < 0:
            parts.append(body[position:])
            break
        parts.append(body[position:start])
        reader = _Reader(body, start + 2, text)
        reader.skip_spaces()
        if reader.take("}}"):
            raise reader.fail("an empty {{ }}")
        parts.append(_block(reader))
        position = reader.position
    return Expression(text, tuple(part for part in parts if part != ""))


def parse_path(text: str) -> Segments:
    """A path into an item as the seed writes it (``a.b``, ``row.my column``, ``a[0]``).

    Segments are separated by dots and may be followed by ``[index]`` or ``["name"]``;
    a segment is any text without dots or brackets.
    """
    reader = _Reader(text, 0, text, PATH_SUPPORTED)
    if not text.strip():
        raise reader.fail("an empty path")
    segments: list[Segment] = []
    while True:
        start = reader.position
        while reader.position < len(text) and text[reader.position] not in ".[]":
            reader.position += 1
        name = text[start : reader.position]
        if name:
            segments.append(name)
        elif not segments or reader.peek() != "[":
            raise reader.fail("an empty segment")
        while reader.take("["):
            if reader.peek() in ("'", '"'):
                segments.append(reader.string())
            else:
                match = _INDEX.match(text, reader.position)
                if match is None:
                    raise reader.fail("a [ … ] without an index or a quoted name")
                reader.position = match.end()
                segments.append(int(match.group()))
            if not reader.take("]"):
                raise reader.fail("a '[' without its ']'")
        if reader.position >= len(text):
            return tuple(segments)
        if not reader.take("."):
            raise reader.fail(f"unexpected {reader.peek()!r}")


@dataclass(frozen=True)
class ItemReference:
    """A field of an item an n8n expression reads: of the current item, or of a named node's."""

    node: str | None  # None: the current item ($json, $input.item.json)
    segments: Segments


# Where an item's json starts, in the spellings n8n offers: $json, $input.item.json,
# $input.first().json, $('Node').item.json (also .first(), .last(), .all()[0]) and
# $node["Node"].json. Only the start is matched; the path after it is read below.
_REFERENCE_START = re.compile(
    r"""\$json\b
    | \$input\s*\.\s*(?:item|first\(\s*\)|last\(\s*\))\s*\.\s*json\b
    | \$\(\s*(?P<q1>['"])(?P<called>.+?)(?P=q1)\s*\)\s*\.\s*
        (?:item|first\(\s*\)|last\(\s*\)|all\(\s*\)\s*\[\s*\d+\s*\])\s*\.\s*json\b
    | \$node\s*\[\s*(?P<q2>['"])(?P<indexed>.+?)(?P=q2)\s*\]\s*\.\s*json\b""",
    re.VERBOSE,
)
_FIELD_STEP = re.compile(
    r"""\??\.\s*(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)(?![A-Za-z0-9_$]|\s*\()
    | \[\s*(?:(?P<q>['"])(?P<quoted>.*?)(?P=q)|(?P<index>\d+))\s*\]""",
    re.VERBOSE,
)


_ONE_BLOCK = re.compile(r"=\s*\{\{\s*(?P<inner>.*?)\s*\}\}\s*", re.DOTALL)


def whole_reference(text: str) -> ItemReference | None:
    """The item field an expression is, when it is one and nothing else (a memory's key).

    ``={{ $json.body.sessionId }}`` is ``body.sessionId`` of the current item; a call, an
    operator or text around it (``={{ $json.user + '-chat' }}``) is not one field: None.
    """
    block = _ONE_BLOCK.fullmatch(text)
    if block is None:
        return None
    inner = block["inner"]
    found = item_references(f"={{{{ {inner} }}}}")
    start = _REFERENCE_START.match(inner)
    if len(found) != 1 or start is None:
        return None
    position = start.end()
    while (step := _FIELD_STEP.match(inner, position)) is not None:
        position = step.end()
    return found[0] if position == len(inner) else None


def item_references(text: str) -> list[ItemReference]:
    """The item fields an expression reads, in order (a fixed text reads none).

    Unlike ``parse_expression`` this reads any JavaScript n8n accepts and only looks for
    the references: a path ends where a method call or an operator begins, so
    ``$json.body.question.trim()`` reads ``body.question``.
    """
    if not text.startswith("=") or "{{" not in text:
        return []
    found: list[ItemReference] = []
    for start in _REFERENCE_START.finditer(text):
        segments: list[Segment] = []
        position = start.end()
        while (step := _FIELD_STEP.match(text, position)) is not None:
            if step["name"] is not None:
                segments.append(step["name"])
            elif step["quoted"] is not None:
                segments.append(step["quoted"])
            else:
                segments.append(int(step["index"]))
            position = step.end()
        found.append(ItemReference(start["called"] or start["indexed"], tuple(segments)))
    return found
