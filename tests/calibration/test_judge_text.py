"""What --align may rewrite of a metric: G-Eval's criteria or steps, a DAG's node texts."""

import pytest

from n8n_deepeval_pipeline.calibration.judge_text import (
    CandidateTextError,
    NotAlignable,
    judge_text,
    with_text,
)
from n8n_deepeval_pipeline.metrics.catalog import CATALOG

DAG = {
    "metric": "dag", "name": "total",
    "dag": {"nodes": {
        "extract": {"type": "task", "instructions": "Extract the total.", "outputLabel": "Total",
                    "evaluationParams": ["ACTUAL_OUTPUT"], "children": ["correct"]},
        "correct": {"type": "binaryJudgement", "criteria": "Is it the expected total?",
                    "evaluationParams": ["EXPECTED_OUTPUT"], "children": ["right", "wrong"]},
        "right": {"type": "verdict", "verdict": True, "score": 10},
        "wrong": {"type": "verdict", "verdict": False, "score": 0},
    }},
}  # fmt: skip


def metric(document: dict):
    return CATALOG[document["metric"]].config_model.model_validate(document)


def test_g_eval_criteria_are_the_text_and_only_they_change():
    config = metric({"metric": "g_eval", "name": "helpfulness", "criteria": "Helpful?",
                     "evaluationParams": ["INPUT", "ACTUAL_OUTPUT"], "threshold": 0.7})  # fmt: skip
    text = judge_text(config)
    assert (text.metric, text.kind, text.text, text.what) == (
        "helpfulness", "criteria", "Helpful?", "criteria")  # fmt: skip
    aligned = with_text(config, "  Helpful?\nNo missing facts.  ")
    assert aligned.criteria == "Helpful?\nNo missing facts."
    assert aligned.model_dump(exclude={"criteria"}) == config.model_dump(exclude={"criteria"})
    with pytest.raises(CandidateTextError, match="the criteria are empty"):
        with_text(config, " \n")


def test_evaluation_steps_are_one_per_line():
    config = metric({"metric": "conversational_g_eval", "name": "polite",
                     "evaluationSteps": ["Greets the user.", "Never rude."]})  # fmt: skip
    text = judge_text(config)
    assert (text.kind, text.text) == ("evaluation_steps", "Greets the user.\nNever rude.")
    aligned = with_text(config, "Greets the user.\n\n  Never rude.\nThanks at the end.\n")
    assert aligned.evaluation_steps == ["Greets the user.", "Never rude.", "Thanks at the end."]


def test_a_dags_task_and_judgement_texts_are_sections_its_graph_stays():
    config = metric(DAG)
    text = judge_text(config)
    assert text.text == (
        "[extract] instructions\nExtract the total.\n\n"
        "[correct] criteria\nIs it the expected total?"
    )
    cent = text.text.replace("Is it the expected total?", "Is it the expected total, to the cent?")
    aligned = with_text(config, cent)
    nodes = aligned.dag.nodes
    assert nodes["correct"].criteria == "Is it the expected total, to the cent?"
    assert nodes["extract"].instructions == "Extract the total."
    assert nodes["correct"].children == ["right", "wrong"] and nodes["right"].score == 10
    order = r"keep the sections \[extract\] instructions, \[correct\] criteria, in that order"
    with pytest.raises(CandidateTextError, match=order):
        with_text(config, "[correct] criteria\nx\n\n[extract] instructions\ny")
    with pytest.raises(CandidateTextError, match=r"the section \[extract\] is empty"):
        with_text(config, "[extract] instructions\n\n[correct] criteria\nIs it?")


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ({"metric": "bias"}, "Bias asks its judge with DeepEval's own prompts, not with text of "
         "the benchmark file: only G-Eval and DAG metrics have criteria to rewrite (--adopt fits "
         "its threshold instead)"),
        ({"metric": "exact_match"}, "Exact Match calls no judge: there is no judge to align"),
        ({"metric": "arena_g_eval", "name": "better", "criteria": "Better?",
          "evaluationParams": ["ACTUAL_OUTPUT"]},
         "an Arena G-Eval picks the better of two runs; a label passes or fails one run, so "
         "there is nothing to agree with"),
    ],
)  # fmt: skip
def test_a_metric_without_text_of_the_file_is_refused_in_one_line(document, why):
    config = metric(document)
    with pytest.raises(NotAlignable) as refused:
        judge_text(config)
    assert str(refused.value) == f"{config.result_label()}: {why}"
