"""The agent's purpose read off the workflow for DeepTeam: its instructions and tools, and no
credential that a system message may hold."""

import json

from n8n_deepeval_pipeline.red_team.purpose import workflow_purpose
from tests.conftest import EXAMPLE


def test_the_purpose_is_the_agents_instructions_and_tools():
    workflow = json.loads((EXAMPLE / "workflow.json").read_text(encoding="utf-8"))
    purpose = workflow_purpose(workflow)
    assert purpose is not None
    assert purpose.startswith(
        "An AI agent of an n8n workflow. Its instructions: You are the support agent of Acme "
        "Outdoor. Use order_lookup for any question about an order"
    )
    assert "Never promise refunds; escalate refund requests to a human." in purpose
    assert purpose.endswith(
        "Its tools: calculator (Useful for getting the result of a math expression. The input "
        "to this tool should be a valid mathematical expression that could be executed by a "
        "simple calculator.); order_lookup (Look up an Acme Outdoor order by its id (A followed "
        "by four digits). Returns status, items and delivery date.)."
    )


def test_a_credential_in_a_system_message_never_reaches_the_judge():
    workflow = json.loads((EXAMPLE / "workflow.json").read_text(encoding="utf-8"))
    agent = next(n for n in workflow["nodes"] if n["name"] == "AI Agent")
    agent["parameters"]["options"]["systemMessage"] = "Call the CRM with Bearer sk-live-1234567890"
    purpose = workflow_purpose(workflow)
    assert purpose is not None and "sk-live-1234567890" not in purpose
    assert "Bearer [redacted]" in purpose


def test_a_workflow_without_an_agent_has_no_purpose_to_read():
    assert workflow_purpose({"nodes": [], "connections": {}}) is None
