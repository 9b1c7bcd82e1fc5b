"""Cron expressions as Dagster's schedules take them (five fields), checked without Dagster.

``schedule: "61 * * * *"`` must be refused by ``validate``, not by the UI when the
schedule is built. The verdict is Dagster's own rule on croniter (the library Dagster
vendors): croniter takes the expression, it expands to five fields, and it is not the
30th or 31st of February; field rules (which also say which field is wrong, where
croniter only says "out of range") hold back the syntax newer croniter versions added.
A test checks the verdicts against Dagster's own.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from croniter import croniter


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
    # Dagster's vendored croniter is older: what the field rules refuse (``15W``) it refuses.
    explained = None if expression.startswith("@") else _explained(expression)
    if explained is not None or not croniter.is_valid(expression):
        return explained or f"{expression!r} is not a cron expression"
    fields = croniter.expand(expression)[0]
    if len(fields) != len(_FIELDS):
        return _SHAPE
    days, months = fields[2], fields[3]
    if months == [2] and len(days) == 1 and days[0] in (30, 31):
        return f"day of month {expression.split()[2]!r}: February has no day {days[0]}"
    return None


def _explained(expression: str) -> str | None:
    """The field croniter refused, in words (None when no field rule explains it)."""
    fields = expression.split()
    if len(fields) != len(_FIELDS):
        return _SHAPE
    for field, text in zip(_FIELDS, fields, strict=True):
        for item in text.split(","):
            problem = _item_problem(field, item)
            if problem is not None:
                return f"{field.name} {text!r}: {problem}"
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
    if match["span"] == "?" and field.name not in ("day of month", "day of week"):
        return "'?' stands only in the day of month or the day of week"
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
