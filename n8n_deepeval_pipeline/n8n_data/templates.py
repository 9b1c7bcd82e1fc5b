"""Request templates for calling a workflow: Jinja2's sandbox, so a template runs no code.

A string that is one expression (``"{{ expectedTools }}"``) keeps the value's type; any
other string is rendered as text. An unknown name is an error that names it.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined
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
