"""The online section: its errors name the field, and only reference-free metrics are taken."""

import pytest

from n8n_deepeval_pipeline import load_benchmark
from tests.benchmark.test_config_mistakes import text_problems

FILE = """\
name: demo
workflow: {id: wf1}
dataset: {path: rows.csv}
target: {type: recorded, outputs: outputs.jsonl}
metrics:
  - metric: bias
  - metric: correctness
  - metric: turn_relevancy
"""


def test_an_online_section_is_read_with_its_defaults(tmp_path):
    path = tmp_path / "demo.benchmark.yaml"
    path.write_text(FILE + "online: {metrics: [bias, turn_relevancy], sampleRate: 0.1}\n")
    online = load_benchmark(path).online
    assert online is not None and online.metrics == ["bias", "turn_relevancy"]
    assert (online.sample_rate, online.max_per_hour, online.session_idle_minutes) == (0.1, 60, 30)
    assert (online.drop_check.window_days, online.drop_check.fail_on) == (1, "likely_regression")
    assert online.max_cost_usd_per_day is None


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ("{metrics: [bias], sampleRate: 0}", "online.sampleRate: Input should be greater than 0"),
        ("{metrics: [bias], maxPerHour: 0}",
         "online.maxPerHour: Input should be greater than or equal to 1"),
        ("{metrics: [bias], sessionIdleMinutes: -1}",
         "online.sessionIdleMinutes: Input should be greater than 0"),
        ("{metrics: [bias], maxCostUsdPerDay: -0.5}",
         "online.maxCostUsdPerDay: Input should be greater than or equal to 0"),
        ("{metrics: [bias], dropCheck: {failOn: stable}}",
         "online.dropCheck.failOn: Input should be 'regression' or 'likely_regression'"),
        ("{metrics: []}", "online.metrics: List should have at least 1 item"),
        ("{metrics: [bias], sampleRat: 0.5}", "online.sampleRat: unknown field"),
    ],
)  # fmt: skip
def test_a_wrong_online_field_is_named(tmp_path, section, problem):
    problems = text_problems(tmp_path, FILE + f"online: {section}\n")
    assert any(found.startswith(problem) for found in problems), problems


def test_online_metrics_must_be_known_and_need_no_reference(tmp_path):
    (unknown,) = text_problems(tmp_path, FILE + "online: {metrics: [helpfulness]}\n")
    assert "online.metrics names unknown metric 'helpfulness'" in unknown
    (reference,) = text_problems(tmp_path, FILE + "online: {metrics: [correctness]}\n")
    assert "online.metrics: 'correctness' needs expected_output" in reference


def test_online_reads_a_workflow_in_n8n(tmp_path):
    text = FILE.replace("{id: wf1}", "workflow.json") + "online: {metrics: [bias]}\n"
    (problem,) = text_problems(tmp_path, text)
    assert "online reads the workflow's executions in n8n: name it with workflow: {id: …}" in (
        problem
    )
