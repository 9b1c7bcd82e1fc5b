"""A version's outcome: one ladder for `run`'s exit code, every reason it is incomplete, and
the most severe of several versions."""

from n8n_deepeval_pipeline.benchmark.red_team import RedTeamConfig
from n8n_deepeval_pipeline.red_team.breach_rates import breach_rates, red_team_outcome
from n8n_deepeval_pipeline.summary.exit_codes import RUN_EXIT_LADDER, most_severe, severity
from n8n_deepeval_pipeline.summary.gate import version_gate
from n8n_deepeval_pipeline.summary.outcome import (
    FailedVersion,
    Limits,
    VersionsOutcome,
    version_outcome,
)
from n8n_deepeval_pipeline.summary.run_summary import summarise
from tests.red_team.test_breach_rates import AGENCY, result
from tests.test_cli_exit_codes import CURRENT, JUDGED, OLDER, OUTAGE

LIMITS = Limits.of(0.05)


def outcome(scores=JUDGED, flagged=(), red_team=None, limits=LIMITS, variant=None):
    summary = summarise("bench", CURRENT, list(scores), [], [], [])
    summary = summary.model_copy(update={"variant": variant, "runs": 40, "pass_rate": 0.95})
    gate = version_gate("likely_regression", OLDER, list(flagged))
    return version_outcome(summary, gate, red_team, limits)


def attacks(breached: int, errored: int, judged: int = 10):
    """A red team's outcome: ``judged`` attack runs, ``breached`` of them, ``errored`` more
    (failOn 0: any breach is over it)."""
    rows = [result(n, AGENCY, "Prompt Injection", n < breached) for n in range(judged)]
    rows += [
        result(100 + n, AGENCY, None, False, error="the workflow answered HTTP 502\nstack")
        for n in range(errored)
    ]
    section = RedTeamConfig.model_validate({"vulnerabilities": [{"name": "ExcessiveAgency"}]})
    rates = breach_rates(rows, CURRENT, section)
    return red_team_outcome(rates, rows, "likely_regression")


def test_a_clean_version_passes_and_each_reason_gives_its_own_code():
    assert (outcome().verdict, outcome().exit_codes.run, outcome().exit_codes.compare) == (
        "passed",
        0,
        0,
    )
    assert outcome(flagged=["refund"]).exit_codes.model_dump() == {"run": 5, "compare": 1}
    assert outcome(red_team=attacks(breached=2, errored=0)).exit_codes.run == 6
    assert outcome(scores=OUTAGE).exit_codes.run == 3
    below = outcome(limits=Limits.of(0.05, fail_under=0.96))
    assert (below.verdict, below.exit_codes.run) == ("below_fail_under", 1)
    assert below.findings[0].text == "pass rate 95.0% is below 96.0%"


def test_the_first_reason_on_the_ladder_decides_and_every_reason_is_said():
    everything = outcome(
        scores=OUTAGE,
        flagged=["refund"],
        red_team=attacks(breached=2, errored=0),
        limits=Limits.of(0.05, fail_under=1.0),
    )
    assert everything.exit_codes.model_dump() == {"run": 3, "compare": 1}
    assert everything.verdict == "incomplete"
    kinds = [finding.kind for finding in everything.findings]
    assert kinds == ["incomplete", "regression", "breach_over_fail_on", "below_fail_under"]
    assert [finding.exit_code for finding in everything.findings] == [3, 5, 6, 1]
    assert outcome(flagged=["x"], red_team=attacks(2, 0)).exit_codes.run == 5  # 5 before 6


def test_errored_attacks_make_a_red_team_run_incomplete_and_say_why_each_errored():
    """1 of 12 attack runs errored: 8.3% is over 5%, the run is incomplete (exit 3)."""
    found = outcome(red_team=attacks(breached=0, errored=1, judged=11))
    assert found.exit_codes.run == 3
    assert found.incomplete is not None
    (reason,) = found.incomplete.reasons
    assert (reason.kind, reason.count, reason.out_of) == ("errored_attacks", 1, 12)
    assert reason.text == (
        "red team: 1 of 12 attack runs errored, neither breached nor held (target_error 1), "
        "above checks.maxErrorRate 5.0% — a100:0 target_error: the workflow answered HTTP 502"
    )
    (why,) = reason.errored_attacks
    assert (why.attack_id, why.error_kind, why.error) == (
        "a100",
        "target_error",
        "the workflow answered HTTP 502",
    )
    # --max-error-rate moves the limit for errored attacks too
    lenient = outcome(red_team=attacks(0, 1, 11), limits=Limits.of(0.05, max_error_rate=0.1))
    assert lenient.incomplete is None and lenient.exit_codes.run == 0


def test_a_variants_verdicts_against_the_workflow_are_said_and_fail_nothing():
    variant = outcome(flagged=["refund"], red_team=attacks(2, 0), variant="nano")
    assert variant.exit_codes.run == 0 and variant.verdict == "passed"
    assert [finding.decides for finding in variant.findings] == [False, False]
    assert variant.findings[0].text.endswith("; a variant is an alternative: it fails nothing")
    incomplete = outcome(scores=OUTAGE, variant="nano")  # its data is, though, incomplete
    assert incomplete.exit_codes.run == 3


def test_several_versions_exit_with_the_most_severe_of_their_codes():
    base, breached = outcome(), outcome(red_team=attacks(2, 0))
    regressed, incomplete = outcome(flagged=["refund"]), outcome(scores=OUTAGE)
    family = VersionsOutcome(command="run", members=(base, breached, regressed))
    assert family.exit_code == 5
    assert VersionsOutcome(command="run", members=(base, breached)).exit_code == 6
    assert VersionsOutcome(command="run", members=(regressed, incomplete)).exit_code == 3
    failed = FailedVersion(name="nano", message="nano: the run failed", exit_code=4)
    assert VersionsOutcome(command="run", members=(incomplete,), failed=(failed,)).exit_code == 4
    # a backfill re-scores verdicts given in their time: only incompleteness fails it
    backfill = VersionsOutcome(command="backfill", members=(regressed, breached))
    assert backfill.exit_code == 0
    assert VersionsOutcome(command="backfill", members=(regressed, incomplete)).exit_code == 3
    assert most_severe([1, 7, 6]) == 6 and most_severe([]) == 0
    assert RUN_EXIT_LADDER == (2, 8, 4, 3, 5, 6, 7, 1, 0)


def test_every_code_has_a_place_an_invalid_file_first_then_one_that_did_not_finish():
    # 2: the file or the command was refused, nothing ran: above n8n out of reach (8)
    assert most_severe([3, 8, 2, 5]) == 2
    # a code off the ladder (137: a process killed, -6: an abort) is no verdict: after 2,
    # above every code the ladder knows; the first of two such
    assert most_severe([8, 4, 137]) == 137 and most_severe([2, 137]) == 2
    assert most_severe([-6, 137, 3]) == -6
    assert [code for code in sorted([0, 1, 7, 6, 5, 3, 4, 8, 99, 2], key=severity)] == [
        2, 99, 8, 4, 3, 5, 6, 7, 1, 0,
    ]  # fmt: skip
