"""DeepEval's own path, for the simulation parity test: ``ConversationSimulator.simulate()``.

Run as ``python -m tests.simulation.deepeval_reference SPEC OUT`` in a worker's environment
(DeepEval reads its settings at import). SPEC names the judge (base URL, model), the
chatbot's webhook URL, the goldens and the user-turn limit. The simulator model is
DeepEval's own OpenAI model class; the callback is written here as a DeepEval user would
write it for an n8n chat webhook (a POST per user turn with the thread id as the session,
the agent's steps as the turn's tool calls): none of it comes from the pipeline. OUT
receives each conversation's turns, in the goldens' order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import aiohttp
from deepeval.dataset import ConversationalGolden
from deepeval.models import GPTModel
from deepeval.simulator import ConversationSimulator
from deepeval.test_case import ToolCall, Turn


def simulate(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every golden's conversation with DeepEval's own simulator and OpenAI model."""

    async def chatbot(input: str, turns: list[Turn], thread_id: str) -> Turn:
        body = {"chatInput": input, "sessionId": thread_id}
        async with aiohttp.ClientSession() as http, http.post(spec["chatbot"], json=body) as reply:
            answer = await reply.json()
        tools = [
            ToolCall(
                name=step["action"]["tool"],
                input_parameters=step["action"]["toolInput"],
                output=step["observation"],
                reasoning=step["action"].get("log"),
            )
            for step in answer.get("intermediateSteps") or []
        ]
        return Turn(role="assistant", content=answer["output"], tools_called=tools or None)

    model = GPTModel(
        model=spec["model"], base_url=spec["base_url"], api_key="sk-parity", temperature=0
    )
    simulator = ConversationSimulator(model_callback=chatbot, simulator_model=model)
    goldens = [ConversationalGolden(**golden) for golden in spec["goldens"]]
    cases = simulator.simulate(goldens, max_user_simulations=spec["max_user_turns"])
    return [
        [
            {
                "role": turn.role,
                "content": turn.content,
                "tools": [tool.model_dump() for tool in turn.tools_called or []],
            }
            for turn in case.turns
        ]
        for case in cases
    ]


if __name__ == "__main__":
    spec_file, out_file = sys.argv[1:3]
    result = simulate(json.loads(Path(spec_file).read_text(encoding="utf-8")))
    Path(out_file).write_text(json.dumps(result), encoding="utf-8")
