"""A loopback judge for tests that check what a judge is sent."""

import json

from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, prompt_text


class PromptRecordingJudge(LoopbackJudge):
    """The loopback judge, keeping the text of every prompt it is sent."""

    def __init__(self):
        super().__init__(latency_s=0.0)
        self.prompts = []

    async def _respond(self, writer, target, headers, body):
        # the text of each message, whether its content is a string or content parts
        self.prompts.append(prompt_text(json.loads(body or b"{}").get("messages", [])))
        return await super()._respond(writer, target, headers, body)
