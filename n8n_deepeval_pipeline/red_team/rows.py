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

    table = "red_team_attacks"

    attack_set: str
    """The kept set it belongs to (every version of it faces the same attacks)."""
    generated_in: str
    """The version key the set was generated in."""
    attack_id: str
    """The attack's id within its set."""
    vulnerability: str
    """DeepTeam's name of the vulnerability ("Excessive Agency")."""
    vulnerability_class: str
    """DeepTeam's class of the vulnerability ("ExcessiveAgency"), to build it again."""
    vulnerability_type: str
    """The vulnerability's type the attack aims at."""
    risk_category: str | None
    """A framework's risk category (None: DeepTeam's own, set when judged)."""
    attack_method: str | None
    """DeepTeam's name of the attack ("Prompt Injection"); None: a plain attack."""
    attack_class: str | None
    """DeepTeam's class of the attack, to build it again."""
    multi_turn: bool
    """Whether the attack is a conversation DeepTeam plays again against each version."""
    input: str | None
    """The message sent (single-turn), or the opening of the conversation (multi-turn)."""
    purpose: str | None
    """What the attacks were written for, and are judged against."""
    error: str | None
    """Why DeepTeam could not write the attack (kept so for every version)."""


class RedTeamResult(TableRow):
    """One attack on one run of a version: the conversation, the tools it provoked, the verdict.

    ``tools_called``: every tool call the agent made (its arguments and what it got back),
    each ``mocked: true`` when the harness copy answered it instead of the service.
    """

    table = "red_team_results"

    result_id: str
    """The attack's id and the run index (`attack:run`)."""
    attack_id: str
    """The attack of the kept set."""
    run_index: int
    """Which of the attack's runsPerRow plays this is (0-based)."""
    vulnerability: str
    """DeepTeam's name of the vulnerability."""
    vulnerability_type: str
    """The vulnerability's type the attack aims at."""
    attack_method: str | None
    """DeepTeam's name of the attack; None: a plain attack."""
    risk_category: str | None
    """The risk category DeepTeam or the framework gave it."""
    multi_turn: bool
    """Whether the attack was a conversation."""
    input: str | None
    """The message the agent was sent (the last attacking turn of a conversation)."""
    actual_output: str | None
    """What the agent answered."""
    turns: list[dict[str, Any]] | None
    """The conversation: each turn's role, content, tools called and the attack it carried."""
    tools_called: list[dict[str, Any]]
    """Every tool call the agent made, its arguments and what it got back (`mocked: true`
    when the harness copy answered it)."""
    score: float | None
    """DeepTeam's score (0: breached; None: not judged)."""
    reason: str | None
    """DeepTeam's judge's reason."""
    breached: bool
    """Judged and not scored above 0: the attack succeeded."""
    error: str | None
    """Why the attack was not judged (the workflow, the judge or DeepTeam failed)."""
    error_kind: RedTeamErrorKind | None
    """What failed: `generation_error`, `target_error`, `judge_error` or `attack_error`."""
    cvss_score: float | None
    """The CVSS score DeepTeam gave the breach, if any."""
    judge: str
    """The judge that simulated and judged the attack (provider:model)."""
    dry_run: bool
    """Whether the judge was the dry-run judge (placeholders, not judgements)."""
    target_calls: int
    """Calls of the workflow the attack made."""
    judge_calls: int
    """Judge calls it made (not counting cached ones)."""
    judge_retries: int
    """Judge calls retried."""
    cached_calls: int
    """Judge calls answered from the cache."""
    prompt_tokens: int
    """Judge prompt tokens."""
    completion_tokens: int
    """Judge completion tokens."""
    cost_usd: float | None
    """What the judge calls cost (None: the model has no price)."""
    latency_s: float
    """Seconds the attack took, its workflow calls and judge calls together."""


SummaryKind = Literal["vulnerability", "attack_method", "cell"]


class BreachRate(TableRow):
    """Breaches of one vulnerability, one attack method, or one of each (a cell).

    ``rate`` is breaches over judged attacks, with its Wilson 95% interval (None when
    none was judged). A vulnerability's row also carries its ``failOn`` limit and its
    comparison with the baseline version (Fisher's exact test on judged attacks, the
    compare tiers' verdict).
    """

    table = "red_team_summary"

    kind: SummaryKind
    """What the row counts: one `vulnerability`, one `attack_method`, or one of each (`cell`)."""
    vulnerability: str | None
    """The vulnerability (None on an attack method's row)."""
    attack_method: str | None
    """The attack method (None on a vulnerability's row)."""
    attacks: int
    """Results counted, errored ones included."""
    judged: int
    """Results judged (no error)."""
    breaches: int
    """Judged results that breached."""
    errors: int
    """Results not judged."""
    rate: float | None
    """Breaches over judged results (None when none was judged)."""
    wilson_low: float | None
    """The Wilson 95% interval's low end."""
    wilson_high: float | None
    """The Wilson 95% interval's high end."""
    fail_on: float | None
    """The vulnerability's `redTeam.failOn` limit."""
    over_limit: bool
    """Whether the rate is above `failOn` (`run` exits 6)."""
    baseline_hash: str | None
    """The baseline version compared with."""
    baseline_judged: int | None
    """Results judged in the baseline."""
    baseline_breaches: int | None
    """Breaches in the baseline."""
    p_value: float | None
    """Fisher's exact test, one-sided: the candidate breaches more often than the baseline."""
    verdict: str | None
    """The compare tiers' verdict against the baseline (`run` exits 7 at compare.failOn)."""
