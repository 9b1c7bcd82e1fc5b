"""DeepEval's own ``ConversationSimulator`` playing the simulated users (worker side).

It imports DeepEval, so it runs only in the simulator process (``simulation.process``).
DeepEval drives every conversation: its templates write each user turn, its expected-
outcome check decides when to stop, its loop alternates the turns. The pipeline supplies:

- the model: the pipeline's judge (``PipelineJudge``: cache, pacing, retries, breaker),
  wrapped so that an empty user turn is asked for once more, and so that a judge that
  fails ends that one conversation (``judge_error``) instead of every conversation;
- the stopping controller: DeepEval's own expected-outcome check, unless the
  conversation already ended (the workflow failed, the user said nothing);
- the callback: one call of the workflow per user turn, in the conversation's session,
  answering with the workflow's output and the tools it called (DeepEval's ``Turn``).

All conversations are in flight at once: what bounds the work is the judge's pacing and
the target's ``maxConcurrency``, not a count of conversations (DeepEval's
``max_concurrent`` holds back whole conversations, so a slow judge and a slow workflow
both sit idle while they wait).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from typing import Any, cast

from deepeval.dataset import ConversationalGolden
from deepeval.models import DeepEvalBaseLLM
from deepeval.simulator import ConversationSimulator
from deepeval.simulator.controller.controller import expected_outcome_controller
from deepeval.simulator.controller.types import Decision
from deepeval.simulator.schema import ConversationCompletion, SimulatedInput
from deepeval.test_case import ConversationalTestCase, Turn
from deepeval.utils import get_or_create_event_loop
from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.call_ledger import CallLedger
from n8n_deepeval_pipeline.judging.failures import JUDGE_FAILURES, failure_kind
from n8n_deepeval_pipeline.judging.judge import (
    JUDGE_SCOPE,
    JudgeScope,
    PipelineJudge,
    UsageCounter,
)
from n8n_deepeval_pipeline.n8n_api.webhook import SessionCaller, TargetError
from n8n_deepeval_pipeline.n8n_data.agent_steps import (
    StepsShapeError,
    parse_intermediate_steps,
    tool_calls,
)
from n8n_deepeval_pipeline.n8n_data.conversation import TurnData
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.simulation.conversation import (
    FailureKind,
    SimulatedConversation,
    SimulatedTurn,
    StopReason,
    conversation_session,
)
from n8n_deepeval_pipeline.simulation.golden import GoldenRun
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker.test_case_builder import as_tool_call

# Said to the judge when it wrote an empty user turn, before asking it once more.
EMPTY_TURN_NOTE = (
    "\n\nYour previous answer had an empty `simulated_input`. Write the user's next "
    "message: it must not be empty."
)


class _Played:
    """One conversation in progress: its session, the answers given, why it ended."""

    def __init__(self, golden: GoldenRun, session_id: str, usage: UsageCounter) -> None:
        self.golden = golden
        self.session_id = session_id
        self.usage = usage
        self.started = time.perf_counter()
        # per assistant turn after the opening: (latency, steps), or None for the empty
        # turn DeepEval's loop needs where no answer was given
        self.answers: list[tuple[float, list[Any] | None] | None] = []
        self.stop: StopReason | None = None
        self.error: str | None = None
        self.error_kind: FailureKind | None = None

    def end(self, reason: StopReason, kind: FailureKind | None = None, error: str = "") -> None:
        """The conversation ends at the next stopping check, for the first reason given."""
        if self.stop is None:
            self.stop, self.error_kind, self.error = reason, kind, (error or None)


# The conversation a judge call or a callback belongs to: set in the conversation's own
# asyncio task by its first stopping check (DeepEval runs each conversation in a task).
PLAYED: contextvars.ContextVar[_Played | None] = contextvars.ContextVar("played", default=None)


class SimulatedUserModel(DeepEvalBaseLLM):
    """The simulator model DeepEval is given: the pipeline's judge.

    A failure ends the conversation the call was made for (``PLAYED``, set in its task);
    ``secrets``: what the stored error must not show (the judge's key).
    """

    def __init__(self, judge: PipelineJudge, secrets: list[str]) -> None:
        self.judge = judge
        self.secrets = secrets
        super().__init__(model=judge.get_model_name())

    def load_model(self) -> SimulatedUserModel:
        return self

    def get_model_name(self) -> str:
        return self.judge.get_model_name()

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        raise NotImplementedError("the simulation runs in DeepEval's async mode")

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> Any:
        played = PLAYED.get()
        try:
            answer = await self.judge.a_generate(prompt, schema)
            if isinstance(answer, SimulatedInput) and not answer.simulated_input.strip():
                answer = await self.judge.a_generate(prompt + EMPTY_TURN_NOTE, schema)
            return answer
        except JUDGE_FAILURES as error:
            if played is None or schema not in (SimulatedInput, ConversationCompletion):
                raise
            kind = failure_kind(error) or "judge_error"  # named as the metrics' scores name it
            played.end("judge_error", kind, redact(f"simulated user: {error}", self.secrets))
            return _closing_answer(schema)


def _closing_answer(schema: type[BaseModel]) -> BaseModel:
    """What lets DeepEval's loop end a conversation whose judge failed: nothing to say."""
    if schema is SimulatedInput:
        return SimulatedInput(simulated_input="")
    return ConversationCompletion(is_complete=True, reason="the judge failed")


def _tools(steps: list[Any] | None) -> list[Any] | None:
    """The tools an answer called, as DeepEval's ``ToolCall`` (None: none, or unreadable)."""
    try:
        parsed = parse_intermediate_steps(steps)
    except StepsShapeError:
        return None
    calls = tool_calls(parsed or [])
    return [as_tool_call(call) for call in calls] or None


def _opening_turn(turn: TurnData) -> Turn:
    tools = [as_tool_call(call) for call in turn.tools_called or []]
    return Turn(role=turn.role, content=turn.content, tools_called=tools or None)


def golden_of(golden: GoldenRun) -> ConversationalGolden:
    """The run's golden as DeepEval's, named by its run id (no template reads the name)."""
    row = golden.row
    return ConversationalGolden(  # an empty cell is no outcome, no description
        scenario=golden.scenario,
        expected_outcome=row.expected_outcome or None,
        user_description=row.user_description or None,
        context=row.context,
        turns=[_opening_turn(turn) for turn in golden.opening] or None,
        name=golden.run_id,
    )


class Simulation:
    """Every golden run of a request played at once by one ``ConversationSimulator``."""

    def __init__(
        self, request: SimulationRequest, finished: Callable[[SimulatedConversation], None]
    ) -> None:
        self.request = request
        self._finished = finished
        self._goldens = {golden.run_id: golden for golden in request.runs}
        self._played: dict[str, _Played] = {}  # by DeepEval's thread id
        self._by_run: dict[str, _Played] = {}
        self._caller = SessionCaller(request.target, request.url, request.env)
        self.simulator = ConversationSimulator(
            # Annotated Callable[[str], str]; it awaits a callback taking input, turns, thread_id.
            model_callback=cast(Any, self.answer),
            simulator_model=SimulatedUserModel(
                PipelineJudge(request.judge, UsageCounter()), request.secrets
            ),
            stopping_controller=self.should_stop,
            max_concurrent=max(len(request.runs), 1),
            language=request.language,
        )

    def run(self) -> None:
        """Play every conversation; each is reported as it finishes."""
        goldens = [golden_of(golden) for golden in self.request.runs]
        try:
            self.simulator.simulate(
                goldens,
                max_user_simulations=self.request.max_user_turns,
                on_simulation_complete=self._complete,
            )
        finally:
            get_or_create_event_loop().run_until_complete(self._caller.aclose())

    async def should_stop(
        self, turns: list[Turn], golden: ConversationalGolden, thread_id: str
    ) -> Decision:
        """DeepEval's expected-outcome check, unless the conversation already ended."""
        played = self._played.get(thread_id) or self._begin(str(golden.name), thread_id)
        if played.stop is None:
            controller = self.simulator.stopping_controller
            if await expected_outcome_controller.a_run(controller, turns, golden):
                played.end("outcome_reached")
        return Decision(should_end=played.stop is not None, reason=played.stop)

    def _begin(self, run_id: str, thread_id: str) -> _Played:
        """The conversation's first check: its session, and its judge calls counted apart.

        Each call is charged in the ledger as it is answered (a killed simulation's calls
        too), and has the time an evaluation gives the judge.
        """
        ledger = self.request.ledger
        usage = UsageCounter(CallLedger(ledger) if ledger is not None else None)
        played = _Played(self._goldens[run_id], conversation_session(run_id, thread_id), usage)
        self._played[thread_id] = self._by_run[run_id] = played
        # In the conversation's own task: every judge call it makes from now on is its own.
        PLAYED.set(played)
        namespace = self.request.namespace(run_id)
        JUDGE_SCOPE.set(JudgeScope(usage, namespace, call_limit_s=self.request.judge_call_limit_s))
        return played

    async def answer(self, input: str, turns: list[Turn], thread_id: str) -> Turn:
        """The workflow's answer to the user's turn, in the conversation's session."""
        played = self._played[thread_id]
        if played.stop is None and not input.strip():
            played.end("empty_user_turn")
        if played.stop is not None:  # nothing to send: an empty turn keeps DeepEval going
            played.answers.append(None)
            return Turn(role="assistant", content="")
        golden = played.golden
        try:
            reply, latency_s = await self._caller.message(
                golden.row, golden.run, played.session_id, input
            )
        except TargetError as error:
            played.end("target_error", "target_error", redact(str(error), self.request.secrets))
            played.answers.append(None)
            return Turn(role="assistant", content="")
        played.session_id = reply.session_id or played.session_id  # sessionParser's
        played.answers.append((latency_s, reply.intermediate_steps))
        tools = _tools(reply.intermediate_steps)
        return Turn(role="assistant", content=reply.output or "", tools_called=tools)

    def _complete(self, case: ConversationalTestCase, index: int) -> None:
        self._finished(self._conversation(self._by_run[str(case.name)], case))

    def _conversation(self, played: _Played, case: ConversationalTestCase) -> SimulatedConversation:
        opening = len(played.golden.opening)
        answers = iter(played.answers)
        turns: list[SimulatedTurn] = []
        for position, turn in enumerate(case.turns):
            if position < opening or turn.role == "user":
                turns.append(
                    SimulatedTurn(role=turn.role, content=turn.content, opening=position < opening)
                )
                continue
            answer = next(answers)
            if answer is None:
                continue  # no answer was given: the turn only kept DeepEval's loop going
            latency_s, steps = answer
            turns.append(
                SimulatedTurn(
                    role="assistant",
                    content=turn.content,
                    intermediate_steps=steps,
                    latency_s=round(latency_s, 4),
                )
            )
        last = turns[-1] if turns else None
        if last and last.role == "user" and not last.opening and not last.content.strip():
            turns.pop()  # the user said nothing (the judge failed, or twice wrote nothing)
        usage = played.usage
        return SimulatedConversation(
            run_id=played.golden.run_id,
            session_id=played.session_id,
            turns=turns,
            stop_reason=played.stop or "turn_limit",
            error=played.error,
            error_kind=played.error_kind,
            latency_s=time.perf_counter() - played.started,
            judge_calls=usage.calls,
            cached_calls=usage.cached,
            judge_retries=usage.retries,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
