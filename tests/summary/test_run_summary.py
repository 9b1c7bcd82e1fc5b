"""The run summary's lines for a version's workflow checks."""

from n8n_deepeval_pipeline.summary.run_summary import (
    render_workflow_checks,
    workflow_check_counts,
    workflow_checks_markdown,
)
from n8n_deepeval_pipeline.tables.rows import WorkflowCheck


def check(check_id, category, status, message, nodes=()):
    return WorkflowCheck(
        workflow_hash="ab" * 32,
        check_id=check_id,
        category=category,
        status=status,
        message=message,
        nodes=list(nodes),
    )


CHECKS = [
    check("has_trigger", "structure", "pass", "started by Webhook", ["Webhook"]),
    check(
        "no_unreachable_nodes",
        "connection_topology",
        "fail",
        "not reachable from any trigger",
        ["Orphan", "Other | odd"],
    ),
    check("memory_properly_connected", "ai_nodes", "not_applicable", "no memory node"),
    check(
        "inbound_triggers_authenticated",
        "security",
        "fail",
        "webhook without inbound authentication",
        ["Webhook"],
    ),
]


def test_counts_name_every_status():
    assert workflow_check_counts(CHECKS) == {"pass": 1, "fail": 2, "not_applicable": 1}
    assert workflow_check_counts([]) == {"pass": 0, "fail": 0, "not_applicable": 0}


def test_the_summary_gives_the_counts_then_one_line_per_failure_with_its_nodes():
    assert render_workflow_checks(CHECKS).splitlines() == [
        "workflow checks: 1 pass · 2 fail · 1 n/a",
        "  ✗ connection_topology/no_unreachable_nodes: not reachable from any trigger "
        "[Orphan, Other | odd]",
        "  ✗ security/inbound_triggers_authenticated: webhook without inbound authentication "
        "[Webhook]",
    ]
    assert render_workflow_checks(CHECKS[:1]) == "workflow checks: 1 pass · 0 fail · 0 n/a"
    assert render_workflow_checks([]) == "workflow checks: none stored for this version"


def test_the_markdown_table_has_a_row_per_check_and_escapes_pipes():
    lines = workflow_checks_markdown(CHECKS).splitlines()
    assert lines[0] == "| check | category | status | message | nodes |"
    assert len(lines) == 2 + len(CHECKS)
    assert lines[3] == (
        "| no_unreachable_nodes | connection_topology | ❌ fail | not reachable from any "
        "trigger | Orphan, Other \\| odd |"
    )
    assert "⚪ n/a" in lines[4]


def test_the_error_rates_follow_from_the_counts_and_stay_in_the_json():
    from n8n_deepeval_pipeline.summary.run_summary import ErrorSummary

    errors = ErrorSummary(
        scores=40, by_kind={"judge_error": 6, "target_error": 4}, first_message={},
        unjudged=6, judge_outage=0, runs_with_unjudged=3, runs=20, failed_target_calls=4,
    )  # fmt: skip
    dumped = errors.model_dump(mode="json")
    assert (dumped["unjudged_rate"], dumped["failed_target_call_rate"]) == (0.15, 0.2)
    nothing = errors.model_copy(update={"scores": 0, "runs": 0})
    assert (nothing.unjudged_rate, nothing.failed_target_call_rate) == (0.0, 0.0)


def _why(errors, limit=0.05):
    """Why a version with these errors is incomplete, as its outcome says (None: it is not)."""
    from n8n_deepeval_pipeline.summary.outcome import Limits, incompleteness

    found = incompleteness(errors, None, Limits.of(limit))
    return None if found is None else found.text


def _judge_errors(**counts):
    from n8n_deepeval_pipeline.summary.run_summary import error_summary
    from tests.test_cli_exit_codes import score

    kinds = [kind for kind, count in counts.items() for _ in range(count)]
    rows = [score(run, kind, f"{kind} message") for run, kind in enumerate(kinds)]
    return error_summary(rows + [score(len(rows) + run) for run in range(10)])


def test_a_refused_key_is_named_apart_from_the_outage_its_open_circuit_caused():
    from n8n_deepeval_pipeline.summary.run_summary import _incomplete_lines

    errors = _judge_errors(judge_auth=3, judge_unavailable=51)
    assert _why(errors) == (
        "54 of 64 scores have no judgement: the judge refused the key (HTTP 401) "
        "for 3 and was unavailable for 51 (--max-error-rate sets how many unjudged scores are "
        "acceptable)"
    )
    assert _incomplete_lines(errors, ["judge_outage"])[-1] == (
        "  the judge refused the key (HTTP 401): give it a valid key and run again "
        "(cached answers stay)"
    )


def test_a_403_is_a_refusal_of_the_calls_not_of_the_key():
    from n8n_deepeval_pipeline.summary.run_summary import _incomplete_lines

    errors = _judge_errors(judge_forbidden=3, judge_error=2, judge_unavailable=5)
    said = [_why(errors), *_incomplete_lines(errors, ["judge_outage"])]
    assert said[0] == (
        "10 of 20 scores have no judgement: the judge refused the calls (HTTP 403) "
        "for 3, failed for 2 (judge_error) and was unavailable for 5 (--max-error-rate sets "
        "how many unjudged scores are acceptable)"
    )
    assert "(50.0%: judge_unavailable 5, judge_forbidden 3, judge_error 2)" in said[1]
    assert not any("key" in line for line in said)
    # judge errors of another kind (no answer, a 500) say nothing of a refusal
    other = _judge_errors(judge_error=3, judge_unavailable=5)
    assert _why(other).startswith(
        "8 of 18 scores have no judgement: the judge failed for 3 (judge_error) "
        "and was unavailable for 5"
    )
    assert _incomplete_lines(other, ["judge_outage"])[-1].startswith(
        "  the judge was unreachable: fix it"
    )


def test_a_resumed_run_says_the_judge_spend_of_every_attempt_and_of_its_own():
    from n8n_deepeval_pipeline.summary.run_summary import render_summary, summarise
    from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend
    from tests.test_cli_exit_codes import score

    summary = summarise("bench", "a" * 64, [score(run) for run in range(40)], [], [], [])
    alone = summary.model_copy(
        update={"run_id": "r2", "attempts": {"r2": JudgeSpend(evaluations=40, judge_calls=40)}}
    )
    assert "attempts" not in render_summary(alone)  # one run: the headline says it all
    attempts = {
        "r1": JudgeSpend(evaluations=30, judge_calls=263, cached_calls=2, tokens=900, cost_usd=0.5),
        "r2": JudgeSpend(evaluations=10, judge_calls=20, cached_calls=75, tokens=100, cost_usd=0.1),
    }
    resumed = summary.model_copy(update={"run_id": "r2", "attempts": attempts})
    lines = render_summary(resumed).splitlines()
    assert lines[3] == (
        "judge over 2 attempts · calls 283 (+77 cached) · tokens 1000 · cost $0.6000 · "
        "this run: calls 20 (+75 cached) · cost $0.1000"
    )
    dumped = resumed.model_dump(mode="json")["attempts"]
    assert dumped["r1"]["judge_calls"] == 263 and dumped["r2"]["cost_usd"] == 0.1


def _with_failed_calls(failed: int, runs: int):
    """A version of ``runs`` runs whose first ``failed`` workflow calls gave nothing."""
    from n8n_deepeval_pipeline.summary.run_summary import summarise
    from tests.test_cli_exit_codes import score

    rows = [score(run, "target_error", "HTTP 500") for run in range(failed)]
    return summarise(
        "bench", "a" * 64, rows + [score(run) for run in range(failed, runs)], [], [], []
    )


def test_failed_calls_within_the_limit_warn_without_calling_the_run_incomplete():
    """0.8% of the calls failed and `run` exits 0: nothing says the run is incomplete."""
    from n8n_deepeval_pipeline.summary.run_summary import render_summary

    summary = _with_failed_calls(2, 250)
    assert _why(summary.errors) is None
    text = render_summary(summary)
    assert "INCOMPLETE" not in text.upper()
    assert "WARNING: 2 of 250 workflow calls failed (0.8%; within the error limit, the run" in text


def test_failed_calls_above_the_limit_say_incomplete_run_as_the_exit_code_does():
    from n8n_deepeval_pipeline.summary.run_summary import render_summary

    summary = _with_failed_calls(16, 276)
    assert _why(summary.errors) == (
        "5.8% of the workflow calls failed (16 of 276 runs), above checks.maxErrorRate 5.0%"
    )
    lines = render_summary(summary, ["failed_workflow_calls"]).splitlines()
    assert "WARNING: INCOMPLETE RUN: 16 of 276 workflow calls failed (5.8%)" in lines


def test_the_summary_says_the_placeholders_decide_no_run_and_what_does():
    from n8n_deepeval_pipeline.summary.run_summary import render_summary, summarise
    from n8n_deepeval_pipeline.tables.steps import expanded_runs, run_aggregates
    from tests.tables.factories import metric_score
    from tests.tables.test_steps import example_benchmark, row

    runs = expanded_runs([row("r1")], 2, "n")
    scores = [
        metric_score(run.run_id, name, value, value >= 0.5, dry_run=dry, judge=judge)
        for run in runs
        for name, value, dry, judge in (
            ("knowledge_retention", 0.0, True, "dry-run"),
            ("answered", 1.0, False, None),
        )
    ]
    benchmark = example_benchmark(metrics=["answered", "knowledge_retention"])
    aggregates = run_aggregates(benchmark, runs, scores)
    summary = summarise(
        "bench", "a" * 64, scores, aggregates, [], ["answered", "knowledge_retention"]
    )
    assert summary.pass_rate == 1.0
    assert {m.metric: m.decides for m in summary.metrics} == {
        "answered": True,
        "knowledge_retention": False,
    }
    lines = render_summary(summary).splitlines()
    assert (
        "  placeholders decide no run: the pass rate is decided by answered (no judge needed)"
    ) in lines
    assert any(
        line.startswith("knowledge_retention") and line.endswith("(dry-run, decides no run)")
        for line in lines
    )


def test_a_dead_judges_last_line_counts_every_unjudged_score():

    # 30 calls failed before the circuit opened, 24 failed fast after it: 54 unjudged
    errors = _judge_errors(judge_error=30, judge_unavailable=24)
    assert _why(errors) == (
        "54 of 64 scores have no judgement: the judge failed for 30 (judge_error) "
        "and was unavailable for 24 (--max-error-rate sets how many unjudged scores are "
        "acceptable)"
    )
    # every kind of unjudged score is in the count, the judge's own first
    mixed = _judge_errors(judge_auth=2, judge_invalid_output=1, judge_unavailable=5, timeout=1)
    assert _why(mixed) == (
        "9 of 19 scores have no judgement: the judge refused the key (HTTP 401) "
        "for 2, failed for 1 (judge_invalid_output) and was unavailable for 5; 1 more: "
        "timeout 1 (--max-error-rate sets how many unjudged scores are acceptable)"
    )
