"""The optimiser's process asked, answered and read back from the calling process (no DeepEval).

``optimize`` has ``worker.launcher`` start ``optimization.process`` for one request (a
scratch working folder, the workers' environment without credentials: the model's key
travels in the request over the private connection; a deadline; its log kept in the home
when it fails), and serves its calls while it searches: each answer by the caller's
``Answerer``, each score by its ``ObjectiveScorer``, several at once (up to twice the
search's concurrency: DeepEval answers and measures goldens concurrently). A budget spent
on this side is said in the reply (the search then ends with what it found); any other
failure of a call is said too, and ends the search the same way. Each round is handed to
``on_round`` as it is reported. When the search ends, the calls under way are waited for
(each within the target's timeout), so that nothing answered is lost, and what they cost
is counted in the outcome's spend. A process that fails, dies or overruns is a
``ChildFailed`` with its exit code and last log lines.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

from n8n_deepeval_pipeline.optimization.request import (
    CALLS,
    AnswerCall,
    AnswerReply,
    OptimizationOutcome,
    OptimizationRequest,
    Round,
    ScoreCall,
    Scored,
    ScoreReply,
)
from n8n_deepeval_pipeline.optimization.spend import BudgetReached, SpendLedger
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.worker.launcher import Child, ChildSpec, launched

MODULE = "n8n_deepeval_pipeline.optimization.process"


class CallFailed(RuntimeError):
    """An answer or a score could not be given (the message is safe to show)."""


class Answerer(Protocol):
    """What an answer is: ``answer(candidate, golden_id)`` → (answer id, output text).

    It reserves each call with ``ledger.reserve("answer", …)`` (``BudgetReached``), and
    raises ``CallFailed`` when there is none.
    """

    def answer(self, candidate: str, golden_id: str) -> tuple[str, str]: ...


class ObjectiveScorer(Protocol):
    """How an answer is scored: ``score(answer_id, objective)`` → ``Scored``.

    It checks ``ledger.admit("judge")`` before it pays for a judgement, and raises
    ``CallFailed`` when there is none.
    """

    def score(self, answer_id: str, objective: str) -> Scored: ...


def _answer(call: AnswerCall, answerer: Answerer, ledger: SpendLedger) -> AnswerReply:
    ledger.told(call.spend)
    try:
        answer_id, output = answerer.answer(call.candidate, call.golden_id)
    except BudgetReached as spent:
        return AnswerReply(call_id=call.call_id, stop=str(spent), spend=ledger.own)
    except CallFailed as error:
        return AnswerReply(call_id=call.call_id, error=str(error), spend=ledger.own)
    return AnswerReply(call_id=call.call_id, answer_id=answer_id, output=output, spend=ledger.own)


def _score(call: ScoreCall, scorer: ObjectiveScorer, ledger: SpendLedger) -> ScoreReply:
    ledger.told(call.spend)
    try:
        scored = scorer.score(call.answer_id, call.objective)
    except BudgetReached as spent:
        return ScoreReply(call_id=call.call_id, stop=str(spent), spend=ledger.own)
    except CallFailed as error:
        return ScoreReply(call_id=call.call_id, error=str(error), spend=ledger.own)
    return ScoreReply(call_id=call.call_id, scored=scored, spend=ledger.own)


def optimize(
    request: OptimizationRequest,
    answerer: Answerer,
    scorer: ObjectiveScorer,
    ledger: SpendLedger,
    on_round: Callable[[Round], None] | None = None,
    timeout_s: float = 24 * 3600.0,
) -> OptimizationOutcome:
    """The outcome of DeepEval's search for ``request``, its answers and scores served here.

    ``ledger`` holds this side's spend (the answerer and scorer add to it) and is told the
    optimiser's own with every call.
    """
    spec = ChildSpec(name="the optimiser's process", module=MODULE, deadline_s=timeout_s)
    calls = ThreadPoolExecutor(max_workers=2 * request.concurrency, thread_name_prefix="answers")
    try:
        with launched(spec, request.secrets) as child:
            child.send("ask", request)
            while (message := child.receive()).kind != "done":
                if message.kind == "call":
                    call = CALLS.validate_python(message.body)
                    work = (
                        partial(_answer, call, answerer, ledger)
                        if isinstance(call, AnswerCall)
                        else partial(_score, call, scorer, ledger)
                    )
                    calls.submit(_serve, child, call.call_id, request.secrets, work)
                elif message.kind == "update" and on_round is not None:
                    on_round(message.of(Round))
            outcome = message.of(OptimizationOutcome)
            child.finish()
    finally:
        # Calls under way finish (and are journaled) before their harness copies go; the
        # ones not started are dropped.
        calls.shutdown(wait=True, cancel_futures=True)
    # What the calls under way when the search ended cost is counted too.
    return outcome.model_copy(update={"spend": outcome.model_spend + ledger.own})


def _serve(child: Child, call_id: int, secrets: list[str], work: Callable[[], Any]) -> None:
    """Answer one call; an unexpected failure is said to the search as that call's error."""
    try:
        reply = work().model_dump()
    except Exception as error:
        reply = {"call_id": call_id, "error": redact(f"{type(error).__name__}: {error}", secrets)}
    with contextlib.suppress(Exception):  # the process is gone: its failure is said elsewhere
        child.send("reply", reply)
