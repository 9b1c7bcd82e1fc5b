"""Request templates for calling a workflow: Jinja2's sandbox, so a template runs no code.

A string that is one expression (``"{{ expectedTools }}"``) keeps the value's type; any
other string is rendered as text. An unknown name is an error that names it.
``env_names`` tells which environment variables a template reads, so that a benchmark
file can be held to the ones it lists.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined, nodes
from jinja2.sandbox import SandboxedEnvironment

_ONE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>[^{}]*)\}\}\s*$")
_SANDBOX = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


class TemplateRenderError(ValueError):
    """A template refers to something that is not there, or is not a valid template."""


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
            value = _SANDBOX.compile_expression(single["expr"], undefined_to_none=False)(**context)
            if isinstance(value, Undefined):
                value._fail_with_undefined_error()  # raises UndefinedError, naming the name
            return value
        return _SANDBOX.from_string(template).render(**context)
    except TemplateError as error:
        raise TemplateRenderError(f"template {template!r}: {error.message}") from None


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
