"""A simulated conversation: its turns, why it stopped, what its simulated user cost.

It is the run's output in ``agent_outputs``: ``turns`` as OpenAI-style messages, each
assistant turn with the ``intermediateSteps`` of the call that answered it (so the
multi-turn metrics see the tools turn by turn), the last answer as ``actual_output``,
the conversation's session and why it stopped:

- ``outcome_reached``: the judge found the golden's expected outcome reached;
- ``turn_limit``: the simulated user wrote ``maxUserTurns`` turns first;
- ``empty_user_turn``: the simulated user said nothing, even when asked once more;
- ``target_error``: the workflow failed to answer a turn (the run is a target error);
- ``judge_error``: the judge could not play the user (the run has no output); its error
  kind says how, in the words of the metrics' scores (``judge_rate_limited``,
  ``judge_auth``, ``judge_unavailable``, …).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.failures import JudgeFailureKind
from n8n_deepeval_pipeline.tables.rows import AgentOutput

StopReason = Literal[
    "outcome_reached", "turn_limit", "empty_user_turn", "target_error", "judge_error"
]
STOP_REASONS: tuple[str, ...] = (
    "outcome_reached", "turn_limit", "empty_user_turn", "target_error", "judge_error"
)  # fmt: skip
FailureKind = Literal["target_error", JudgeFailureKind]


def conversation_session(run_id: str, thread_id: str) -> str:
    """The session a conversation's turns are sent in: its run, and DeepEval's thread id.

    The thread id is new for every conversation DeepEval plays, so no two conversations
    (two runs of a row, or a run played again) ever share a memory session in n8n.
    """
    return f"{run_id}:{thread_id}"


class SimulatedTurn(BaseModel):
    """One turn: the simulated user's, or the workflow's answer and what it called."""

    role: Literal["user", "assistant"]
    content: str
    intermediate_steps: list[Any] | None = None  # the answer's tool calls, n8n's shape
    latency_s: float | None = None  # the call that answered it
    opening: bool = False  # from the golden's opening turns: nobody said it in this run

    def stored(self) -> dict[str, Any]:
        """The turn as ``agent_outputs.turns`` keeps it (read back by ``n8n_data``)."""
        turn: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.intermediate_steps is not None:
            turn["intermediateSteps"] = self.intermediate_steps
        if self.latency_s is not None:
            turn["latencyS"] = self.latency_s
        if self.opening:
            turn["opening"] = True
        return turn


class SimulatedConversation(BaseModel):
    """One run's conversation, as the simulator process reports it."""

    run_id: str
    session_id: str
    turns: list[SimulatedTurn]
    stop_reason: StopReason
    error: str | None = None
    error_kind: FailureKind | None = None
    latency_s: float = 0.0
    judge_calls: int = 0
    cached_calls: int = 0
    judge_retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def user_turns(self) -> int:
        """User turns the simulated user wrote (opening turns not counted)."""
        return sum(1 for turn in self.turns if turn.role == "user" and not turn.opening)

    def answers(self) -> list[SimulatedTurn]:
        """The workflow's answers in this run, in order (one call each)."""
        return [turn for turn in self.turns if turn.role == "assistant" and not turn.opening]

    def with_execution_steps(self, by_execution: list[list[Any]]) -> SimulatedConversation:
        """Answers without steps given the steps of the session's executions, in order.

        One execution answered one turn: the i-th answer's tools are the i-th execution's
        (a call that failed and left an execution adds one past the last answer).
        """
        steps = iter(by_execution)
        turns = []
        for turn in self.turns:
            if turn.role == "assistant" and not turn.opening:
                found = next(steps, None)
                if turn.intermediate_steps is None and found is not None:
                    turn = turn.model_copy(update={"intermediate_steps": found})
            turns.append(turn)
        return self.model_copy(update={"turns": turns})

    def agent_output(
        self, workflow_hash: str, judge: str, max_user_turns: int, cost_usd: float | None
    ) -> AgentOutput:
        """The run's row of ``agent_outputs``."""
        answers = self.answers()
        known = [turn.intermediate_steps for turn in answers if turn.intermediate_steps is not None]
        return AgentOutput(
            workflow_hash=workflow_hash,
            run_id=self.run_id,
            actual_output=answers[-1].content if answers and self.error is None else None,
            intermediate_steps=[step for steps in known for step in steps] if known else None,
            turns=[turn.stored() for turn in self.turns],
            session_id=self.session_id,
            latency_s=round(self.latency_s, 4),
            error=None if self.error is None else f"{self.error_kind}: {self.error}",
            error_kind=self.error_kind,
            stop_reason=self.stop_reason,
            simulation={
                "judge": judge,
                "userTurns": self.user_turns,
                "maxUserTurns": max_user_turns,
                "judgeCalls": self.judge_calls,
                "cachedCalls": self.cached_calls,
                "judgeRetries": self.judge_retries,
                "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens,
                "costUsd": cost_usd,
            },
        )
