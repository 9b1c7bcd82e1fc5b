"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it.

The workflow hash must not depend on which tool saved a workflow, so numbers are
printed the way JavaScript prints them (``2.0`` → ``2``, ``1e-07`` → ``1e-7``) and
strings are escaped the way ``JSON.stringify`` escapes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

# Integers beyond this lose precision in a JavaScript number; print them as JS would.
_MAX_SAFE_INTEGER = 2**53 - 1


def js_number(value: int | float) -> str:
    """Format a number with ECMAScript's Number::toString rules."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
        return str(value)
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return "null"  # JSON.stringify writes NaN and ±Infinity as null
    if number == 0:
        return "0"  # also for -0
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))
    return sign + _place_point(digits, point)


def _shortest_digits(number: float) -> tuple[str, int]:
    """Shortest round-trip digits and the decimal point position (value = 0.d1d2… × 10^point)."""
    mantissa, _, exponent = f"{number!r}".partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len((whole + fraction).lstrip("0"))
    point = len(whole) - leading_zeros + (int(exponent) if exponent else 0)
    return digits.rstrip("0") or "0", point


def _place_point(digits: str, point: int) -> str:
    k = len(digits)
    if k <= point <= 21:
        return digits + "0" * (point - k)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * (-point) + digits
    exponent = point - 1
    sign = "+" if exponent >= 0 else "-"
    mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
    return f"{mantissa}e{sign}{abs(exponent)}"


def stringify(value: Any) -> str:
    """Serialise like ``JSON.stringify(value)``: compact, no ASCII escaping, keys as given."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        members = (f"{stringify(str(k))}:{stringify(v)}" for k, v in value.items())
        return "{" + ",".join(members) + "}"
    if isinstance(value, Sequence):
        return "[" + ",".join(stringify(item) for item in value) + "]"
    raise TypeError(f"cannot serialise {type(value).__name__} as JSON")
