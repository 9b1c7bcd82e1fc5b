"""Cron expressions as Dagster's schedules take them (five fields), checked without Dagster.

``schedule: "61 * * * *"`` must be refused by ``validate``, not by the UI when the
schedule is built. Accepted per field: ``*``, numbers and names in range, ``a-b``, a
``/step``, lists; ``L`` (last day) in the day of month; ``1#2`` (the second Monday) in
the day of week. A test checks the verdicts against Dagster's own.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class _Field(NamedTuple):
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] stands for low + i


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 7, _DAYS),
)
_ITEM = re.compile(r"^(?P<span>\*|\?|\w+(?:-\w+)?)(?:/(?P<step>\d+))?$")
_NTH_WEEKDAY = re.compile(r"^(?P<day>\w+)#[1-5]$")
_SHAPE = "must be a 5-field cron expression such as '0 2 * * *'"


def cron_problem(expression: str) -> str | None:
    """What is wrong with ``expression``, or None when Dagster will take it."""
    fields = expression.split()
    if len(fields) != len(_FIELDS):
        return _SHAPE
    for field, text in zip(_FIELDS, fields, strict=True):
        for item in text.split(","):
            problem = _item_problem(field, item)
            if problem is not None:
                return f"{field.name} {text!r}: {problem}"
    day, month = fields[2], fields[3]
    if month in ("2", "feb", "FEB") and day in ("30", "31"):
        return f"day of month {day!r}: February has no day {day}"
    return None


def _item_problem(field: _Field, item: str) -> str | None:
    if field.name == "day of month" and item == "L":
        return None
    nth = _NTH_WEEKDAY.match(item) if field.name == "day of week" else None
    if nth is not None:
        return _value_problem(field, nth["day"])
    match = _ITEM.match(item)
    if match is None:
        return f"{item!r} is not a value, a range or a step"
    if match["step"] is not None and int(match["step"]) == 0:
        return "a step must be at least 1"
    if match["span"] in ("*", "?"):
        return None
    problems = [_value_problem(field, value) for value in match["span"].split("-")]
    return next((problem for problem in problems if problem), None)


def _value_problem(field: _Field, value: str) -> str | None:
    number = _number(field, value)
    if field.low <= number <= field.high:
        return None
    names = f" or {field.names[0].upper()}-{field.names[-1].upper()}" if field.names else ""
    return f"{value} is not in {field.low}-{field.high}{names}"


def _number(field: _Field, value: str) -> int:
    """The value as a number; -1 (out of every range) when it is neither number nor name."""
    if value.isdigit():
        return int(value)
    name = value.lower()
    return field.names.index(name) + field.low if name in field.names else -1
