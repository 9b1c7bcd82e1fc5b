"""Markdown pieces the reference pages are written with: tables, code spans, prose."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_RST_CODE = re.compile(r"``([^`]+)``")


def cell(text: str) -> str:
    """Text that fits in one table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table, every cell made to fit."""
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def code(text: object) -> str:
    """A code span that holds any text, backticks included."""
    value = str(text)
    fence = "``" if "`" in value else "`"
    padding = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{padding}{value}{padding}{fence}"


def prose(docstring: str | None) -> str:
    """A docstring as Markdown: its paragraphs kept, reST's ``code`` made `code`."""
    if not docstring:
        return ""
    paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", docstring.strip())]
    return "\n\n".join(_RST_CODE.sub(r"`\1`", part) for part in paragraphs if part)


def first_paragraph(docstring: str | None) -> str:
    """The first paragraph of a docstring, as Markdown on one line."""
    return prose(docstring).split("\n\n", 1)[0]


def listed(items: Sequence[str], last: str = "or") -> str:
    """`a`, `b` or `c`."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} {items[-1]}"
