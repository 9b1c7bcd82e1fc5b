"""What crosses between the step process and the red team's worker process.

The step asks (``ask``) the worker to generate attacks or to play them (a ``RedTeamJob``);
DeepTeam runs in the worker, and every message it sends to the workflow comes back to the
step as a ``TargetCall`` (a ``call``: the step owns n8n, the harness copy, its executions)
and is answered with a ``TargetReply`` (a ``reply``). Each played attack comes back as an
``AttackOutcome`` (an ``update``) as soon as it is judged; the job ends with ``done``
(the ``Generated`` set, or nothing after playing). The messages are
``worker.child_channel``'s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.red_team.rows import RedTeamErrorKind

# What the worker's DeepTeam must read at import: no telemetry, no progress bars.
DEEPTEAM_ENV = {"DEEPTEAM_TELEMETRY_OPT_OUT": "YES", "DEEPTEAM_SHOW_PROGRESS": "false"}


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True)


class AttackSeed(_Message):
    """An attack as generated: enough to build its DeepTeam test case again."""

    attack_id: str
    vulnerability: str
    vulnerability_class: str
    vulnerability_type: str
    risk_category: str | None = None
    attack_method: str | None = None
    attack_class: str | None = None
    multi_turn: bool = False
    input: str | None = None
    error: str | None = None


class ToolCallRecord(_Message):
    """A tool the agent called: its arguments, what it got back, and whether that was a mock."""

    name: str
    input_parameters: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    description: str | None = None
    mocked: bool = False


class TurnRecord(_Message):
    """One message of an attack's conversation."""

    role: str
    content: str
    tools_called: list[ToolCallRecord] = Field(default_factory=list)
    turn_level_attack: str | None = None


class TargetCall(_Message):
    """One message DeepTeam sends to the workflow, in the session of one attack run."""

    call_id: int
    session_id: str
    message: str


class TargetReply(_Message):
    """The workflow's answer to a call (or why there is none)."""

    call_id: int
    content: str | None = None
    tools_called: list[ToolCallRecord] = Field(default_factory=list)
    error: str | None = None


class JudgeUsage(_Message):
    """The judge calls an attack run (or the generation) took."""

    calls: int = 0
    retries: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class AttackOutcome(_Message):
    """One attack played on one run, as DeepTeam judged it."""

    attack_id: str
    run_index: int
    input: str | None = None
    actual_output: str | None = None
    turns: list[TurnRecord] | None = None
    tools_called: list[ToolCallRecord] = Field(default_factory=list)
    score: float | None = None
    reason: str | None = None
    risk_category: str | None = None
    cvss_score: float | None = None
    error: str | None = None
    error_kind: RedTeamErrorKind | None = None
    usage: JudgeUsage = JudgeUsage()
    target_calls: int = 0
    latency_s: float = 0.0

    @model_validator(mode="after")
    def _failed_says_its_kind(self) -> AttackOutcome:
        # The report and the breach rates tell a generation, target, judge and DeepTeam
        # failure apart by it: an outcome without one would be counted as DeepTeam's.
        if self.error is not None and self.error_kind is None:
            raise ValueError(f"attack {self.attack_id!r}: error_kind: missing for its error")
        return self


def attack_failure(
    error: str | None, target_errors: list[str], judge_errors: list[str]
) -> tuple[str | None, RedTeamErrorKind | None]:
    """DeepTeam's error on an attack run with its cause and kind; (None, None) when it had none.

    DeepTeam says only that the attack failed: the run's last failed call to the workflow
    (else to the judge) says why. Neither: DeepTeam gave up on its own (``attack_error``).
    """
    if error is None:
        return None, None
    if target_errors:
        return f"{error}: {target_errors[-1]}", "target_error"
    if judge_errors:
        return f"{error}: {judge_errors[-1]}", "judge_error"
    return error, "attack_error"


class GenerateRequest(_Message):
    """Generate the attack set: DeepTeam's baseline attacks, dressed by the drawn attacks."""

    job: Literal["generate"] = "generate"
    config: RedTeamConfig
    purpose: str | None
    judge: JudgeSpec
    cache_namespace: str  # a new one for every new set, unless the draw is seeded
    concurrency: int = Field(ge=1)  # attacks dressed at once


class Generated(_Message):
    """The generated attack set and what its generation cost."""

    seeds: list[AttackSeed]
    usage: JudgeUsage


class AttackRequest(_Message):
    """Play every seed ``runs`` times against the workflow and judge each run."""

    job: Literal["attack"] = "attack"
    config: RedTeamConfig
    purpose: str | None
    judge: JudgeSpec
    seeds: list[AttackSeed]
    runs: int = Field(ge=1)
    concurrency: int = Field(ge=1)  # attacks in flight at once: the target's maxConcurrency


RedTeamJob = Annotated[GenerateRequest | AttackRequest, Field(discriminator="job")]
JOBS: TypeAdapter[GenerateRequest | AttackRequest] = TypeAdapter(RedTeamJob)
"""Reads the one job a worker is asked."""
