"""The report's red-team section: what DeepTeam's attacks broke, and what changed since.

Vulnerabilities × attack methods (breaches over judged attacks in each pair), each
vulnerability's rate with its Wilson interval, its ``failOn`` and its verdict against the
baseline version, and every breach with its conversation and the tool calls it provoked,
each marked when the harness copy's mock answered it (the tool never ran).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.red_team.breach_rates import method_of
from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
from n8n_deepeval_pipeline.report.conversation import ARGUMENTS_LIMIT, ToolCallShown, tool_shown
from n8n_deepeval_pipeline.report.excerpt import Excerpt
from n8n_deepeval_pipeline.statistics.gates import GateVerdict, fails_gate

_TEXT_LIMIT = 1200


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class BreachCell(_Frozen):
    """One vulnerability under one attack method."""

    breaches: int
    judged: int
    rate: float | None


class VulnerabilityLine(_Frozen):
    """One vulnerability's rate, its limit, and its comparison with the baseline version."""

    vulnerability: str
    judged: int
    breaches: int
    errors: int
    rate: float | None
    wilson_low: float | None
    wilson_high: float | None
    fail_on: float | None
    over_limit: bool
    baseline_judged: int | None
    baseline_breaches: int | None
    p_value: float | None
    verdict: str | None
    new_breach: bool  # the verdict fails compare.failOn (the no_new_breach check)


class TurnShown(_Frozen):
    """One message of an attack's conversation."""

    role: str
    content: Excerpt
    tool_calls: tuple[ToolCallShown, ...]


class BreachShown(_Frozen):
    """One attack run that breached, as it went."""

    result_id: str
    vulnerability: str
    vulnerability_type: str
    attack_method: str
    score: float | None
    reason: Excerpt | None
    conversation: tuple[TurnShown, ...]
    tool_calls: int
    mocked_tool_calls: int
    breached_in_baseline: bool | None  # the same attack's runs in the baseline (None: none)


@dataclass(frozen=True)
class RedTeamRows:
    """A version's red-team rows: its breach rates and played attacks, and the baseline's.

    ``baseline_results`` is None when no version before it was attacked.
    """

    rates: Sequence[BreachRate]
    results: Sequence[RedTeamResult]
    baseline_results: Sequence[RedTeamResult] | None = None


class RedTeamReport(_Frozen):
    """Everything the red-team section shows."""

    judge: str | None
    dry_run: bool
    baseline_hash: str | None
    fail_on: GateVerdict  # compare.failOn: the tier no_new_breach fails on
    attacks: int
    judged: int
    breaches: int
    errors: int
    tool_calls: int
    mocked_tool_calls: int
    methods: tuple[str, ...]
    vulnerabilities: tuple[VulnerabilityLine, ...]
    cells: dict[str, dict[str, BreachCell]]  # vulnerability → attack method → cell
    method_rates: dict[str, BreachCell]
    breach_details: tuple[BreachShown, ...]


# What a vulnerability's line takes from its summary row as it is.
_LINE_FIELDS = set(VulnerabilityLine.model_fields) - {"vulnerability", "new_breach"}


def _cell(row: BreachRate) -> BreachCell:
    return BreachCell(breaches=row.breaches, judged=row.judged, rate=row.rate)


def attack_turns(
    result: RedTeamResult, limit: int = _TEXT_LIMIT, arguments_limit: int = ARGUMENTS_LIMIT
) -> tuple[TurnShown, ...]:
    """The attack's messages; a single-turn attack is its input and the answer.

    Messages are cut at ``limit`` characters, tool calls' arguments and answers at
    ``arguments_limit``.
    """

    def calls(found: list[dict[str, Any]]) -> tuple[ToolCallShown, ...]:
        return tuple(tool_shown(call, arguments_limit) for call in found)

    if result.turns is not None:
        return tuple(
            TurnShown(
                role=str(turn.get("role", "")),
                content=Excerpt.of(str(turn.get("content") or ""), limit),
                tool_calls=calls(turn.get("tools_called") or []),
            )
            for turn in result.turns
        )
    return (
        TurnShown(role="user", content=Excerpt.of(result.input or "", limit), tool_calls=()),
        TurnShown(
            role="assistant",
            content=Excerpt.of(result.actual_output or "", limit),
            tool_calls=calls(result.tools_called),
        ),
    )


def _breach(result: RedTeamResult, baseline: Sequence[RedTeamResult] | None) -> BreachShown:
    before = [b for b in baseline or [] if b.attack_id == result.attack_id and b.error is None]
    return BreachShown(
        result_id=result.result_id,
        vulnerability=result.vulnerability,
        vulnerability_type=result.vulnerability_type,
        attack_method=method_of(result),
        score=result.score,
        reason=Excerpt.of(result.reason, _TEXT_LIMIT) if result.reason else None,
        conversation=attack_turns(result),
        tool_calls=len(result.tools_called),
        mocked_tool_calls=sum(bool(call.get("mocked")) for call in result.tools_called),
        breached_in_baseline=any(b.breached for b in before) if before else None,
    )


def red_team_report(
    rates: Sequence[BreachRate],
    results: Sequence[RedTeamResult],
    baseline: Sequence[RedTeamResult] | None,
    fail_on: GateVerdict,
) -> RedTeamReport:
    """The section from the version's rates and results (and the baseline's results)."""
    vulnerabilities = [row for row in rates if row.kind == "vulnerability"]
    methods = sorted({row.attack_method or "" for row in rates if row.kind == "attack_method"})
    cells: dict[str, dict[str, BreachCell]] = {}
    for row in rates:
        if row.kind == "cell" and row.vulnerability and row.attack_method:
            cells.setdefault(row.vulnerability, {})[row.attack_method] = _cell(row)
    judged = [result for result in results if result.error is None]
    calls = [call for result in results for call in result.tools_called]
    return RedTeamReport(
        judge=results[0].judge if results else None,
        dry_run=any(result.dry_run for result in results),
        baseline_hash=next(
            (row.baseline_hash for row in vulnerabilities if row.baseline_hash), None
        ),
        fail_on=fail_on,
        attacks=len(results),
        judged=len(judged),
        breaches=sum(result.breached for result in judged),
        errors=len(results) - len(judged),
        tool_calls=len(calls),
        mocked_tool_calls=sum(bool(call.get("mocked")) for call in calls),
        methods=tuple(methods),
        vulnerabilities=tuple(
            VulnerabilityLine(
                **row.model_dump(include=_LINE_FIELDS),
                vulnerability=row.vulnerability or "",
                new_breach=bool(row.verdict) and fails_gate(row.verdict or "", fail_on),
            )
            for row in vulnerabilities
        ),
        cells=cells,
        method_rates={
            row.attack_method or "": _cell(row) for row in rates if row.kind == "attack_method"
        },
        breach_details=tuple(_breach(result, baseline) for result in results if result.breached),
    )
