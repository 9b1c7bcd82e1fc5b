"""What the review page's forms carry, read field by field: the reviewer's name, a label.

A label form has, for each metric under review, ``verdict:<metric>`` (pass or fail),
``rating:<metric>`` (1–5, or empty) and ``comment:<metric>``; the metric's label follows
the first colon (a red team's metric holds one itself). A problem is said with the field
it is in; which metrics a run needs labels for is the review queue's to say.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote, unquote

from pydantic import ValidationError
from starlette.datastructures import FormData

from n8n_deepeval_pipeline.calibration.review_queue import MetricLabel

REVIEWER_COOKIE = "n8n_deepeval_reviewer"
REVIEWER_MAX_CHARS = 80
_FIELDS = ("verdict", "rating", "comment")
_VERDICTS = {"pass": True, "fail": False}


class FormProblem(ValueError):
    """A field of a form that does not read: said with the field's name."""


def reviewer_name(value: str | None) -> str:
    """A reviewer's name as given: trimmed, not empty, not too long, no control characters.

    Any other character is kept (quotes, slashes, accents, any script): the name is stored
    as it is and shown escaped; the queue file's name is made safe on its own.
    """
    name = (value or "").strip()
    if not name:
        raise FormProblem("field reviewer: give your name, as your labels will carry it")
    if len(name) > REVIEWER_MAX_CHARS:
        raise FormProblem(f"field reviewer: at most {REVIEWER_MAX_CHARS} characters")
    if any(unicodedata.category(character).startswith("C") for character in name):
        raise FormProblem("field reviewer: a name without control or invisible characters")
    return name


def cookie_value(name: str) -> str:
    """The reviewer's name as the cookie keeps it (percent-encoded: any character survives)."""
    return quote(name, safe="")


def reviewer_from_cookie(value: str | None) -> str | None:
    """The reviewer the browser remembers (None: none, or a cookie that does not read)."""
    if not value:
        return None
    try:
        return reviewer_name(unquote(value, errors="strict"))
    except (FormProblem, UnicodeDecodeError):
        return None


def _split(key: str) -> tuple[str, str] | None:
    kind, colon, metric = key.partition(":")
    if not colon or kind not in _FIELDS or not metric:
        return None
    return kind, metric


def _text(form: FormData, key: str) -> str:
    value = form.get(key)
    if not isinstance(value, str):
        raise FormProblem(f"field {key}: text expected")
    return value.strip()


def label_fields(form: FormData) -> dict[str, MetricLabel]:
    """The labels a form gives, by metric: every metric a verdict, rating or comment names.

    A metric whose fields are all empty is left out (it has no label); the queue says which
    metrics a run needs.
    """
    given: dict[str, dict[str, object]] = {}
    for key in form:
        split = _split(key)
        if split is None:
            continue
        kind, metric = split
        text = _text(form, key)
        if not text:
            continue
        fields = given.setdefault(metric, {})
        if kind == "verdict":
            if text not in _VERDICTS:
                raise FormProblem(f"field {key}: {text!r} is neither pass nor fail")
            fields["passed"] = _VERDICTS[text]
        elif kind == "rating":
            fields["rating"] = text
        else:
            fields["comment"] = text
    return {metric: _metric_label(metric, fields) for metric, fields in given.items()}


def _metric_label(metric: str, fields: dict[str, object]) -> MetricLabel:
    try:
        return MetricLabel.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        field = {"passed": "verdict"}.get(str(first["loc"][0]), str(first["loc"][0]))
        said = _RATING_SAID if field == "rating" else first["msg"]
        raise FormProblem(f"field {field}:{metric}: {said}") from None


_RATING_SAID = "a rating is a whole number from 1 to 5"
