"""What one sensor tick hands to runs: the cursor, sampling, idle sessions and the hourly cap.

The cursor is the highest execution id seen, the executions below it still running or
waiting (``pending``: they are looked at again each tick until they end), the chat
sessions still open, and the workflow versions seen (n8n's version id → the pipeline's
hash, ``online.versions``). An execution is decided once: handed to a run, or left out by
sampling, the cap, its status or mode, or as a call the pipeline made itself (a benchmark
run, a simulated user's turn, an attack: ``n8n_api.own_traffic``); the cursor is stored
with the tick, so a restart (the cursor read back) neither scores an execution twice nor
skips one. Sampling hashes the execution's id (a session's id for a conversation)
against ``sampleRate``: a restart samples the same ones. A chat session handed to a run
is remembered for ``sessionResumeDays``: a chat that goes on is handed on again whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline.benchmark.online import OnlineConfig

# n8n's statuses of an execution that has not ended: it may still become a success.
UNFINISHED = frozenset({"new", "running", "waiting", "unknown"})
_SCORED_STATUS = "success"
_HASH_SPACE = 2**64

ItemKind = Literal["execution", "session"]


class SeenExecution(BaseModel):
    """An execution as the sensor sees it: id, when it started, mode, status, session."""

    model_config = ConfigDict(frozen=True)

    id: int
    started_at: datetime
    mode: str | None = None
    status: str | None = None
    session: str | None = None
    version_id: str | None = None  # n8n's id of the workflow version that ran it
    from_pipeline: bool = False  # a call the pipeline made (it carries its mark)


class OpenSession(BaseModel):
    """A chat session whose messages are still coming in (or, scored, may come in again)."""

    execution_ids: list[int]
    first_started: datetime
    last_started: datetime
    version_id: str | None = None  # of its latest message's execution


class OnlineCursor(BaseModel):
    """The sensor's cursor, stored as JSON text."""

    started: bool = False  # a first tick only notes where the traffic stands
    last_id: int = 0
    pending: list[int] = Field(default_factory=list)  # below last_id, not ended yet
    hour: str | None = None  # the clock hour scored_in_hour counts in
    scored_in_hour: int = 0
    open_sessions: dict[str, OpenSession] = Field(default_factory=dict)
    # Sessions handed to a run, kept sessionResumeDays after their last message: a chat
    # that goes on is scored again whole, replacing its earlier score (same score id).
    scored_sessions: dict[str, OpenSession] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)  # n8n version id → workflow hash

    @classmethod
    def read(cls, text: str | None) -> OnlineCursor:
        """The cursor a tick starts from (a first tick: none)."""
        return cls() if not text else cls.model_validate_json(text)


class ScoreItem(BaseModel):
    """One thing to score: an execution, or a chat session's executions in order."""

    model_config = ConfigDict(frozen=True)

    kind: ItemKind
    key: str  # the execution id, or the session id
    execution_ids: list[int]
    started_at: datetime
    n8n_version_id: str | None = None  # the version that ran it (a session: its last message)
    workflow_hash: str | None = None  # that version's hash, when the sensor could name it

    @property
    def day(self) -> str:
        """The daily partition it belongs to: the UTC day its first execution started."""
        return self.started_at.date().isoformat()


class Tick(BaseModel):
    """What a tick hands to runs, the cursor after it, and what it left out and why."""

    items: list[ScoreItem]
    cursor: OnlineCursor
    not_sampled: int = 0
    capped: int = 0
    not_scored_status: int = 0  # ended without success (error, canceled, crashed)
    not_production: int = 0  # manual runs, n8n's evaluation runs
    from_pipeline: int = 0  # the pipeline's own calls: benchmark runs, simulations, attacks


def sampled(key: str, rate: float) -> bool:
    """Whether ``key`` is in the sample: its hash, read as a fraction, is below ``rate``."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") < rate * _HASH_SPACE


def is_production(execution: SeenExecution, include_manual: bool) -> bool:
    """Not n8n's own evaluation runs; not runs started in the editor unless asked."""
    return execution.mode != "evaluation" and (include_manual or execution.mode != "manual")


def undecided(executions: Iterable[SeenExecution], cursor: OnlineCursor) -> list[SeenExecution]:
    """The executions the cursor has not decided: above its last id, or pending; id order."""
    pending = set(cursor.pending)
    found = {e.id: e for e in executions if e.id > cursor.last_id or e.id in pending}
    return [found[number] for number in sorted(found)]


def _hour(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H")


class _Planner:
    """One tick's bookkeeping: items chosen, cap counted, sessions opened and closed."""

    def __init__(self, cursor: OnlineCursor, config: OnlineConfig, now: datetime) -> None:
        self.config, self.now = config, now
        same_hour = cursor.hour == _hour(now)
        self.scored_in_hour = cursor.scored_in_hour if same_hour else 0
        self.sessions = {key: s.model_copy(deep=True) for key, s in cursor.open_sessions.items()}
        self.scored = {key: s.model_copy(deep=True) for key, s in cursor.scored_sessions.items()}
        self.tick = Tick(items=[], cursor=cursor)

    def offer(self, item: ScoreItem) -> None:
        """Score it unless this hour's cap is reached."""
        if self.scored_in_hour >= self.config.max_per_hour:
            self.tick.capped += 1
            return
        self.scored_in_hour += 1
        self.tick.items.append(item)

    def see(self, execution: SeenExecution, single_turn: bool, conversational: bool) -> None:
        if execution.from_pipeline:
            self.tick.from_pipeline += 1
        elif not is_production(execution, self.config.include_manual):
            self.tick.not_production += 1
        elif execution.status != _SCORED_STATUS:
            self.tick.not_scored_status += 1
        else:
            self._see_success(execution, single_turn, conversational)

    def _see_success(
        self, execution: SeenExecution, single_turn: bool, conversational: bool
    ) -> None:
        key = str(execution.id)
        if single_turn:
            if sampled(key, self.config.sample_rate):
                self.offer(ScoreItem(kind="execution", key=key, execution_ids=[execution.id],
                                     started_at=execution.started_at,
                                     n8n_version_id=execution.version_id))  # fmt: skip
            else:
                self.tick.not_sampled += 1
        if conversational and execution.session is not None:
            self._join(execution.session, execution)

    def _join(self, session: str, execution: SeenExecution) -> None:
        if not sampled(f"session:{session}", self.config.sample_rate):
            return
        found = self.sessions.get(session) or self._resumed(session, execution)
        if found is None:
            self.sessions[session] = OpenSession(
                execution_ids=[execution.id],
                first_started=execution.started_at,
                last_started=execution.started_at,
                version_id=execution.version_id,
            )
            return
        self.sessions[session] = found  # a scored chat that goes on is open again, whole
        found.execution_ids.append(execution.id)
        if execution.started_at >= found.last_started:
            found.version_id = execution.version_id
        found.last_started = max(found.last_started, execution.started_at)

    def _resumed(self, session: str, execution: SeenExecution) -> OpenSession | None:
        """A scored session this message goes on with, if within ``sessionResumeDays``."""
        scored = self.scored.pop(session, None)
        kept = timedelta(days=self.config.session_resume_days)
        if scored is None or execution.started_at - scored.last_started >= kept:
            return None
        return scored

    def close_idle(self) -> None:
        """Hand on the sessions idle for ``sessionIdleMinutes``, oldest first.

        Each is kept among the scored ones (capped or not): a chat that goes on within
        ``sessionResumeDays`` is scored again with every message, first to last.
        """
        idle = timedelta(minutes=self.config.session_idle_minutes)
        done = [key for key, s in self.sessions.items() if self.now - s.last_started >= idle]
        for key in sorted(done, key=lambda k: self.sessions[k].first_started):
            session = self.sessions.pop(key)
            self.offer(ScoreItem(kind="session", key=key, execution_ids=session.execution_ids,
                                 started_at=session.first_started,
                                 n8n_version_id=session.version_id))  # fmt: skip
            self.scored[key] = session

    def kept_scored(self) -> dict[str, OpenSession]:
        """The scored sessions whose last message is within ``sessionResumeDays``."""
        kept = timedelta(days=self.config.session_resume_days)
        return {key: s for key, s in self.scored.items() if self.now - s.last_started < kept}


def plan_tick(
    cursor: OnlineCursor,
    executions: Iterable[SeenExecution],
    config: OnlineConfig,
    now: datetime,
    single_turn: bool = True,
    conversational: bool = False,
) -> Tick:
    """The items a tick scores and the cursor after it.

    ``executions``: those above the cursor's last id, and its pending ones as they are
    now (one n8n no longer has is dropped). ``single_turn``: the metrics include ones
    scored per execution; ``conversational``: ones scored per chat session (its
    executions are gathered until it is idle).
    """
    planner = _Planner(cursor, config, now)
    seen = undecided(executions, cursor)
    pending = []
    for execution in seen:
        if execution.status in UNFINISHED:  # it may yet succeed: looked at again next tick
            pending.append(execution.id)
        else:
            planner.see(execution, single_turn, conversational)
    planner.close_idle()
    planner.tick.cursor = OnlineCursor(
        started=True,
        last_id=max([cursor.last_id, *(execution.id for execution in seen)]),
        pending=pending,
        hour=_hour(now),
        scored_in_hour=planner.scored_in_hour,
        open_sessions=planner.sessions,
        scored_sessions=planner.kept_scored(),
        versions=cursor.versions,
    )
    return planner.tick
