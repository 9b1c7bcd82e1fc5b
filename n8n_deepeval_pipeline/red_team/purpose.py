"""What the agent is for, as DeepTeam's attacks and judgements read it (``redTeam.purpose``).

By default it is read off the workflow, as ``init`` reads it: the agents' system messages
and the tools they are given, with their descriptions. It goes to the judge, so anything
shaped like a credential is taken out first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.workflow.anatomy import anatomy


def workflow_purpose(workflow: Mapping[str, Any]) -> str | None:
    """The agents' instructions and tools in a few sentences; None when it has no agent."""
    parts = anatomy(workflow)
    if not parts.agents:
        return None
    said = ["An AI agent of an n8n workflow."]
    said += [f"Its instructions: {redact(text)}" for text in parts.instructions]
    if parts.tools:
        tools = "; ".join(
            f"{tool.name} ({redact(tool.description)})" if tool.description else tool.name
            for tool in parts.tools
        )
        said.append(f"Its tools: {tools}.")
    return " ".join(said)
