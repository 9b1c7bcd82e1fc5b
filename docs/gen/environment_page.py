"""The environment variables' reference page, written from their registry (``VARIABLES``)."""

from __future__ import annotations

from markdown_text import code, table

from n8n_deepeval_pipeline.environment_variables import GROUPS, VARIABLES


def page() -> str:
    """The environment variables' page, a table per group."""
    parts = [
        "# Environment variables\n",
        "Every variable the project reads, written from its registry "
        "(`n8n_deepeval_pipeline/environment_variables.py`), which the code reads them "
        "through. Secrets (keys, URLs with passwords) are read once, where the Dagster "
        "resources are built, and are never logged or stored. A judge's own key or base URL "
        "can also come from any variable its `apiKeyEnv` or `baseUrlEnv` names, and a "
        "webhook's templates read only the variables `target.env` lists.\n",
    ]
    for group in GROUPS:
        rows = [
            (code(variable.name), variable.shown_default, variable.meaning)
            for variable in VARIABLES
            if variable.group == group
        ]
        title = group if group == "n8n" else group.capitalize()
        parts += [f"## {title}\n", table(["variable", "default", "what"], rows)]
    return "\n".join(parts)
