"""Judge state every worker shares, in one embedded SQLite file (WAL, safe across processes).

- the judge-call cache: a finished call's answer by a key of provider, model, generation
  settings, prompt, schema and namespace (errors are never stored; the first answer
  stays);
- who is asking which question now, so that identical questions asked at once by many
  evaluations make one call and all get the same answer (single flight);
- requests and tokens per minute per judge, paced as providers refill them: evenly
  (a call is due one interval after the one before, with a burst allowance);
- each judge's pacing: the calls it may have in flight (``judging.pacing.Concurrency``),
  a pause until its budget resets, the budget its last answer reported, and the request
  rate fitted to its refusals when it reports none (``judging.pacing.FittedRate``);
- a circuit breaker per judge: consecutive failed calls, and until when calls fail fast.

A judge is named by its ``JudgeSpec.identity`` (provider, model, endpoint): the judges
of a metric panel, or of metrics with judges of their own, are limited and broken
separately; the cache keeps their answers apart by provider, model and endpoint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from n8n_deepeval_pipeline.judging.pacing import (
    QUIET_S,
    WINDOW_S,
    Concurrency,
    FittedRate,
    RateLimits,
)
from n8n_deepeval_pipeline.settings import private_file

_SCHEMA = """
create table if not exists cache (
    key text primary key, answer text not null, prompt_tokens integer not null,
    completion_tokens integer not null, created real not null);
create table if not exists asking (
    key text primary key, pid integer not null, until real not null);
create table if not exists paced (
    judge text not null, budget text not null, due real not null,
    primary key (judge, budget));
create table if not exists pacing (
    judge text primary key, concurrency real not null, ceiling integer not null,
    threshold real, decreased_at real not null, paused_until real not null,
    remaining_requests integer, remaining_tokens integer,
    limit_requests integer, limit_tokens integer);
create table if not exists fitted_rates (judge text primary key, fitted text not null);
create table if not exists full_windows (judge text primary key, since real not null);
drop table if exists rate_window;
create table if not exists breakers (
    judge text primary key, failures integer not null, open_until real not null,
    last_error text);
drop table if exists rpm;
drop table if exists breaker;
"""


class CachedAnswer(BaseModel):
    """A judge answer as the cache keeps it."""

    answer: str
    prompt_tokens: int
    completion_tokens: int


def cache_key(
    provider: str,
    model: str,
    settings: dict[str, Any],
    prompt: str,
    schema: dict[str, Any] | None,
    namespace: str,
) -> str:
    """SHA-256 of everything that decides the answer."""
    identity = [provider, model, settings, prompt, schema, namespace]
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SharedState:
    """The SQLite file; each process opens its own connection."""

    FILE_NAME = "judge.sqlite"

    @classmethod
    def in_folder(cls, folder: Path) -> SharedState:
        """The state kept in a judge state folder."""
        return cls(folder / cls.FILE_NAME)

    @classmethod
    def of_process(cls, folder: Path) -> SharedState:
        """The one connection of this process to a folder's state, shared by all its judges.

        Every judge of a worker (a panel's, a metric's own) runs on the worker's one judge
        loop thread, so they take turns on it; a forked child opens its own.
        """
        key = (os.getpid(), folder)
        if key not in _OF_PROCESS:
            _OF_PROCESS[key] = cls.in_folder(folder)
        return _OF_PROCESS[key]

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        # SQLite gives its -wal and -shm files the mode of the database file.
        self.path = private_file(path)
        self._clock = clock  # wall-clock seconds, the same in every process (a test's own)
        # One connection per process (``of_process``), used from the judge loop thread.
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        self._set_up()

    def _set_up(self, attempts: int = 50) -> None:
        # Workers that open a new file at the same moment race to switch it to WAL, and
        # SQLite answers the losers "database is locked" without waiting on its busy
        # timeout: try again shortly (the switch is persistent, so this happens once).
        for attempt in range(attempts):
            try:
                self._db.execute("pragma journal_mode=wal")
                self._db.execute("pragma synchronous=normal")
                self._db.executescript(_SCHEMA)
                return
            except sqlite3.OperationalError as error:
                if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or attempt == attempts - 1:
                    raise
                time.sleep(0.05 + 0.05 * attempt)

    @contextmanager
    def _immediate(self) -> Iterator[None]:
        """A write transaction: other processes wait for it (``begin immediate``)."""
        self._db.execute("begin immediate")
        try:
            yield
        finally:
            self._db.execute("commit")

    # cache

    def cached(self, key: str) -> CachedAnswer | None:
        """A stored answer, if any."""
        row = self._db.execute(
            "select answer, prompt_tokens, completion_tokens from cache where key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return CachedAnswer(answer=row[0], prompt_tokens=row[1], completion_tokens=row[2])

    def store(self, key: str, answer: CachedAnswer) -> CachedAnswer:
        """Keep a successful answer; return the one kept (an earlier answer stays)."""
        self._db.execute(
            "insert or ignore into cache values (?, ?, ?, ?, ?)",
            (key, answer.answer, answer.prompt_tokens, answer.completion_tokens, self._clock()),
        )
        return self.cached(key) or answer

    def claim(self, key: str, lease_s: float) -> bool:
        """Become the one asking this question, unless a live process already is."""
        now = self._clock()
        with self._immediate():
            row = self._db.execute("select pid, until from asking where key = ?", (key,)).fetchone()
            if row is not None and row[1] > now and _alive(row[0]):
                return False
            self._db.execute(
                "insert or replace into asking values (?, ?, ?)", (key, os.getpid(), now + lease_s)
            )
            return True

    def release(self, key: str) -> None:
        """Stop asking (answered or failed): waiting processes look again."""
        self._db.execute("delete from asking where key = ? and pid = ?", (key, os.getpid()))

    def clear_cache(self) -> int:
        """Forget every cached answer; return how many there were."""
        return self._db.execute("delete from cache").rowcount

    # requests and tokens per minute
    def take_paced(
        self, judge: str, budget: str, per_minute: float, cost: float, burst: float
    ) -> float:
        """Book ``cost`` units of ``judge``'s ``budget`` (requests, tokens); else seconds to wait.

        Each unit is due 60 / ``per_minute`` s after the one before; up to ``burst``
        units may be booked ahead. A call bigger than the burst goes when nothing is
        booked ahead of it.
        """
        with self._immediate():
            return self._book(judge, budget, per_minute, cost, burst, self._clock())

    def _book(
        self, judge: str, budget: str, per_minute: float, cost: float, burst: float, now: float
    ) -> float:
        step = 60.0 / per_minute
        row = self._db.execute(
            "select due from paced where judge = ? and budget = ?", (judge, budget)
        ).fetchone()
        due = max(float(row[0]) if row else now, now)
        if due > now and due + cost * step - now > burst * step:
            # A call bigger than the burst may go at ``due`` itself.
            return max(due + min(cost - burst, 0.0) * step - now, 0.005)
        self._db.execute(
            "insert or replace into paced values (?, ?, ?)", (judge, budget, due + cost * step)
        )
        return 0.0

    def book_request(self, judge: str, per_minute: float | None, held: bool) -> float:
        """Book one request of ``judge``: 0 (it may go), else seconds to wait.

        Paced evenly (a burst of one) at ``per_minute`` (configured or told; None: none)
        or the rate fitted to its refusals, whichever is lower; a request that goes is
        counted for the fitting (``held``: it waited for its turn before). A judge with
        neither a known nor a fitted rate is neither paced nor written to.
        """
        if per_minute is None and not self.fitted_rate(judge).fitting:
            return 0.0
        now = self._clock()
        with self._immediate():
            fitted = self.fitted_rate(judge)
            rolled = fitted.rolled(now)
            fitted_per_minute = rolled.per_s * 60 if rolled.per_s else None
            paces = [pace for pace in (per_minute, fitted_per_minute) if pace]
            wait = self._book(judge, "requests", min(paces), 1, 1, now) if paces else 0.0
            binding = fitted_per_minute is not None and fitted_per_minute <= (
                per_minute or fitted_per_minute
            )
            after = rolled if wait > 0 else rolled.sent(now, held and binding)
            if after != fitted:
                self._keep_fitted(judge, after)
            return wait

    def repay_paced(self, judge: str, budget: str, per_minute: float, cost: float) -> None:
        """Correct a booking by ``cost`` units (negative: the call cost less than booked)."""
        self._db.execute(
            "update paced set due = due + ? where judge = ? and budget = ?",
            (cost * 60.0 / per_minute, judge, budget),
        )

    # pacing
    def _fitted(self, judge: str, ceiling: int, step: float = 1.0) -> Concurrency | None:
        row = self._db.execute(
            "select concurrency, ceiling, threshold, decreased_at from pacing where judge = ?",
            (judge,),
        ).fetchone()
        if row is None or row[1] != ceiling:
            return None
        limit, ceiling, threshold, decreased_at = row
        return Concurrency(limit, ceiling, threshold, decreased_at, step)

    def concurrency(self, judge: str, ceiling: int, first: int = 1) -> Concurrency:
        """The calls ``judge`` may have in flight now; ``first`` until it has answered."""
        fitted = self._fitted(judge, ceiling)
        return fitted or Concurrency(limit=float(min(max(first, 1), ceiling)), ceiling=ceiling)

    def fitted_rate(self, judge: str) -> FittedRate:
        """The request rate fitted to ``judge``'s refusals (unknown until it refused one)."""
        row = self._db.execute(
            "select fitted from fitted_rates where judge = ?", (judge,)
        ).fetchone()
        return FittedRate(**json.loads(row[0])) if row else FittedRate()

    def _keep_fitted(self, judge: str, fitted: FittedRate) -> None:
        self._db.execute(
            "insert or replace into fitted_rates values (?, ?)",
            (judge, json.dumps(dataclasses.asdict(fitted))),
        )

    def record_outcome(
        self,
        judge: str,
        ceiling: int,
        overloaded: bool,
        limits: RateLimits | None = None,
        *,
        start: Concurrency | None = None,
        sent_at: float | None = None,
        latency_s: float | None = None,
    ) -> Concurrency:
        """Fit ``judge``'s concurrency to one call's outcome; keep the budget it reported.

        ``overloaded``: the call was refused for its rate (a 429, 529, overloaded 503),
        sent at ``sent_at`` (``time.time()``); the calls in flight and the fitted request
        rate decrease together, once a window. ``start``: the concurrency of a judge
        that has not answered before, and its slow start's growth (by default half the
        ceiling, +1 an answer). ``latency_s``: how long its answers take, to start a
        fitted rate from what the calls in flight send.

        A success at the ceiling with no budget reported changes nothing: it is not
        written (a write waits for every other worker's; a read waits for none).
        """
        now = self._clock()
        start = start or Concurrency.start(ceiling)
        if not overloaded and (limits is None or not limits.told):
            current = self._fitted(judge, ceiling, start.step)
            if current is not None and current.succeeded() == current:
                return current
        with self._immediate():
            current = self._fitted(judge, ceiling, start.step) or start
            if current.threshold is None and current.limit < start.limit:
                current = start  # told its limits after a window widened while probing
            if overloaded:
                halved = current.overloaded(now)
                rate = self.fitted_rate(judge)
                first_per_s = halved.limit / (latency_s or WINDOW_S)
                refused = rate.refusal(now, now if sent_at is None else sent_at, first_per_s)
                self._keep_fitted(judge, refused)
                fitted = halved if refused.decreased_at == now else current
            else:
                fitted = current.succeeded()
            self._keep_concurrency(judge, fitted, limits)
            return fitted

    def widen_when_quiet(self, judge: str, ceiling: int, start: Concurrency) -> Concurrency:
        """The concurrency of ``judge`` while calls wait for it: widened after ``QUIET_S``.

        Widened (``Concurrency.widened``) once the window has been full that long with no
        refusal. Only a judge still probing (``start``: before its first answer), which never
        refused a call and told no limits; the time is counted from when a full window was
        first seen, and again from each widening.
        """
        current = self._fitted(judge, ceiling, start.step) or start
        if not current.unrefused or self.fitted_rate(judge).fitting or any(self.told_limits(judge)):
            return current
        now = self._clock()
        with self._immediate():
            current = self._fitted(judge, ceiling, start.step) or start
            row = self._db.execute(
                "select since from full_windows where judge = ?", (judge,)
            ).fetchone()
            if (row is not None and now - row[0] < QUIET_S) or not current.unrefused:
                return current
            widened = current if row is None else current.widened()
            self._db.execute("insert or replace into full_windows values (?, ?)", (judge, now))
            if widened != current:
                self._keep_concurrency(judge, widened, None)
            return widened

    def _keep_concurrency(self, judge: str, fitted: Concurrency, limits: RateLimits | None) -> None:
        told = limits if limits is not None and limits.told else None
        self._db.execute(
            "insert into pacing values (?, ?, ?, ?, ?, 0, ?, ?, ?, ?) on conflict (judge) do "
            "update set concurrency = excluded.concurrency, ceiling = excluded.ceiling, "
            "threshold = excluded.threshold, decreased_at = excluded.decreased_at, "
            "remaining_requests = coalesce(excluded.remaining_requests, remaining_requests), "
            "remaining_tokens = coalesce(excluded.remaining_tokens, remaining_tokens), "
            "limit_requests = coalesce(excluded.limit_requests, limit_requests), "
            "limit_tokens = coalesce(excluded.limit_tokens, limit_tokens)",
            (
                judge,
                fitted.limit,
                fitted.ceiling,
                fitted.threshold,
                fitted.decreased_at,
                told.remaining_requests if told else None,
                told.remaining_tokens if told else None,
                told.limit_requests if told else None,
                told.limit_tokens if told else None,
            ),
        )

    def pause(self, judge: str, seconds: float) -> None:
        """Hold every call of ``judge`` for ``seconds`` (a budget that must reset first)."""
        self._db.execute(
            "update pacing set paused_until = max(paused_until, ?) where judge = ?",
            (self._clock() + seconds, judge),
        )

    def paused_for(self, judge: str) -> float:
        """Seconds until calls of ``judge`` may go again (0: now)."""
        row = self._db.execute(
            "select paused_until from pacing where judge = ?", (judge,)
        ).fetchone()
        return max(float(row[0]) - self._clock(), 0.0) if row else 0.0

    def told_limits(self, judge: str) -> tuple[int | None, int | None]:
        """The requests and tokens per minute ``judge``'s provider said it allows."""
        row = self._db.execute(
            "select limit_requests, limit_tokens from pacing where judge = ?", (judge,)
        ).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def pacing_view(self) -> dict[str, dict[str, Any]]:
        """Each judge's concurrency and reported budget, for the run's metadata."""
        rows = self._db.execute(
            "select judge, concurrency, remaining_requests, remaining_tokens from pacing"
        ).fetchall()
        return {
            judge: {
                "concurrency": int(limit),
                "remaining_requests": requests,
                "remaining_tokens": tokens,
            }
            for judge, limit, requests, tokens in rows
        }

    # circuit breaker

    def breaker_open(self, judge: str) -> tuple[bool, str | None]:
        """Whether calls to ``judge`` should fail fast now, and the failure that opened it."""
        row = self._db.execute(
            "select open_until, last_error from breakers where judge = ?", (judge,)
        ).fetchone()
        if row is None:
            return False, None
        return self._clock() < row[0], row[1]

    def record_failure(self, judge: str, error: str, threshold: int, cool_down_s: float) -> int:
        """Count a failed call of ``judge``; open its breaker at ``threshold`` in a row."""
        with self._immediate():
            failures = self._db.execute(
                "insert into breakers values (?, 1, 0, ?) on conflict (judge) do update "
                "set failures = failures + 1, last_error = excluded.last_error "
                "returning failures",
                (judge, error),
            ).fetchone()[0]
            if failures >= threshold:
                self._db.execute(
                    "update breakers set open_until = ? where judge = ?",
                    (self._clock() + cool_down_s, judge),
                )
            return int(failures)

    def record_success(self, judge: str) -> None:
        """A call of ``judge`` worked: its run of failures is over.

        Written only when there is a run to end (a failure recorded after this look is
        one after this success, as it would be had the write come first).
        """
        failing = self._db.execute(
            "select 1 from breakers where judge = ? and (failures > 0 or open_until > 0)",
            (judge,),
        ).fetchone()
        if failing is not None:
            self._db.execute(
                "update breakers set failures = 0, open_until = 0 where judge = ?", (judge,)
            )

    def reset_breaker(self) -> None:
        """Close every judge's breaker (at the start of a scoring step)."""
        self._db.execute("update breakers set failures = 0, open_until = 0")


_OF_PROCESS: dict[tuple[int, Path], SharedState] = {}


def _alive(pid: int) -> bool:
    """Whether a process of this machine still runs (a crashed asker frees its question)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
