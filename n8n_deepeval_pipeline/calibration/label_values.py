"""A person's label as written in a file or a table cell: pass/fail, true/false, 1/0, or 1–5.

Words (pass, fail, true, false, yes, no) are verdicts wherever they are. A number is
read by the metric's labels: ``1`` is a pass among pass/fail labels and the worst rating
among ratings, so a metric whose labels in the file include a 2, 3, 4 or 5 has its
numbers read as 1–5 ratings, and otherwise 1 and 0 as pass and fail. A rating gives a
verdict too, for Cohen's kappa: 4 and 5 pass, 1 and 2 fail, and 3 (neither) gives none,
counting only where ratings are compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

_PASS = frozenset({"pass", "passed", "true", "yes", "1", "y", "t", "ok"})
_FAIL = frozenset({"fail", "failed", "false", "no", "0", "n", "f"})
_RATINGS = ("1", "2", "3", "4", "5")
RATING_PASSES_FROM = 4
RATING_FAILS_UP_TO = 2


class LabelValue(NamedTuple):
    """What a label says: the verdict (None: a 3 gave none) and the rating, if any."""

    passed: bool | None
    rating: int | None


def _text(value: Any) -> str:
    """A cell as the text it shows: 1.0 and True read as 1 and true."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip().lower()


def is_blank(value: Any) -> bool:
    """Whether a cell holds no label (a row left for later)."""
    return value is None or (isinstance(value, float) and value != value) or _text(value) == ""


def holds_ratings(values: Iterable[Any]) -> bool:
    """Whether a metric's labels are read as 1–5 ratings: one of them is 2, 3, 4 or 5."""
    return any(not is_blank(value) and _text(value) in _RATINGS[1:] for value in values)


def rating_verdict(rating: int) -> bool | None:
    """The verdict a rating gives: 4–5 pass, 1–2 fail, 3 none."""
    if rating >= RATING_PASSES_FROM:
        return True
    if rating <= RATING_FAILS_UP_TO:
        return False
    return None


def read_rating(value: Any) -> int:
    """A 1–5 rating; anything else is a ValueError that says what was found."""
    text = _text(value)
    if text not in _RATINGS:
        raise ValueError(f"{value!r} is not a rating from 1 to 5")
    return int(text)


def read_label(value: Any, ratings: bool) -> LabelValue:
    """A label cell: a word is a verdict; a number a rating when ``ratings``, else 1 or 0."""
    text = _text(value)
    if ratings and text in _RATINGS:
        rating = int(text)
        return LabelValue(rating_verdict(rating), rating)
    if text in _PASS and not (ratings and text == "1"):
        return LabelValue(True, None)
    if text in _FAIL and not (ratings and text == "0"):
        return LabelValue(False, None)
    if ratings and text.isdigit():
        raise ValueError(
            f"{value!r} is not a rating from 1 to 5 (this metric's labels are ratings)"
        )
    raise ValueError(f"{value!r} is not a label: write pass or fail, true or false, 1 or 0, or 1–5")


def label_text(passed: bool | None) -> str:
    """A verdict as files and tables write it: pass, fail, or empty."""
    return "" if passed is None else ("pass" if passed else "fail")
