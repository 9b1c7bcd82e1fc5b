"""Credentials out of text: every error message passes through ``redact`` before it is kept.

Messages are stored, logged and shown, and servers echo what they were sent ("Invalid
key: Bearer sk-…"). So a message may hold a key this process knows, removed literally,
or one only its shape gives away: a bearer token, the value of a key header, query
parameter or JSON field, a URL's user-info, an ``sk-`` key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

REDACTED = "[redacted]"

# Names whose value is a credential. The words too common in prose to mark a header
# ("Invalid key: …") count only in a query ("?token=…") or as a quoted field ("token": "…").
_FIELD_NAME = (
    r"(?:x-)?api[-_]?key|(?:access|auth|refresh)[-_]?token|client[-_]?secret|secret|passw(?:or)?d"
)
_QUERY_NAME = rf"{_FIELD_NAME}|key|token|sig|signature"
# never "[redacted]" nor a "Bearer …" scheme
_VALUE = r"(?P<value>(?!bearer\s)[^\s\"'&,;#\[\]{}]+)"
# (shape, replacement, whether the shape marks a credential outside prose too)
_PATTERNS = (
    (re.compile(rf"(?i)\b(bearer\s+){_VALUE}"), rf"\1{REDACTED}", True),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?P<value>[^\s/@]+)@"), rf"\1{REDACTED}@", True),
    (re.compile(rf"(?i)(?<![\w-])({_QUERY_NAME})(=){_VALUE}"), rf"\1\2{REDACTED}", True),
    (
        re.compile(rf"(?i)([\"'](?:{_QUERY_NAME})[\"']\s*:\s*[\"']){_VALUE}"),
        rf"\1{REDACTED}",
        True,
    ),
    # "password: …" unquoted: in code or a template the value is as often a variable
    (
        re.compile(rf"(?i)(?<![\w-])({_FIELD_NAME})([\"']?\s*:\s*[\"']?){_VALUE}"),
        rf"\1\2{REDACTED}",
        False,
    ),
    (re.compile(r"\b(?P<value>sk-[A-Za-z0-9_-]{8,})"), REDACTED, True),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given secrets and without anything shaped like a credential."""
    for secret in sorted(set(filter(None, secrets)), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement, _ in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def credential_values(text: str, prose: bool = True) -> list[str]:
    """The credential-shaped values in ``text``: what ``redact`` would hide by shape.

    ``prose=False`` leaves out the shape only prose gives away (``password: …`` unquoted):
    in code or a template its value is as often a variable as a secret.
    """
    return [
        match.group("value")
        for pattern, _, outside_prose in _PATTERNS
        if prose or outside_prose
        for match in pattern.finditer(text)
    ]


def is_credential_name(name: str) -> bool:
    """Whether a field, header or parameter of this name holds a credential.

    ``apiKey``, ``x-api-key``, ``client_secret``, ``password``, ``token``, ``key``, …:
    a credential word anywhere in the name, or one of the short words as the whole name.
    """
    return bool(
        re.search(_FIELD_NAME, name, re.IGNORECASE)
        or re.fullmatch(_QUERY_NAME, name, re.IGNORECASE)
    )


def url_secrets(url: str | None) -> list[str]:
    """The credentials a URL carries: its password and its credential query parameters."""
    if not url:
        return []
    parts = urlsplit(url)
    found = [parts.password] + [
        value
        for name, value in parse_qsl(parts.query)
        if re.fullmatch(_QUERY_NAME, name, re.IGNORECASE)
    ]
    return [secret for secret in found if secret]


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# International (+49 151 1234567, +4915112345678) or grouped (030 1234 5678, (555) 123-4567);
# fewer than 9 digits is left alone, so dates (2026-12-01) and short ids stay.
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{8,15}|(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,5}(?:[\s.-]\d{2,8}){1,4})(?!\w)"
)
_PHONE_DIGITS = 9
REDACTED_EMAIL = "[redacted e-mail]"
REDACTED_PHONE = "[redacted phone]"


def _phone_or_not(match: re.Match[str]) -> str:
    digits = sum(char.isdigit() for char in match.group())
    return REDACTED_PHONE if digits >= _PHONE_DIGITS else match.group()


def redact_personal(text: str) -> str:
    """``redact`` and also the e-mail addresses and phone numbers in ``text``.

    For what users typed (execution data made into datasets), where a credential is
    as unwelcome as a customer's address.
    """
    text = _EMAIL.sub(REDACTED_EMAIL, redact(text))
    return _PHONE.sub(_phone_or_not, text)
