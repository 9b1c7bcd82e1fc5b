"""The benchmark file's ``online`` section: production executions scored as they happen.

Apart from the benchmark's dataset runs: the sensor reads the workflow's new executions
in n8n, samples them and scores them with the reference-free metrics named here (they
need no expected answer: production traffic has none).
"""

from __future__ import annotations

from pydantic import Field

from n8n_deepeval_pipeline.config.model import ConfigModel
from n8n_deepeval_pipeline.statistics.gates import GateVerdict

# What a production execution can give a metric: no expected output, tools or context.
REFERENCE_FREE_FIELDS = frozenset({"input", "actual_output", "tools_called", "trace", "turns"})


class DropCheck(ConfigModel):
    """The asset check comparing the last window's pass rate with the window before it."""

    window_days: int = Field(default=1, ge=1, le=90, description="Days in each window.")
    fail_on: GateVerdict = Field(
        default="likely_regression",
        description="The comparison's tier that warns: likely_regression or regression.",
    )


class VersionCheck(ConfigModel):
    """The asset check comparing the newest version's production pass rate with the one before."""

    lookback_days: int = Field(
        default=7,
        ge=1,
        le=90,
        description="Days of traffic (ending on the summary's day) each version's items are "
        "counted over.",
    )
    fail_on: GateVerdict | None = Field(
        default=None,
        description="The comparison's tier that fails the check: regression or "
        "likely_regression (default: compare.failOn, as the benchmark's no_regression check).",
    )


class OnlineConfig(ConfigModel):
    """Score the workflow's production executions, sampled and capped."""

    metrics: list[str] = Field(
        min_length=1,
        description="Labels of the benchmark's metrics to score production traffic with; "
        "each must be reference-free (no expected output, expected tools or context). "
        "Conversational ones score a chat session, the others each execution.",
    )
    sample_rate: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Share of executions (chat sessions) scored, chosen by a hash of the "
        "execution (session) id, so a restart picks the same ones.",
    )
    max_per_hour: int = Field(
        default=60, ge=1, description="At most this many scored a clock hour; the rest are not."
    )
    session_idle_minutes: float = Field(
        default=30,
        gt=0,
        description="A chat session is scored as one conversation once idle this long.",
    )
    session_resume_days: float = Field(
        default=7,
        gt=0,
        le=90,
        description="A chat session that goes on within this many days of its last message is "
        "scored again whole, its new score replacing the earlier one; later, it is a "
        "conversation of its own.",
    )
    max_cost_usd_per_day: float | None = Field(
        default=None,
        ge=0,
        description="Judge cost a UTC day may reach; then the sensor skips until the next day.",
    )
    include_manual: bool = Field(
        default=False, description="Also score runs started by hand in the editor."
    )
    drop_check: DropCheck = Field(
        default=DropCheck(),
        description="The no_pass_rate_drop check: the last window's pass rate against the one "
        "before (a warning, never a failure).",
    )
    version_check: VersionCheck = Field(
        default=VersionCheck(),
        description="The no_version_regression check: the newest workflow version's production "
        "pass rate against the version registered before it, with the compare tiers.",
    )
