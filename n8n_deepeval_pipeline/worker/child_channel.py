"""The connection between a process and a child it started: typed messages, both ways.

Every child the pipeline starts (``worker.launcher``) talks to its parent over one private
socket pair, whose descriptor is the child's first argument. A message is a
``ChildMessage``: what it is (``kind``) and its body, a pydantic model's data that the
receiver validates with its own model:

- to the child: ``ask`` (the one request it serves), ``reply`` (the answer to a ``call``);
- from it: ``ready`` (its imports done), ``update`` (a part of the result, as it comes),
  ``call`` (a question only the parent can answer, e.g. the workflow's answer to a
  message), ``done`` (the result) or ``failed`` (why, and what kind of error).

Bodies travel pickled, as ``model_dump(mode="python")`` gives them: a judge key inside a
request stays a ``SecretStr`` on the way, which JSON would print. The child side watches
its parent: a child whose parent died exits at once, since nothing waits for it. A child
that asks its parent questions while it works (the red team's worker, the optimiser)
awaits each reply through ``CallsToParent``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict

Kind = Literal["ask", "reply", "ready", "update", "call", "done", "failed"]
M = TypeVar("M", bound=BaseModel)
PARENT_GONE_EXIT = 3
"""The exit code of a child that saw its parent die."""
_PARENT_POLL_S = 0.5


class ChannelClosed(ConnectionError):
    """The other end hung up (it exited, died, or closed the connection)."""


class ChildMessage(BaseModel):
    """One message between a process and its child, either way."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    body: Any = None
    """A model's data (``model_dump(mode="python")``), a number or a text."""
    error_kind: str | None = None
    """A ``failed`` message's kind of error, in the pool's words (``judge_rate_limited``, …)."""

    def of(self, model: type[M]) -> M:
        """The body as ``model``."""
        return model.model_validate(self.body)


class Channel:
    """One end of the connection; sends from several threads are kept whole."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._sending = threading.Lock()

    def send(self, kind: Kind, body: Any = None, error_kind: str | None = None) -> None:
        """Send one message; a model body is sent as its data."""
        data = body.model_dump(mode="python") if isinstance(body, BaseModel) else body
        message = ChildMessage(kind=kind, body=data, error_kind=error_kind)
        try:
            with self._sending:
                self.connection.send(message.model_dump(mode="python"))
        except (OSError, ValueError) as error:  # ValueError: closed on this side
            raise ChannelClosed(f"the connection closed: {error}") from None

    def receive(self, wait_s: float | None = None) -> ChildMessage | None:
        """The next message, waiting up to ``wait_s`` (None: for as long as it takes).

        None when nothing came in time; ``ChannelClosed`` when the other end is gone.
        """
        try:
            if wait_s is not None and not self.connection.poll(max(wait_s, 0.0)):
                return None
            return ChildMessage.model_validate(self.connection.recv())
        except (EOFError, OSError, ValueError) as error:
            raise ChannelClosed(f"the connection closed ({type(error).__name__})") from None

    def close(self) -> None:
        self.connection.close()


class CallsToParent:
    """A child's questions to its parent, asked from an event loop.

    Each question goes as a ``call`` whose body carries the ``call_id`` given here, and is
    awaited until the parent's ``reply`` with that ``call_id`` comes back (a reader thread
    takes the replies off the connection). Any other message (the next ``ask`` of a child
    that serves work after work) is put in ``asks``. A parent that hung up ends the process:
    no question of it will be answered, and no work will come (how a kept child is stopped).
    """

    def __init__(self, channel: Channel, loop: asyncio.AbstractEventLoop) -> None:
        self._channel = channel
        self._loop = loop
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._next_call = 0
        self.asks: asyncio.Queue[ChildMessage] = asyncio.Queue()
        threading.Thread(target=self._read, name="replies", daemon=True).start()

    async def ask(self, call: Callable[[int], BaseModel]) -> Any:
        """The parent's reply (its body) to the call ``call(call_id)`` builds."""
        self._next_call += 1  # only the event loop's thread counts
        call_id = self._next_call
        answered: asyncio.Future[Any] = self._loop.create_future()
        self._waiting[call_id] = answered
        self._channel.send("call", call(call_id))
        return await answered

    def _read(self) -> None:
        while True:
            try:
                message = self._channel.receive()
            except ChannelClosed:
                os._exit(PARENT_GONE_EXIT)
            if message is None:
                continue
            if message.kind == "reply":
                self._loop.call_soon_threadsafe(self._answer, message.body)
            else:
                self._loop.call_soon_threadsafe(self.asks.put_nowait, message)

    def _answer(self, reply: Any) -> None:
        waiting = self._waiting.pop(int(reply["call_id"]), None)
        if waiting is not None and not waiting.done():
            waiting.set_result(reply)


def connect(watch_parent: bool = True) -> Channel:
    """The child's end, from its first argument; with a watch on its parent unless told not.

    A process that forks (the zygote) watches nothing: a fork of a threaded process is
    unsafe, and its connection closing says the same.
    """
    if watch_parent:
        exit_with_parent()
    return Channel(Connection(int(sys.argv[1])))


def exit_now(code: int) -> NoReturn:
    """End a child with ``code`` once its output is flushed, skipping the interpreter's shutdown.

    Its work is sent and nothing is left to write: tearing down DeepEval's (DeepTeam's,
    ChromaDB's) modules and threads takes longer than the whole stop otherwise would.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_with_parent() -> None:
    """Exit as soon as the process above this one is gone (even mid-work)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_S)
        os._exit(PARENT_GONE_EXIT)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
