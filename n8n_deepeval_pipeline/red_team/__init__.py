"""Red-teaming the workflow's agent with DeepTeam, through the harness copy with mocks.

DeepTeam (imported only in the worker process, ``red_team.worker``) writes the attacks,
plays them and judges them with the pipeline's judge; the step process answers every
message it sends to the workflow through the harness copy, where every node that would
act on a real service is mocked, and keeps the tool calls each attack provoked.
"""
