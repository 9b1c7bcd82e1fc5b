"""The simulator process's end when its simulation fails: said to the parent, then os._exit(1).

It runs in the test's own process over a real connection, its simulation a test double
that raises: the family's children end through ``exit_now``, so that no interpreter
teardown (DeepEval's modules and threads) runs after the word."""

from __future__ import annotations

import os
import sys
import types
from multiprocessing import Pipe
from typing import Any

import pytest

from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.simulation import process
from n8n_deepeval_pipeline.simulation.request import SimulationRequest
from n8n_deepeval_pipeline.worker.child_channel import Channel, ChildMessage

API_KEY = "sk-simulator-SECRET-4e1a"
URL = "http://127.0.0.1:9/webhook/chat"


class Exited(BaseException):
    """os._exit, caught: the test's own process goes on."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class FailingSimulation:
    """A simulation double whose run fails naming the judge's key, as a real error might."""

    def __init__(self, request: SimulationRequest, finished: Any) -> None:
        self.request = request

    def run(self) -> None:
        raise RuntimeError(f"the judge refused key {API_KEY}\nsecond line")


def _exit(code: int) -> None:
    raise Exited(code)


def test_a_failed_simulation_is_said_once_redacted_and_the_process_ends_with_os_exit_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent, child = Pipe()
    monkeypatch.setattr(process, "connect", lambda: Channel(child))
    double = types.ModuleType("n8n_deepeval_pipeline.simulation.simulator")
    double.Simulation = FailingSimulation  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, double.__name__, double)
    monkeypatch.setattr(os, "_exit", _exit)
    judge = JudgeSpec(provider="openai", model="gpt-4.1", api_key=API_KEY)
    request = SimulationRequest(
        runs=[],
        judge=judge,
        target=WebhookTarget(type="n8n_webhook", url=URL),
        url=URL,
        max_user_turns=2,
    )
    parent.send(ChildMessage(kind="ask", body=request.model_dump(mode="python")).model_dump())

    with pytest.raises(Exited) as exited:  # not SystemExit: no interpreter teardown
        process.main()

    assert exited.value.code == 1
    said = [ChildMessage.model_validate(parent.recv()) for _ in range(2)]
    assert [message.kind for message in said] == ["ready", "failed"]
    assert said[1].body.startswith("RuntimeError: the judge refused key ")
    assert API_KEY not in said[1].body and "second line" not in said[1].body
    assert not parent.poll()
