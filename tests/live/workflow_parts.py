"""Nodes and links of the workflows the live tests create in n8n, written short."""

from __future__ import annotations

import uuid
from typing import Any

LC = "@n8n/n8n-nodes-langchain."


def node(name: str, kind: str, version: float, parameters: dict[str, Any], **extra: Any) -> Any:
    """A node as n8n's API takes it (a fresh id, placed at the origin)."""
    return {"id": str(uuid.uuid4()), "name": name, "type": kind, "typeVersion": version,
            "position": [0, 0], "parameters": parameters, **extra}  # fmt: skip


def link(target: str, kind: str = "main") -> dict[str, Any]:
    """One connection of ``kind`` into ``target``, as a source's ``connections`` entry."""
    return {kind: [[{"node": target, "type": kind, "index": 0}]]}


def webhook_agent(name: str, credential: str, **options: Any) -> dict[str, Any]:
    """Webhook → AI Agent on the OpenAI Chat Model of ``credential``; tools to be added.

    The agent's prompt is the Webhook trigger's ``$json.body.chatInput``; ``options``: its
    options (``returnIntermediateSteps``, ``systemMessage``…).
    """
    model = {"model": {"__rl": True, "mode": "list", "value": "gpt-4o-mini"},
             "responsesApiEnabled": False, "options": {}}  # fmt: skip
    return {
        "name": f"{name} {uuid.uuid4().hex[:6]}",
        "nodes": [
            node("Webhook", "n8n-nodes-base.webhook", 2.1,
                 {"httpMethod": "POST", "path": f"live-{uuid.uuid4().hex}",
                  "responseMode": "lastNode", "options": {}}, webhookId=str(uuid.uuid4())),
            node("AI Agent", LC + "agent", 3.1,
                 {"promptType": "define", "text": "={{ $json.body.chatInput }}",
                  "options": options}),
            node("OpenAI Chat Model", LC + "lmChatOpenAi", 1.3, model,
                 credentials={"openAiApi": {"id": credential, "name": "Fake OpenAI"}}),
        ],
        "connections": {
            "Webhook": link("AI Agent"),
            "OpenAI Chat Model": link("AI Agent", "ai_languageModel"),
        },
        "settings": {"executionOrder": "v1"},
    }  # fmt: skip
