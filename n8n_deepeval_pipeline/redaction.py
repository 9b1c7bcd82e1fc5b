"""Credentials out of text: every error message passes through ``redact`` before it is kept.

Messages are stored, logged and shown, and servers echo what they were sent ("Invalid
key: Bearer sk-…"). So a message may hold a key this process knows, removed literally,
or one only its shape gives away: a bearer token, the value of a key header, query
parameter or JSON field, a URL's user-info, an ``sk-`` key.

Besides error messages, whatever the process prints or stores (tables, report files) is
taken out of every configured secret by value (``configured_secrets``): the environment's
keys, tokens and passwords, the credentials its URLs carry, and the variables a loaded
benchmark reads. A secret shorter than ``MIN_SECRET_LENGTH`` is left in: taken out by
value, a one-character key would turn "expected" into "e[redacted]pected".
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit

REDACTED = "[redacted]"
# Shorter values are not taken out of text by value: they are too often part of a word
# (every key a provider issues is longer; `validate` warns about a shorter one).
MIN_SECRET_LENGTH = 8

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
    text = redact_values(text, secrets)
    for pattern, replacement, _ in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_values(text: str, secrets: Iterable[str]) -> str:
    """``text`` without the given secrets, each taken out literally (the short ones left)."""
    for secret in sorted(
        {secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH}, key=len, reverse=True
    ):
        text = text.replace(secret, REDACTED)
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


# Environment variables whose name marks a credential: every provider's key variable
# (OPENAI_API_KEY, N8N_API_KEY, N8N_DEEPEVAL_JUDGE_API_KEY, …), tokens, passwords.
_SECRET_VARIABLE = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(_|$)", re.IGNORECASE
)
# Variables a loaded benchmark reads (target.env, apiKeyEnv, …), whatever their name.
_NAMED_SECRETS: set[str] = set()


def is_secret_variable(name: str) -> bool:
    """Whether an environment variable of this name holds a credential, by its name alone."""
    return bool(_SECRET_VARIABLE.search(name)) or name in _NAMED_SECRETS


def treat_as_secrets(names: Iterable[str]) -> None:
    """Count these environment variables' values among the configured secrets from now on.

    A benchmark's templates and judges name variables (``target.env``, ``apiKeyEnv``) whose
    values a header or a URL carries: a server may echo them back into an answer.
    """
    _NAMED_SECRETS.update(names)


def secret_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each set variable that is a secret (by its name, or named by a benchmark) → its value.

    A URL-valued variable counts for the credentials it carries (``secret_values``).
    """
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items() if value and is_secret_variable(name)}


def configured_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret this process is configured with, by value: what no output may hold.

    The secret variables' values, and the password and credential query parameters of
    every URL a variable holds (a proxy's, a database's, a gateway's ``?token=``).
    """
    environ = os.environ if environ is None else environ
    found = list(secret_variables(environ).values())
    found += [
        secret for value in environ.values() if "://" in value for secret in url_secrets(value)
    ]
    return [secret for secret in dict.fromkeys(found) if len(secret) >= MIN_SECRET_LENGTH]


def too_short_to_redact(
    names: Iterable[str], environ: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Those of the variables ``names`` set to a value too short to take out by value: length."""
    environ = os.environ if environ is None else environ
    lengths = {name: len(environ.get(name, "").strip()) for name in names}
    return {name: n for name, n in lengths.items() if 0 < n < MIN_SECRET_LENGTH}


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
