"""The optimiser's process started, fed and answered from the calling process (no DeepEval here).

``optimize`` starts ``optimization.process`` for one request, in a scratch working folder
and the workers' environment (no credential: the model's key travels in the request over a
private connection), and serves its calls while it searches: each ``answer`` by the
caller's ``Answerer``, each ``score`` by its ``ObjectiveScorer``, several at once (up to
twice the search's concurrency: DeepEval answers and measures goldens concurrently). A
budget spent on this side is said in the reply (the search then ends with what it found);
any other failure of a call is said too, and ends the search the same way. Each round is
handed to ``on_round`` as it is reported. When the search ends, the calls under way are
waited for (each within the target's timeout), so that nothing answered is lost. The
process's output goes to a log file beside its folder, kept (and named in the error) when
it fails; the process is killed if the caller stops waiting, and exits by itself when the
caller dies.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from multiprocessing import Pipe
from pathlib import Path
from typing import Any, Protocol

from n8n_deepeval_pipeline.optimization.request import (
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
from n8n_deepeval_pipeline.worker.environment import worker_environment

_MODULE = "n8n_deepeval_pipeline.optimization.process"


class OptimizationFailed(RuntimeError):
    """The optimiser's process failed, died or ran out of time; the message names its log."""


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


class _Process:
    """The optimiser's process and this side's end of its connection."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets
        self.scratch = Path(tempfile.mkdtemp(prefix="n8n-deepeval-optimize-"))
        self.log_path = self.scratch.with_name(f"{self.scratch.name}.log")
        ours, theirs = Pipe(duplex=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", _MODULE, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=worker_environment(secrets),
                cwd=self.scratch,  # DeepEval makes a folder where it starts
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        theirs.close()
        self.connection = ours
        self.failed = False
        self._send_lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            self.connection.send(message)

    def next(self, deadline: float) -> dict[str, Any]:
        """The process's next message; its failure, death or lateness as an error."""
        while not self.connection.poll(0.5):
            if self.process.poll() is not None:
                raise self.error(f"exited with code {self.process.returncode}")
            if time.monotonic() > deadline:
                raise self.error("did not finish in time")
        try:
            message: dict[str, Any] = self.connection.recv()
        except (EOFError, OSError):
            raise self.error(f"died (exit code {self.process.wait()})") from None
        if "failed" in message:
            raise self.error(f"failed: {redact(str(message['failed']), self.secrets)}")
        return message

    def error(self, reason: str) -> OptimizationFailed:
        self.failed = True
        return OptimizationFailed(f"the optimiser's process {reason}; its log is {self.log_path}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.connection.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if not self.failed:
            self.log_path.unlink(missing_ok=True)


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
    process = _Process(request.secrets)
    calls = ThreadPoolExecutor(max_workers=2 * request.concurrency, thread_name_prefix="answers")

    try:
        process.send(request.model_dump(mode="python"))
        deadline = time.monotonic() + timeout_s
        while True:
            message = process.next(deadline)
            if "answer" in message:
                answer_call = AnswerCall.model_validate(message["answer"])
                answering = partial(_answer, answer_call, answerer, ledger)
                calls.submit(_serve, process, answer_call.call_id, request.secrets, answering)
            elif "score" in message:
                score_call = ScoreCall.model_validate(message["score"])
                scoring = partial(_score, score_call, scorer, ledger)
                calls.submit(_serve, process, score_call.call_id, request.secrets, scoring)
            elif "round" in message and on_round is not None:
                on_round(Round.model_validate(message["round"]))
            elif "done" in message:
                return OptimizationOutcome.model_validate(message["done"])
    finally:
        process.stop()
        # Calls under way finish (and are journaled) before their harness copies go; the
        # ones not started are dropped.
        calls.shutdown(wait=True, cancel_futures=True)


def _serve(process: _Process, call_id: int, secrets: list[str], work: Callable[[], Any]) -> None:
    """Answer one call; an unexpected failure is said to the search as that call's error."""
    try:
        reply = work().model_dump()
    except Exception as error:
        reply = {"call_id": call_id, "error": redact(f"{type(error).__name__}: {error}", secrets)}
    process.send({"reply": reply})
