"""A child process started, watched and stopped: the one way the pipeline starts one.

The worker zygote, the simulator, the red team's worker, the synthesizer and a variant's
calling process are each a ``python -m MODULE FD …`` started here:

- in the workers' environment (``worker.environment``: no credential; a key travels in
  the request, over the connection), unless its ``ChildSpec`` says it needs this one's;
- in a scratch working folder of its own, removed afterwards (DeepEval and DeepTeam make
  folders where they start);
- with a private connection (``worker.child_channel``: typed messages both ways) whose
  end it watches its parent through;
- with a deadline: past it, the child is killed and its work is a failure;
- with its output in a log, written in the system's temporary folder while it runs and
  kept under the project's home (``logs/``) when it fails; nothing is made in the home
  otherwise (a command refused before it starts anything leaves no folder behind).

A child may also be started ahead of its work (``started_ahead``), so that its imports
overlap what its parent does meanwhile (a CLI run's set-up): ``launched`` hands it the
first work of its kind whose credentials its environment does not hold, and, told to keep
it, takes it back after each work finished whole, while the block lasts.

A child that fails, dies, or runs out of time is a ``ChildFailed`` carrying its exit code,
the last lines of its log (redacted) and where the log is kept; so is one that exits with
anything but 0 after its last message, which is never taken for a success.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from multiprocessing import Pipe
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.worker.child_channel import (
    Channel,
    ChannelClosed,
    ChildMessage,
    Kind,
)
from n8n_deepeval_pipeline.worker.environment import worker_environment

LineSink = Callable[[str], None]
TAIL_LINES = 12
"""How many of a failed child's last log lines its error quotes."""
_POLL_S = 0.5  # how often a child that sends nothing is checked for life
_EXIT_GRACE_S = 5.0  # how long a child that said it failed, or was hung up on, has to exit
_TAIL_BYTES = 64 * 1024
_ENDED = "ended before its result"


class ChildSpec(BaseModel):
    """How a child is started: what it runs, for how long, in which environment."""

    model_config = ConfigDict(frozen=True)

    name: str
    """What its errors call it: ``the simulator``, ``the red team's worker``."""
    module: str
    """Run as ``python -m MODULE FD *args``."""
    args: tuple[str, ...] = ()
    deadline_s: float | None = Field(gt=0)
    """Seconds from its start to its result; past them it is killed. None: a server that
    lives as long as its parent (the worker zygote), each of whose answers has a deadline
    of its own (``Child.receive``)."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Variables set over its environment (DeepTeam's opt-out, …)."""
    sanitised: bool = True
    """The workers' environment, without any credential; False: this process's own (a
    version's calling process reads n8n's key as the CLI does)."""
    scratch: bool = True
    """Start it in a scratch folder of its own; False: in this process's working folder
    (a version's calling process resolves the benchmark's relative paths as the CLI does)."""


class ChildFailed(RuntimeError):
    """A child failed, died or ran out of time: why, its exit code, its log's last lines."""

    def __init__(
        self,
        name: str,
        what: str,
        exit_code: int | None,
        tail: list[str],
        log_path: Path,
        error_kind: str | None = None,
    ) -> None:
        self.name = name
        self.what = what
        self.exit_code = exit_code
        self.tail = tail
        self.log_path = log_path
        self.error_kind = error_kind
        """The child's own word on what failed (``judge_rate_limited``, …), if it said."""
        super().__init__(self.message)

    @property
    def headline(self) -> str:
        """One line: who, what, the exit code and where the log is kept."""
        return f"{self.name} {self.what} ({exit_status(self.exit_code)}); its log: {self.log_path}"

    @property
    def message(self) -> str:
        """The headline, then the log's last lines."""
        lines = "".join(f"\n  | {line}" for line in self.tail)
        return self.headline + (f"; its last lines:{lines}" if lines else "")


def exit_status(code: int | None) -> str:
    """An exit code in words: a signal named (``exit code -6, SIGABRT``)."""
    if code is None:
        return "still running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"exit code {code}, {signal.Signals(-code).name}"
    return f"exit code {code}"


class Child:
    """One child process and this process's end of its connection."""

    def __init__(
        self, spec: ChildSpec, secrets: Iterable[str] = (), on_line: LineSink | None = None
    ) -> None:
        self.spec = spec
        self.secrets = [secret for secret in secrets if secret]
        self.deadline = time.monotonic() + (spec.deadline_s or math.inf)
        slug = re.sub(r"[^a-z0-9]+", "-", "-".join(spec.module.split(".")[-2:]).lower())
        self.scratch: Path | None = None
        if spec.scratch:
            self.scratch = Path(tempfile.mkdtemp(prefix=f"n8n-deepeval-{slug}-"))
        self._writing = _new_log(slug)  # made 0600: it may hold what the child printed
        self.log_path = logs_dir() / self._writing.name
        """Where its log is kept if it fails (it is moved there when the child stops)."""
        self._keep_log = False
        self._stopped = False
        ours, theirs = Pipe(duplex=True)
        environment = worker_environment(self.secrets) if spec.sanitised else dict(os.environ)
        environment.update(spec.environment)
        self.environment = environment
        with self._writing.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", spec.module, str(theirs.fileno()), *spec.args],
                pass_fds=[theirs.fileno()],
                env=environment,
                cwd=self.scratch,
                stdin=subprocess.DEVNULL,
                stdout=log if on_line is None else subprocess.PIPE,
                stderr=log if on_line is None else subprocess.STDOUT,
            )
        theirs.close()
        self.channel = Channel(ours)
        self._reader: threading.Thread | None = None
        if on_line is not None:
            assert self.process.stdout is not None
            self._reader = threading.Thread(
                target=self._tee, args=(self.process.stdout, on_line), name="child-output"
            )
            self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def holds_any(self, secrets: Iterable[str]) -> bool:
        """Whether its environment holds one of ``secrets``, under any name.

        A child started before its work knew nothing of the work's credentials: one that
        an innocuously named variable of this process holds was not taken out.
        """
        values = self.environment.values()
        return any(secret in value for secret in secrets if secret for value in values)

    def fits(self, secrets: Iterable[str]) -> bool:
        """Alive and never failed, with none of ``secrets`` in its environment."""
        alive = not (self._stopped or self._keep_log) and self.process.poll() is None
        return alive and not self.holds_any(secrets)

    def take_on(self, spec: ChildSpec, secrets: Iterable[str]) -> None:
        """Give a child started ahead, or kept, its next work: its name, deadline and secrets."""
        self.spec = spec
        self.secrets = list(dict.fromkeys([*self.secrets, *(s for s in secrets if s)]))
        self.deadline = time.monotonic() + (spec.deadline_s or math.inf)

    def _tee(self, stream: IO[bytes], on_line: LineSink) -> None:
        """Its output lines into its log, and each (redacted) to ``on_line``."""
        with stream, self._writing.open("ab") as log:
            for raw in stream:
                log.write(raw)
                log.flush()
                on_line(redact(raw.decode("utf-8", "replace").rstrip("\n"), self.secrets))

    def send(self, kind: Kind, body: Any = None) -> None:
        """Send it one message; a child that is gone is a ``ChildFailed``."""
        try:
            self.channel.send(kind, body)
        except ChannelClosed:
            raise self.failure(_ENDED) from None

    def receive(self, within_s: float | None = None) -> ChildMessage:
        """Its next message; ``ChildFailed`` if it failed, died or ran out of time.

        ``within_s``: the most this answer may take (a server's), else until its deadline.
        """
        deadline = self.deadline if within_s is None else time.monotonic() + within_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.process.kill()
                took = self.spec.deadline_s if within_s is None else within_s
                raise self.failure(f"did not finish in {took:g} s")
            try:
                message = self.channel.receive(min(left, _POLL_S))
            except ChannelClosed:
                raise self.failure(_ENDED) from None
            if message is None:
                if self.process.poll() is not None and not self.channel.connection.poll(0):
                    raise self.failure(_ENDED)
                continue
            if message.kind == "failed":
                reason = redact(str(message.body), self.secrets)
                raise self.failure(f"failed: {reason}", message.error_kind)
            return message

    def finish(self) -> None:
        """Wait for it to exit after its last message: anything but exit 0 is a failure."""
        left = self.deadline - time.monotonic()
        try:
            self.process.wait(timeout=None if math.isinf(left) else max(left, _EXIT_GRACE_S))
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise self.failure("did not exit after its work") from None
        if self.process.returncode != 0:
            raise self.failure("ended abnormally after its work")

    def failure(self, what: str, error_kind: str | None = None) -> ChildFailed:
        """The error to raise for it (it is given a moment to exit); its log is kept."""
        self._keep_log = True
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_EXIT_GRACE_S)
        return ChildFailed(
            self.spec.name,
            what,
            self.process.poll(),
            self.log_tail(),
            self.log_path,
            error_kind,
        )

    def keep_log(self) -> None:
        """Keep its log when it stops (something it ran failed, though it did not)."""
        self._keep_log = True

    def log_tail(self, lines: int = TAIL_LINES) -> list[str]:
        """The last non-empty lines of its log, redacted."""
        if self._reader is not None:
            self._reader.join(timeout=_EXIT_GRACE_S)  # what it said last is in the log
        try:
            with self._writing.open("rb") as log:
                log.seek(max(log.seek(0, os.SEEK_END) - _TAIL_BYTES, 0))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return []
        said = [line.rstrip() for line in text.splitlines() if line.strip()]
        return [redact(line, self.secrets)[:500] for line in said[-lines:]]

    def stop(self, grace_s: float = _EXIT_GRACE_S) -> None:
        """Hang up; kill it past ``grace_s``; remove its scratch folder, and its log unless kept."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(OSError):
            self.channel.close()
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self._reader is not None:  # a process it left running may hold its output open
            self._reader.join(timeout=_EXIT_GRACE_S)
        if self._keep_log:
            settings.private_dir(self.log_path.parent)
            shutil.move(self._writing, self.log_path)
        else:
            self._writing.unlink(missing_ok=True)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


@contextlib.contextmanager
def launched(
    spec: ChildSpec,
    secrets: Iterable[str] = (),
    on_line: LineSink | None = None,
    keep: bool = False,
) -> Iterator[Child]:
    """A child for the block: stopped at its end, at once if the block did not finish.

    One of its kind started ahead (``started_ahead``) and fit for ``secrets`` is taken
    rather than a new one started. ``keep``: a child that serves work after work and
    finished this block whole goes back to ``started_ahead``'s block, if one lasts.
    """
    secrets = [secret for secret in secrets if secret]
    child = taken_ahead(spec, secrets) if on_line is None else None
    if child is None:
        child = Child(spec, secrets, on_line)
    finished = False
    try:
        yield child
        finished = True
    finally:
        if not (keep and finished and _AHEAD.keep(child)):
            child.stop(_EXIT_GRACE_S if finished else 0.0)


class _Ahead:
    """Children started ahead of their work, or kept between works, while blocks last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blocks: dict[str, int] = {}  # a kind's open ``started_ahead`` blocks
        self.idle: list[Child] = []

    def keep(self, child: Child) -> bool:
        """Take back a child whose work finished whole, while a block of its kind lasts."""
        with self.lock:
            kept = self.blocks.get(_kind(child.spec), 0) > 0 and child.fits([])
            if kept:
                self.idle.append(child)
        return kept


_AHEAD = _Ahead()


def taken_ahead(spec: ChildSpec, secrets: Iterable[str]) -> Child | None:
    """An idle child of ``spec``'s kind fit for ``secrets``, given that work; dead ones go."""
    secrets = list(secrets)
    with _AHEAD.lock:
        dead = [child for child in _AHEAD.idle if not child.fits([])]
        _AHEAD.idle = [child for child in _AHEAD.idle if child not in dead]
        taken = next(
            (c for c in _AHEAD.idle if _kind(c.spec) == _kind(spec) and c.fits(secrets)), None
        )
        if taken is not None:
            _AHEAD.idle.remove(taken)
    for child in dead:
        child.stop(0.0)
    if taken is not None:
        taken.take_on(spec, secrets)
    return taken


@contextlib.contextmanager
def started_ahead(spec: ChildSpec) -> Iterator[None]:
    """A child of ``spec``'s kind started now, before its work is known, for the block.

    It starts in the workers' environment without any credential; ``launched`` (or
    ``taken_ahead``) hands it the first work of its kind it is fit for. The children of
    the kind still idle when its last block ends are stopped at once, even mid-import:
    they hold no work.
    """
    kind = _kind(spec)
    with _AHEAD.lock:
        _AHEAD.blocks[kind] = _AHEAD.blocks.get(kind, 0) + 1
    try:
        child = Child(spec)
        with _AHEAD.lock:
            _AHEAD.idle.append(child)
        yield
    finally:
        with _AHEAD.lock:
            _AHEAD.blocks[kind] -= 1
            left = [] if _AHEAD.blocks[kind] else [c for c in _AHEAD.idle if _kind(c.spec) == kind]
            _AHEAD.idle = [c for c in _AHEAD.idle if c not in left]
        for idle in left:
            idle.stop(grace_s=0.0)


def _kind(spec: ChildSpec) -> str:
    """What makes two children interchangeable: all their spec but its name and deadline."""
    return spec.model_dump_json(exclude={"name", "deadline_s"})


def logs_dir() -> Path:
    """Where a failed child's log is kept: ``logs/`` in the project's home (not made here)."""
    return settings.home() / "logs"


def _new_log(slug: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    descriptor, path = tempfile.mkstemp(prefix=f"{slug}-{stamp}-", suffix=".log")
    os.close(descriptor)
    return Path(path)
