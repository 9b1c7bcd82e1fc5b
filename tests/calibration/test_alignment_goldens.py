"""Labelled runs as the optimiser's examples, verdicts as its answers, agreement as its metric."""

from n8n_deepeval_pipeline.calibration.alignment_goldens import (
    Verdict,
    agreement,
    people_text,
    run_text,
)
from n8n_deepeval_pipeline.evaluation import EvaluationItem


def test_an_example_shows_the_run_as_the_metrics_judge_is_shown_it():
    item = EvaluationItem(
        input="Where is order A1042?",
        actual_output="It ships tomorrow.",
        expected_output="Order A1042 shipped on 3 November.",
        context=["Orders ship in two days."],
        intermediate_steps=[{"action": {"tool": "order_lookup", "toolInput": {"id": "A1042"}}}],
    )
    assert run_text(item, ("input", "actual_output", "expected_output")) == (
        "Input:\nWhere is order A1042?\n\nActual Output:\nIt ships tomorrow.\n\n"
        "Expected Output:\nOrder A1042 shipped on 3 November."
    )
    shown = run_text(item, ("context", "tools_called", "retrieval_context"))
    assert shown == (
        'Context:\n["Orders ship in two days."]\n\nTools Called:\n'
        '[{"action": {"tool": "order_lookup", "toolInput": {"id": "A1042"}}}]'
    )  # a field the run lacks (retrieval context) is left out
    long = run_text(EvaluationItem(actual_output="x" * 2500), ("actual_output",))
    assert long == "Actual Output:\n" + "x" * 2000 + " …"


def test_what_people_said_is_their_majority_and_how_many_said_it():
    assert people_text([True]) == "people say pass"
    assert people_text([False, False]) == "people say fail"
    assert people_text([False, True, False]) == "people say fail (2 of 3)"


def test_agreement_is_one_when_the_verdict_is_the_peoples_else_zero_and_says_how():
    passing = Verdict(passed=True, score=0.82, reason="Clear and complete.")
    failing = Verdict(passed=False, score=0.2, reason="Leaves out the date.")
    assert passing.text() == "pass (score 0.82): Clear and complete."
    assert agreement(True, passing).model_dump() == {
        "score": 1.0,
        "agrees": True,
        "reason": "agrees with people: both say pass (score 0.82)",
    }
    assert agreement(False, passing).model_dump() == {
        "score": 0.0,
        "agrees": False,
        "reason": "too lenient: people say fail, the judge says pass (score 0.82)",
    }
    assert agreement(True, failing).reason == (
        "too strict: people say pass, the judge says fail (score 0.20)"
    )
    none = Verdict(passed=None, reason="missing_input: no expected output")
    assert none.text() == "no verdict: missing_input: no expected output"
    assert agreement(True, none).model_dump() == {
        "score": 0.0, "agrees": False,
        "reason": "people say pass; no verdict: missing_input: no expected output"}  # fmt: skip
