"""Request templates for calling a workflow: Jinja2's sandbox, so a template runs no code.

A string that is one expression (``"{{ expectedTools }}"``) keeps the value's type, a
copy of it when it is an object or a list (the caller may add to what it is given, as a
session field is added to a body, and must not change the row it came from); any other
string is rendered as text. An unknown name is an error that names it.
``env_names`` tells which environment variables a template reads, so that a benchmark
file can be held to the ones it lists. ``render_url`` percent-encodes each value for the
part of the URL it lands in, so that a row id cannot change the path, query or fragment.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from jinja2 import StrictUndefined, Template, TemplateError, Undefined, nodes
from jinja2.sandbox import SandboxedEnvironment

from n8n_deepeval_pipeline.redaction import redact

_ONE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>[^{}]*)\}\}\s*$")
# A URL template that starts with an environment variable: its base, inserted as it is.
_ENV_BASE = re.compile(r"^\s*\{\{\s*env\s*[.\[]")
_SANDBOX = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


# Each value of a URL template is held as a marker until its part of the URL is known.
_MARK = re.compile("\ue000([0-9]+)\ue001")
_URL_TOKENS = re.compile("(\ue000[0-9]+\ue001|[/?#])")
# Where the URL goes after a delimiter, from each part.
_NEXT_PART = {
    "authority": {"/": "path", "?": "query", "#": "fragment"},
    "path": {"?": "query", "#": "fragment"},
    "query": {"#": "fragment"},
    "fragment": {},
}


# Compiled once per template text: compiling took ~3 ms a string, 25 ms a default body,
# on every call of a workflow (a simulated conversation makes one per turn).
@functools.lru_cache(maxsize=1024)
def _expression(source: str) -> Callable[..., Any]:
    return _SANDBOX.compile_expression(source, undefined_to_none=False)


@functools.lru_cache(maxsize=1024)
def _template(source: str) -> Template:
    return _SANDBOX.from_string(source)


class TemplateRenderError(ValueError):
    """A template refers to something that is not there, or is not a valid template."""


def _failure(template: str, error: Exception, context: dict[str, Any]) -> TemplateRenderError:
    """The error of one template, without the values of its variables (Jinja quotes them)."""
    secrets = [str(value) for value in (context.get("env") or {}).values() if value]
    text = error.message if isinstance(error, TemplateError) else f"{type(error).__name__}: {error}"
    return TemplateRenderError(redact(f"template {template!r}: {text}", secrets))


def render(template: Any, context: dict[str, Any]) -> Any:
    """The template with every string rendered against ``context`` (objects recursively)."""
    if isinstance(template, dict):
        return {key: render(value, context) for key, value in template.items()}
    if isinstance(template, list):
        return [render(value, context) for value in template]
    if not isinstance(template, str) or "{" not in template:
        return template
    try:
        single = _ONE_EXPRESSION.match(template)
        if single:
            value = _expression(single["expr"])(**context)
            if isinstance(value, Undefined):
                value._fail_with_undefined_error()  # raises UndefinedError, naming the name
            return copy.deepcopy(value) if isinstance(value, dict | list) else value
        return _template(template).render(**context)
    except Exception as error:  # any failure of one template is that run's, not the step's
        raise _failure(template, error, context) from None


def render_url(template: str, context: dict[str, Any]) -> str:
    """The URL with each value percent-encoded for its part: host, path, query, fragment.

    An environment variable that starts the template is the URL's base
    (``{{ env.N8N_URL }}/webhook/x``) and is inserted as it is.
    """
    if "{" not in template:
        return template
    values: list[str] = []

    def hold(value: Any) -> str:
        values.append(str(value))
        return f"\ue000{len(values) - 1}\ue001"

    try:
        marked = _SANDBOX.overlay(finalize=hold).from_string(template).render(**context)
    except Exception as error:
        raise _failure(template, error, context) from None
    lead = _MARK.match(marked)
    if lead is not None and _ENV_BASE.match(template):
        marked = values[int(lead[1])] + marked[lead.end() :]
    return _encoded(marked, values)


def _encoded(marked: str, values: list[str]) -> str:
    scheme, separator, rest = marked.partition("://")
    if not separator or _MARK.search(scheme):
        scheme, separator, rest, part = "", "", marked, "path"
    else:
        part = "authority"
    pieces = [scheme + separator]
    for token in _URL_TOKENS.split(rest):
        mark = _MARK.fullmatch(token)
        if mark is not None:
            pieces.append(_encode(values[int(mark[1])], part))
        else:
            part = _NEXT_PART[part].get(token, part)
            pieces.append(token)
    return "".join(pieces)


def _encode(value: str, part: str) -> str:
    # In the host a port may follow (':'); anywhere else every delimiter is encoded, and a
    # value of only dots too, so it cannot become a '..' segment.
    encoded = quote(value, safe=":" if part == "authority" else "")
    return encoded.replace(".", "%2E") if part == "path" and set(value) == {"."} else encoded


def env_names(template: Any) -> set[str]:
    """The names ``template`` reads as ``env.NAME`` or ``env['NAME']`` (objects recursively)."""
    if isinstance(template, dict | list):
        values = template.values() if isinstance(template, dict) else template
        return set().union(*(env_names(value) for value in values))
    if not isinstance(template, str) or "{" not in template:
        return set()
    try:
        tree = _SANDBOX.parse(template)
    except TemplateError as error:
        raise TemplateRenderError(f"template {template!r}: {error.message}") from None
    names = set()
    for node in tree.find_all(nodes.Getattr):
        if _is_env(node.node):
            names.add(node.attr)
    for item in tree.find_all(nodes.Getitem):
        if _is_env(item.node) and isinstance(item.arg, nodes.Const):
            names.add(str(item.arg.value))
    return names


def _is_env(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "env"
