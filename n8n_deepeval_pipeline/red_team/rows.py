"""The red team's tables: the attacks kept for every version, each attack's result, the rates.

A breach is DeepTeam's failing test case: judged (no error) and not scored above 0. An
errored attack (the workflow or the judge failed, or DeepTeam gave up on it) is neither a
breach nor a pass, as DeepTeam counts it.
"""

from __future__ import annotations

from typing import Any, Literal

from n8n_deepeval_pipeline.tables.rows import TableRow

RedTeamErrorKind = Literal[
    "generation_error",  # DeepTeam could not write the attack (kept as such for every version)
    "target_error",  # the workflow did not answer
    "judge_error",  # the judge did not answer
    "attack_error",  # DeepTeam gave up on the attack (a simulator refusal, among others)
]


class RedTeamAttack(TableRow):
    """One attack of the kept set, as a version faces it.

    Single-turn: ``input`` is the message sent. Multi-turn: ``input`` opens a
    conversation that DeepTeam plays again against every version (the attacker's next
    turn depends on the answer).
    """

    attack_set: str  # the kept set it belongs to (every version of it faces the same)
    generated_in: str  # the version key it was generated in
    attack_id: str
    vulnerability: str  # DeepTeam's name ("Excessive Agency")
    vulnerability_class: str  # DeepTeam's class ("ExcessiveAgency"), to build it again
    vulnerability_type: str
    risk_category: str | None  # a framework's category; None: DeepTeam's own, when judged
    attack_method: str | None  # DeepTeam's name ("Prompt Injection"); None: a plain attack
    attack_class: str | None
    multi_turn: bool
    input: str | None
    purpose: str | None  # what the attacks were written for, and are judged against
    error: str | None


class RedTeamResult(TableRow):
    """One attack on one run of a version: the conversation, the tools it provoked, the verdict.

    ``tools_called``: every tool call the agent made (its arguments and what it got back),
    each ``mocked: true`` when the harness copy answered it instead of the service.
    """

    result_id: str  # attack id : run index
    attack_id: str
    run_index: int
    vulnerability: str
    vulnerability_type: str
    attack_method: str | None
    risk_category: str | None
    multi_turn: bool
    input: str | None
    actual_output: str | None
    turns: list[dict[str, Any]] | None  # role, content, tools_called, turn_level_attack
    tools_called: list[dict[str, Any]]
    score: float | None
    reason: str | None
    breached: bool
    error: str | None
    error_kind: RedTeamErrorKind | None
    cvss_score: float | None
    judge: str
    dry_run: bool
    target_calls: int
    judge_calls: int
    judge_retries: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    latency_s: float


SummaryKind = Literal["vulnerability", "attack_method", "cell"]


class BreachRate(TableRow):
    """Breaches of one vulnerability, one attack method, or one of each (a cell).

    ``rate`` is breaches over judged attacks, with its Wilson 95% interval (None when
    none was judged). A vulnerability's row also carries its ``failOn`` limit and its
    comparison with the baseline version (Fisher's exact test on judged attacks, the
    compare tiers' verdict).
    """

    kind: SummaryKind
    vulnerability: str | None
    attack_method: str | None
    attacks: int  # results, errored ones included
    judged: int
    breaches: int
    errors: int
    rate: float | None
    wilson_low: float | None
    wilson_high: float | None
    fail_on: float | None
    over_limit: bool
    baseline_hash: str | None
    baseline_judged: int | None
    baseline_breaches: int | None
    p_value: float | None  # one-sided: the candidate breaches more often
    verdict: str | None
