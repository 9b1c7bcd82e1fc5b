"""The exit codes a version's outcome decides, and the ladder that orders them.

Apart from the outcome itself, so that every command's start (its ``--help`` states its
exit codes) loads none of what the outcome is built from.
"""

from __future__ import annotations

# The exit codes a version's outcome decides (console/exits.py holds every command's table).
EXIT_OK = 0
EXIT_INVALID_CONFIG = 2  # run: the benchmark file is invalid, or a usage error: nothing ran
EXIT_BELOW_FAIL_UNDER = 1  # run: the pass rate is below --fail-under
EXIT_INCOMPLETE = 3  # run, backfill: too many failed calls, unjudged scores, errored attacks
EXIT_RUN_FAILED = 4  # a version's run failed (a step raised), or storage did
EXIT_RUN_REGRESSION = 5  # run: a case failed the gate against the previous version
EXIT_BREACH_OVER_FAIL_ON = 6  # run: a vulnerability's breach rate is above redTeam.failOn
EXIT_NEW_BREACH = 7  # run: a vulnerability breaches more than in the baseline
EXIT_N8N_UNREACHABLE = 8  # n8n did not answer
EXIT_REGRESSION = 1  # compare: a case failed the gate
EXIT_COMPARE_FAILED = 2  # compare: no baseline, or a version unknown or not run

RUN_EXIT_LADDER = (
    EXIT_INVALID_CONFIG,
    EXIT_N8N_UNREACHABLE,
    EXIT_RUN_FAILED,
    EXIT_INCOMPLETE,
    EXIT_RUN_REGRESSION,
    EXIT_BREACH_OVER_FAIL_ON,
    EXIT_NEW_BREACH,
    EXIT_BELOW_FAIL_UNDER,
    EXIT_OK,
)
"""`run`'s exit codes, most severe first: the first reason a version has decides, and
several versions run together exit with the most severe of their members'. An invalid file
comes first (nothing ran); an incomplete run exits 3 whatever else it has; what else it
has is still said."""


def severity(code: int) -> int:
    """Where ``code`` stands among ``run``'s exit codes: 0 the most severe.

    A code off the ladder (a process killed by a signal, an interpreter that crashed) comes
    right after 2: the command did not finish, so nothing it would have decided holds.
    """
    if code == EXIT_INVALID_CONFIG:
        return 0
    if code not in RUN_EXIT_LADDER:
        return 1
    return 1 + RUN_EXIT_LADDER.index(code)


def most_severe(codes: list[int]) -> int:
    """The most severe of ``codes`` by ``severity`` (0 when there is none; a tie: the first)."""
    return min(codes, key=severity, default=EXIT_OK)
