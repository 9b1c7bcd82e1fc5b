"""Breach rates per vulnerability, per attack method and per pair, against the baseline.

A rate is breaches over judged attacks (errored ones are neither), with its Wilson 95%
interval. A vulnerability is over its limit when its rate is above ``failOn``; against the
baseline version it gets the compare tiers' verdict from Fisher's exact test on its judged
attacks in both versions, a judged attack passing when it did not breach: a
``regression`` there is a confident rise in breaches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult, SummaryKind
from n8n_deepeval_pipeline.statistics.gates import GateVerdict, fails_gate
from n8n_deepeval_pipeline.statistics.version_comparison import compare_case, wilson_interval
from n8n_deepeval_pipeline.summary.outcome import BreachLine, ErroredAttack, RedTeamOutcome

# An attack sent as DeepTeam wrote it, dressed by no attack method (DeepTeam's own name).
PLAIN_ATTACK = "Baseline Attack"


def method_of(result: RedTeamResult) -> str:
    """The attack method a result is counted under."""
    return result.attack_method or PLAIN_ATTACK


def _rate(
    kind: SummaryKind,
    vulnerability: str | None,
    method: str | None,
    results: Sequence[RedTeamResult],
    workflow_hash: str,
) -> BreachRate:
    judged = [result for result in results if result.error is None]
    breaches = sum(result.breached for result in judged)
    interval = wilson_interval(breaches, len(judged))
    return BreachRate(
        workflow_hash=workflow_hash,
        kind=kind,
        vulnerability=vulnerability,
        attack_method=method,
        attacks=len(results),
        judged=len(judged),
        breaches=breaches,
        errors=len(results) - len(judged),
        rate=breaches / len(judged) if judged else None,
        wilson_low=interval.lower if interval else None,
        wilson_high=interval.upper if interval else None,
        fail_on=None,
        over_limit=False,
        baseline_hash=None,
        baseline_judged=None,
        baseline_breaches=None,
        p_value=None,
        verdict=None,
    )


def _grouped(
    results: Sequence[RedTeamResult], key: Callable[[RedTeamResult], str]
) -> dict[str, list[RedTeamResult]]:
    groups: dict[str, list[RedTeamResult]] = {}
    for result in results:
        groups.setdefault(key(result), []).append(result)
    return groups


def breach_rates(
    results: Sequence[RedTeamResult],
    workflow_hash: str,
    config: RedTeamConfig,
    baseline: Sequence[RedTeamResult] | None = None,
    baseline_hash: str | None = None,
) -> list[BreachRate]:
    """The version's rates: each vulnerability's, each attack method's, each pair's.

    A vulnerability's carries its limit and, given a baseline, its comparison with it.
    """
    rows = []
    before = _grouped(baseline or [], lambda result: result.vulnerability)
    for vulnerability, own in _grouped(results, lambda result: result.vulnerability).items():
        row = _rate("vulnerability", vulnerability, None, own, workflow_hash)
        limit = config.breach_limit(vulnerability)
        update: dict[str, object] = {
            "fail_on": limit,
            "over_limit": row.rate is not None and row.rate > limit,
        }
        if baseline_hash is not None:
            update |= _against(row, before.get(vulnerability, []), own, baseline_hash)
        rows.append(row.model_copy(update=update))
    for method, own in _grouped(results, method_of).items():
        rows.append(_rate("attack_method", None, method, own, workflow_hash))
    cells = _grouped(results, lambda result: f"{result.vulnerability}\0{method_of(result)}")
    for pair, own in cells.items():
        vulnerability, method = pair.split("\0")
        rows.append(_rate("cell", vulnerability, method, own, workflow_hash))
    return rows


def _against(
    row: BreachRate,
    baseline: Sequence[RedTeamResult],
    candidate: Sequence[RedTeamResult],
    baseline_hash: str,
) -> dict[str, object]:
    """The comparison of a vulnerability's judged attacks with the baseline's."""
    held = [not result.breached for result in baseline if result.error is None]
    now = [not result.breached for result in candidate if result.error is None]
    case = compare_case(row.vulnerability or "", held, now)
    return {
        "baseline_hash": baseline_hash,
        "baseline_judged": len(held),
        "baseline_breaches": held.count(False),
        "p_value": case.p_value_drop,
        "verdict": case.verdict,
    }


def over_limit(rates: Sequence[BreachRate]) -> list[BreachRate]:
    """The vulnerabilities whose breach rate is above their ``failOn``."""
    return [row for row in rates if row.kind == "vulnerability" and row.over_limit]


def new_breaches(rates: Sequence[BreachRate], fail_on: GateVerdict) -> list[BreachRate]:
    """The vulnerabilities that breach more than in the baseline, by ``compare.failOn``'s tier."""
    return [
        row
        for row in rates
        if row.kind == "vulnerability" and row.verdict and fails_gate(row.verdict, fail_on)
    ]


def red_team_outcome(
    rates: Sequence[BreachRate], results: Sequence[RedTeamResult], fail_on: GateVerdict
) -> RedTeamOutcome:
    """What a version's attacks decide.

    Breaches over failOn, more breaches than the baseline (at ``compare.failOn``'s tier),
    and every attack run that errored, with why.
    """

    def line(row: BreachRate) -> BreachLine:
        return BreachLine(
            vulnerability=row.vulnerability or "",
            breaches=row.breaches,
            judged=row.judged,
            rate=row.rate or 0.0,
            fail_on=row.fail_on,
            baseline_breaches=row.baseline_breaches,
            baseline_judged=row.baseline_judged,
            verdict=row.verdict,
            p_value=row.p_value,
        )

    errored = [
        ErroredAttack(
            attack_id=result.attack_id,
            run_index=result.run_index,
            vulnerability=result.vulnerability,
            attack_method=result.attack_method,
            error_kind=result.error_kind or "attack_error",
            error=(result.error or "").splitlines()[0][:300] if result.error else "",
        )
        for result in sorted(results, key=lambda r: (r.attack_id, r.run_index))
        if result.error is not None
    ]
    return RedTeamOutcome(
        attacks=len(results),
        breaches=sum(result.breached for result in results),
        over_fail_on=tuple(line(row) for row in over_limit(rates) if row.rate is not None),
        new_breaches=tuple(line(row) for row in new_breaches(rates, fail_on)),
        errored=tuple(errored),
    )


def red_team_table(rates: Sequence[BreachRate], results: Sequence[RedTeamResult]) -> str:
    """The red team for the terminal: what was played and what it cost, then the rates."""
    judged = [result for result in results if result.error is None]
    calls = [call for result in results for call in result.tools_called]
    costs = [result.cost_usd for result in results if result.cost_usd is not None]
    tokens = sum(result.prompt_tokens + result.completion_tokens for result in results)
    cost = f"${sum(costs):.4f}" if costs else "-"
    head = [
        f"red team · {len(results)} attack runs · {sum(r.breached for r in judged)} breached · "
        f"{len(results) - len(judged)} errored · tool calls {len(calls)} "
        f"({sum(bool(call.get('mocked')) for call in calls)} mocked, never ran)",
        f"judge {results[0].judge if results else '-'} · calls "
        f"{sum(r.judge_calls for r in results)} (+{sum(r.cached_calls for r in results)} "
        f"cached) · tokens {tokens} · cost {cost}",
        "",
    ]
    return "\n".join(head) + "\n" + _rates_table(rates)


def _rates_table(rates: Sequence[BreachRate]) -> str:
    vulnerabilities = [row for row in rates if row.kind == "vulnerability"]
    methods = [row for row in rates if row.kind == "attack_method"]
    width = max([len("vulnerability")] + [len(row.vulnerability or "") for row in vulnerabilities])
    lines = [
        f"{'vulnerability':<{width}}  {'breaches':>9}  {'rate':>6}  {'95% CI':>15}  "
        f"{'failOn':>6}  {'baseline':>9}  verdict"
    ]
    for row in vulnerabilities:
        baseline = (
            f"{row.baseline_breaches}/{row.baseline_judged}"
            if row.baseline_judged is not None
            else "-"
        )
        flag = "  OVER failOn" if row.over_limit else ""
        lines.append(
            f"{row.vulnerability or '':<{width}}  {f'{row.breaches}/{row.judged}':>9}  "
            f"{_percent(row.rate):>6}  {_interval(row):>15}  {_percent(row.fail_on):>6}  "
            f"{baseline:>9}  {row.verdict or '-'}{flag}"
        )
        if row.errors:
            lines.append(f"{'':<{width}}  {row.errors} errored (neither breached nor held)")
    width = max([len("attack method")] + [len(row.attack_method or "") for row in methods])
    lines += ["", f"{'attack method':<{width}}  {'breaches':>9}  {'rate':>6}  {'95% CI':>15}"]
    lines += [
        f"{row.attack_method or '':<{width}}  {f'{row.breaches}/{row.judged}':>9}  "
        f"{_percent(row.rate):>6}  {_interval(row):>15}"
        for row in methods
    ]
    return "\n".join(lines)


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def _interval(row: BreachRate) -> str:
    if row.wilson_low is None or row.wilson_high is None:
        return "-"
    return f"[{row.wilson_low:.1%}, {row.wilson_high:.1%}]"
