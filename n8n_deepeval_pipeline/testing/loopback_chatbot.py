"""A loopback chat agent with memory: a test and benchmark double of an n8n chat webhook.

``POST /webhook/<any>`` with a JSON body ``{chatInput or input, sessionId}`` is answered
after a fixed latency, as an n8n AI Agent with *Return Intermediate Steps* on answers:
``{"output": …, "intermediateSteps": […], "sessionId": …}``. The answer is deterministic
and depends on the message and on the session's memory (how many messages the session
sent before), so two conversations that share a session answer differently from two
that do not:

- a message with an arithmetic expression (``6*7``, ``40 + 2``) calls the ``Calculator``
  tool: one step ``{action: {tool: "Calculator", toolInput: {input}, log},
  observation: '[{"response":"42"}]'}`` and the output ``The answer is 42. (message N)``;
- any other message: ``<style> N: <message>``, N being the message's number in its session.

``fail_on`` makes the session's N-th message an HTTP 500 (a workflow that fails mid-way).
It records every session's messages and when each request arrived and was answered, and
how many requests were in flight at most. ``style`` names the workflow's version: another
style answers every message differently.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import operator
import re
import threading
import time
from collections import defaultdict
from typing import Any

from aiohttp import web

ARITHMETIC = re.compile(r"(\d+(?:\.\d+)?)\s*([*+\-/])\s*(\d+(?:\.\d+)?)")
_OPERATORS = {"*": operator.mul, "+": operator.add, "-": operator.sub, "/": operator.truediv}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def calculated(expression: str) -> str:
    """The value of ``a <op> b`` as the Calculator tool prints it (``6*7`` → ``42``)."""
    match = ARITHMETIC.fullmatch(expression.replace(" ", ""))
    if match is None:
        raise ValueError(f"not an expression: {expression!r}")
    left, sign, right = match.groups()
    return _number(_OPERATORS[sign](ast.literal_eval(left), ast.literal_eval(right)))


class LoopbackChatbot:
    """The server, its sessions' memory and what it saw."""

    def __init__(
        self,
        latency_s: float = 0.0,
        style: str = "Answer",
        fail_on: int | None = None,
        port: int = 0,
    ) -> None:
        self.latency_s = latency_s
        self.style = style
        self.fail_on = fail_on
        self.port = port
        self.memory: dict[str, list[str]] = defaultdict(list)  # session → its messages
        # session → (arrived, answered) monotonic times of each of its requests
        self.timings: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        """The webhook URL to call."""
        return f"http://127.0.0.1:{self.port}/webhook/loopback-chat"

    def answer(self, session: str, message: str) -> dict[str, Any]:
        """The answer to the session's next message (and the message remembered)."""
        with self._lock:
            self.memory[session].append(message)
            number = len(self.memory[session])
        found = ARITHMETIC.search(message)
        if found is None:
            return {"output": f"{self.style} {number}: {message}", "intermediateSteps": []}
        expression = "".join(found.groups())
        result = calculated(expression)
        step = {
            "action": {
                "tool": "Calculator",
                "toolInput": {"input": expression},
                "log": f"Invoking: `Calculator` with `{{'input': '{expression}'}}`",
            },
            "observation": json.dumps([{"response": result}], separators=(",", ":")),
        }
        output = f"The answer is {result}. ({self.style.lower()} {number})"
        return {"output": output, "intermediateSteps": [step]}

    async def _handle(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        body = await request.json()
        session = str(body.get("sessionId") or "")
        message = str(body.get("chatInput") or body.get("input") or "")
        with self._lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
            if self.fail_on is not None and len(self.memory[session]) + 1 == self.fail_on:
                with self._lock:
                    self.memory[session].append(message)
                return web.json_response({"message": "the agent failed"}, status=500)
            answer = {**self.answer(session, message), "sessionId": session}
            return web.json_response(answer)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.timings[session].append((arrived, time.monotonic()))

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        app = web.Application()
        app.router.add_post("/webhook/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]
        ready.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()

    def start(self) -> LoopbackChatbot:
        """Serve from a background thread; returns once it listens."""
        ready = threading.Event()
        threading.Thread(
            target=lambda: asyncio.run(self._serve(ready)), name="loopback-chatbot", daemon=True
        ).start()
        if not ready.wait(10):
            raise RuntimeError("the loopback chatbot did not start")
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._loop is not None and self._runner is not None:
            future = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout=10)

    def sessions_in_flight(self) -> int:
        """Conversations in flight at most: sessions from their first request to their last."""
        spans = [(calls[0][0], calls[-1][1]) for calls in self.timings.values() if calls]
        edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
        most = current = 0
        for _, change in edges:
            current += change
            most = max(most, current)
        return most
