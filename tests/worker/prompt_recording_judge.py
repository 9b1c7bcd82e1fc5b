"""A loopback judge for tests that check what a judge is sent."""

import json

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge


class PromptRecordingJudge(LoopbackJudge):
    """The loopback judge, keeping the text of every prompt it is sent."""

    def __init__(self):
        super().__init__(latency_s=0.0)
        self.prompts = []

    async def _respond(self, writer, target, headers, body):
        messages = json.loads(body or b"{}").get("messages", [])
        self.prompts.append("\n".join(str(m.get("content", "")) for m in messages))
        return await super()._respond(writer, target, headers, body)
