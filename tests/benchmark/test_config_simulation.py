"""The simulation section: defaults, the simulated user's judge, and the refusals."""

from pathlib import Path

import pytest
import yaml

from n8n_deepeval_pipeline import BenchmarkConfigError, load_benchmark
from n8n_deepeval_pipeline.judging.spec import JudgeChoice

SIMULATED = {
    "name": "demo",
    "workflow": "workflow.json",
    "dataset": {"path": "goldens.csv"},
    "target": {"type": "n8n_webhook", "url": "http://127.0.0.1:5678/webhook/chat"},
    "simulation": {},
    "metrics": [{"metric": "turn_relevancy"}],
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


def test_a_simulated_benchmark_has_deepevals_defaults_and_reads_goldens_by_name(tmp_path):
    benchmark = load_benchmark(write(tmp_path, SIMULATED))
    assert benchmark.simulation is not None
    assert benchmark.simulation.max_user_turns == 5  # the default, not DeepEval's 10
    assert benchmark.simulation.language == "English"
    # A golden has no input: the seed's input/expectedOutput mapping does not apply.
    assert benchmark.dataset.column_mapping == {}
    assert benchmark.simulator_judge is None  # the judge resource's default


def test_the_simulated_user_judge_falls_back_on_the_benchmark_judge(tmp_path):
    document = {
        **SIMULATED,
        "judge": {"provider": "openai", "model": "gpt-4.1", "apiKeyEnv": "JUDGE_KEY"},
        "simulation": {"maxUserTurns": 3, "judge": {"model": "gpt-4.1-mini"}},
    }
    benchmark = load_benchmark(write(tmp_path, document))
    chosen = benchmark.simulator_judge
    assert chosen is not None
    expected = JudgeChoice(provider="openai", model="gpt-4.1-mini", api_key_env="JUDGE_KEY")
    assert chosen.model_dump() == expected.model_dump()
    alone = load_benchmark(write(tmp_path, {**document, "simulation": {}})).simulator_judge
    assert alone is not None
    assert alone.model_dump() == {**expected.model_dump(), "model": "gpt-4.1"}


def test_an_explicit_column_mapping_is_kept(tmp_path):
    dataset = {"path": "goldens.csv", "columnMapping": {"scenario": "situation"}}
    benchmark = load_benchmark(write(tmp_path, {**SIMULATED, "dataset": dataset}))
    assert benchmark.dataset.column_mapping == {"scenario": "situation"}


def test_a_recorded_target_is_refused_with_the_reason(tmp_path):
    recorded = {"type": "recorded", "outputs": "outputs.jsonl"}
    (problem,) = problems(tmp_path, {**SIMULATED, "target": recorded})
    assert (
        "simulation: a recorded target replays outputs captured earlier, so a simulated user "
        "has no workflow to talk to: use target type n8n_workflow or n8n_webhook" in problem
    )


def test_scripted_messages_and_a_simulated_user_are_refused_together(tmp_path):
    target = {**SIMULATED["target"], "messagesColumn": "messages"}
    (problem,) = problems(tmp_path, {**SIMULATED, "target": target})
    assert "simulation: target.messagesColumn scripts the user's messages" in problem


@pytest.mark.parametrize(
    ("simulation", "expected"),
    [
        ({"maxUserTurns": 0}, "simulation.maxUserTurns: "),
        ({"maxTurns": 3}, "simulation.maxTurns: "),
        ({"language": " "}, "simulation.language: "),
    ],
)
def test_mistakes_in_the_section_are_named_by_field(tmp_path, simulation, expected):
    (problem,) = problems(tmp_path, {**SIMULATED, "simulation": simulation})
    assert problem.startswith(expected)


def test_the_simulated_user_judge_key_never_reaches_templates(tmp_path):
    document = {
        **SIMULATED,
        "target": {**SIMULATED["target"], "env": ["SIM_KEY"]},
        "simulation": {"judge": {"provider": "openai", "model": "gpt-4.1", "apiKeyEnv": "SIM_KEY"}},
    }
    (problem,) = problems(tmp_path, document)
    assert "target.env lists SIM_KEY, a judge's key (apiKeyEnv)" in problem
