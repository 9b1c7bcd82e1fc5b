from pathlib import Path

import pytest
import yaml

from n8n_deepeval_pipeline import BenchmarkConfigError, load_benchmark

VALID = {
    "name": "demo",
    "workflow": "workflow.json",
    "dataset": {"path": "rows.csv"},
    "target": {"type": "recorded", "outputs": "outputs.jsonl"},
    "metrics": [{"metric": "exact_match"}],
}


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def problems(tmp_path: Path, document: object) -> list[str]:
    with pytest.raises(BenchmarkConfigError) as caught:
        load_benchmark(write(tmp_path, document))
    assert str(tmp_path / "demo.benchmark.yaml") in str(caught.value)
    return caught.value.problems


def with_changes(**changes: object) -> dict:
    return {**VALID, **changes}


def test_defaults_follow_the_seed_and_paths_are_relative_to_the_file(tmp_path):
    benchmark = load_benchmark(write(tmp_path, VALID))
    assert benchmark.runs_per_row == 1
    assert benchmark.aggregate.pass_rule == "allPass"
    assert benchmark.consistency.group_by_field == "caseId"
    assert benchmark.consistency.consistency_basis == "cv"
    assert benchmark.schedule is None  # no schedule runs unless the file asks for one
    assert benchmark.run_first_version is False
    assert benchmark.workflow == tmp_path / "workflow.json"
    assert benchmark.dataset.path == tmp_path / "rows.csv"
    assert benchmark.dataset.column_mapping == {
        "input": "input",
        "expectedOutput": "expectedOutput",
    }
    assert benchmark.metrics[0].threshold == 1.0


def test_unknown_metric_slug_suggests_the_closest_one(tmp_path):
    (problem,) = problems(tmp_path, with_changes(metrics=[{"metric": "g_evall"}]))
    assert problem == (
        "metrics[0].metric: unknown metric 'g_evall'; did you mean 'g_eval'? "
        "(n8n-deepeval metrics lists all)"
    )
    (problem,) = problems(tmp_path, with_changes(metrics=[{"metric": "qqq"}]))
    assert problem.startswith("metrics[0].metric: unknown metric 'qqq'; expected one of: ")
    assert "g_eval" in problem and "tool_permission" in problem


def test_metric_option_errors_name_metric_index_slug_and_option(tmp_path):
    found = problems(
        tmp_path,
        with_changes(
            metrics=[{"metric": "exact_match"}, {"metric": "pattern_match", "treshold": 2}]
        ),
    )
    assert "metrics[1] (pattern_match).pattern: Field required" in found
    assert any(p.startswith("metrics[1] (pattern_match).treshold: unknown field") for p in found)


def test_g_eval_needs_criteria_xor_steps_and_evaluation_params(tmp_path):
    both = {"metric": "g_eval", "name": "x", "criteria": "c", "evaluationSteps": ["s"]}
    (problem,) = problems(tmp_path, with_changes(metrics=[{**both, "evaluationParams": ["INPUT"]}]))
    assert problem == (
        "metrics[0] (g_eval): Value error, g_eval needs exactly one of 'criteria' or "
        "'evaluationSteps' (not both, not neither)"
    )
    found = problems(
        tmp_path, with_changes(metrics=[{"metric": "g_eval", "name": "x", "criteria": "c"}])
    )
    assert found == ["metrics[0] (g_eval).evaluationParams: Field required"]


def test_tool_permission_needs_a_list(tmp_path):
    (problem,) = problems(tmp_path, with_changes(metrics=[{"metric": "tool_permission"}]))
    assert "tool_permission needs 'allowedTools' or 'deniedTools'" in problem


def test_threshold_range_and_runs_per_row_are_checked(tmp_path):
    found = problems(
        tmp_path, with_changes(runsPerRow=0, metrics=[{"metric": "bias", "threshold": 1.5}])
    )
    assert "runsPerRow: Input should be greater than or equal to 1" in found
    assert "metrics[0] (bias).threshold: Input should be less than or equal to 1" in found


def test_name_schedule_pass_rule_and_basis_errors_say_what_is_allowed(tmp_path):
    found = problems(
        tmp_path,
        with_changes(
            name="Support Agent",
            schedule="nightly",
            aggregate={"passRule": "anyFail"},
            consistency={"consistencyBasis": "entropy"},
        ),
    )
    text = "\n".join(found)
    assert "name: Value error, must be lower_snake_case" in text
    assert "schedule: Value error, must be a 5-field cron expression" in text
    assert "aggregate.passRule: Input should be 'allPass', 'anyPass' or 'majorityPass'" in text
    assert "consistency: Value error, consistencyBasis 'entropy' needs a labelField" in text


def test_duplicate_labels_and_unknown_aggregate_metrics_are_refused(tmp_path):
    found = problems(
        tmp_path,
        with_changes(
            metrics=[{"metric": "bias"}, {"metric": "bias"}], aggregate={"metrics": ["toxicity"]}
        ),
    )
    assert any("metric labels must be unique, repeated: bias" in p for p in found)


def test_column_mapping_field_names_are_checked(tmp_path):
    found = problems(
        tmp_path, with_changes(dataset={"path": "rows.csv", "columnMapping": {"question": "q"}})
    )
    assert any(p.startswith("dataset.columnMapping.question") for p in found)


def test_unreadable_yaml_and_non_mapping_are_reported(tmp_path):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text("name: [unclosed", encoding="utf-8")
    with pytest.raises(BenchmarkConfigError, match="not valid YAML"):
        load_benchmark(path)
    assert problems(tmp_path, ["a", "b"]) == ["(top level): must be a mapping of benchmark fields"]


def test_dataset_format_must_be_known(tmp_path):
    (problem,) = problems(tmp_path, with_changes(dataset={"path": "rows.xlsx"}))
    assert "cannot tell the format of 'rows.xlsx'" in problem


def test_live_targets_name_their_url_and_steps_from_executions_need_a_workflow_in_n8n(tmp_path):
    webhook = {"type": "n8n_webhook", "url": "http://127.0.0.1:5678/webhook/x"}
    assert load_benchmark(write(tmp_path, with_changes(target=webhook))).target.method == "POST"
    (both,) = problems(tmp_path, with_changes(target={**webhook, "urlEnv": "HOOK"}))
    assert "exactly one of 'url' or 'urlEnv'" in both
    steps = {**webhook, "stepsFromExecution": True}
    (needs_id,) = problems(tmp_path, with_changes(target=steps))
    assert "stepsFromExecution reads the executions of the workflow in n8n" in needs_id
    in_n8n = with_changes(target=steps, workflow={"id": "Vw1t9k"})
    assert load_benchmark(write(tmp_path, in_n8n)).workflow.id == "Vw1t9k"
