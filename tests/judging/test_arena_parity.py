"""Arena G-Eval parity: the pipeline's head-to-head scores are DeepEval's own ``ArenaGEval``.

Both paths ask one deterministic loopback judge (its answers are drawn from the whole
request, so any difference in a prompt or a schema's form gives another answer): the
pipeline through its pool, cache and OpenAI provider; DeepEval with its own OpenAI model
class and ``metric.measure()`` on contestants written by hand
(``tests/judging/deepeval_reference.py``). DeepEval shuffles the contestants with
``random``: the reference keeps them in the order given, as the pipeline does, which swaps
them itself on odd runs. Both orders are compared.
"""

import json
import re

import pytest

from n8n_deepeval_pipeline import JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, prompt_text
from tests.conftest import evaluate_all, make_task
from tests.judging.deepeval_reference import OPPONENT_OUTPUT
from tests.reference_run import run_reference
from tests.worker.test_metric_runs import ITEM, config_for

pytestmark = pytest.mark.slow

MODEL = "gpt-4.1"
CRITERIA = [
    # criteria: DeepEval asks the judge for evaluation steps first (three calls in all)
    config_for("arena_g_eval"),
    # fixed steps: the winner and the rewritten reason only
    config_for("arena_g_eval").model_copy(
        update={"criteria": None, "evaluation_steps": ["Prefer the answer that states 179."]}
    ),
]


def deepeval_reference(folder, spec):
    """Each metric's score (or error) by DeepEval's own ArenaGEval and OpenAI class."""
    return run_reference("tests.judging.deepeval_reference", folder, spec)


def _canonical(bodies):
    # A set: the pipeline's cache answers a prompt two evaluations share (the steps) once.
    return {json.dumps(body, sort_keys=True) for body in bodies}


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """Each (config, order): the reference's score and bodies, the pipeline's result and bodies."""
    tmp = tmp_path_factory.mktemp("arena")
    server = LoopbackJudge(latency_s=0.0).start()
    cases = [(config, first) for config in CRITERIA for first in (False, True)]
    try:
        metrics = [
            {"label": f"c{i}", "config": config.model_dump(), "opponent_first": first}
            for i, (config, first) in enumerate(cases)
        ]
        spec = {"base_url": server.base_url, "model": MODEL, "metrics": metrics}
        reference_bodies = []
        reference = {}
        for metric in metrics:  # one by one, to keep each metric's requests apart
            reference.update(deepeval_reference(tmp, {**spec, "metrics": [metric]}))
            reference_bodies.append(list(server.bodies))
            server.bodies.clear()

        judge = JudgeSpec(
            provider="openai",
            model=MODEL,
            base_url=server.base_url,
            api_key="sk-parity",
            state_dir=str(tmp / "judge"),
            cache_scope="shared",
        )
        pool = WorkerPool(size=1, timeout_s=120)
        pool.start()
        pipeline, pipeline_bodies = [], []
        try:
            for index, (config, first) in enumerate(cases):
                sides = ITEM.head_to_head.model_copy(update={"opponent_first": first})
                item = ITEM.model_copy(update={"head_to_head": sides})
                (result,) = evaluate_all(pool, [make_task(config.model_dump(), item, index, judge)])
                pipeline.append(result)
                pipeline_bodies.append(list(server.bodies))
                server.bodies.clear()
        finally:
            pool.close()
    finally:
        server.stop()
    return [
        (first, reference[f"c{i}"], reference_bodies[i], pipeline[i], pipeline_bodies[i])
        for i, (_, first) in enumerate(cases)
    ]


def test_the_winner_and_every_request_are_deepevals_own_in_both_positions(arena):
    every_reference, every_pipeline = set(), set()
    for _first, reference, reference_bodies, result, pipeline_bodies in arena:
        assert isinstance(reference, float), reference
        assert result.error is None, result.error
        assert result.score == reference
        assert pipeline_bodies and _canonical(pipeline_bodies) <= _canonical(reference_bodies)
        strict = [body["response_format"]["json_schema"] for body in pipeline_bodies]
        assert all(schema["strict"] is True for schema in strict)
        every_reference |= _canonical(reference_bodies)
        every_pipeline |= _canonical(pipeline_bodies)
    assert every_pipeline == every_reference
    # both sides won somewhere: the comparison saw a win and a loss
    assert {result.score for *_, result, _bodies in arena} == {0.0, 1.0}


def _shown(bodies):
    """The masked contestants in the order the winner prompt lists them, with their outputs."""
    prompts = [prompt_text(body["messages"]) for body in bodies]
    (prompt,) = [prompt for prompt in prompts if "arena_test_cases" in prompt]
    return re.findall(r'^ {4}"(\w+)": "(.*)",?$', prompt, re.M)


def test_the_opponent_is_shown_first_exactly_when_the_run_swaps_positions(arena):
    for first, _reference, _bodies, _result, pipeline_bodies in arena:
        (name_1, shown_1), (name_2, shown_2) = _shown(pipeline_bodies)
        assert (name_1, name_2) == ("Alice", "Bob")  # masked in the order shown
        opponent, own = (shown_1, shown_2) if first else (shown_2, shown_1)
        assert json.dumps(OPPONENT_OUTPUT)[1:-1] in opponent
        assert json.dumps(ITEM.actual_output)[1:-1] in own


def test_the_reason_is_rewritten_with_the_versions_names_not_the_masks(arena):
    # The reference's requests (the pipeline's are among them: its cache answered repeats).
    for first, _reference, reference_bodies, result, _bodies in arena:
        (rewrite,) = [b for b in reference_bodies if "rewritten_reason" in json.dumps(b)]
        mapping = (
            "{'Alice': 'nano', 'Bob': 'base'}" if first else "{'Alice': 'base', 'Bob': 'nano'}"
        )
        assert mapping in prompt_text(rewrite["messages"])
        assert result.reason  # DeepEval's reason as the judge rewrote it


def test_a_winner_who_is_no_contestant_is_the_judges_invalid_output_not_a_key_error(tmp_path):
    """DeepEval's own ArenaGEval raises a bare KeyError when the judge names someone else
    (4.3.1 defines no outcome for it); the pipeline asks the same and says what went wrong."""
    server = LoopbackJudge(latency_s=0.0, fixed={"winner": "Carol"}).start()
    metric = {"label": "c0", "config": CRITERIA[1].model_dump(), "opponent_first": False}
    try:
        spec = {"base_url": server.base_url, "model": MODEL, "metrics": [metric]}
        reference = deepeval_reference(tmp_path, spec)
        reference_bodies = list(server.bodies)
        server.bodies.clear()
        judge = JudgeSpec(provider="openai", model=MODEL, base_url=server.base_url,
                          api_key="sk-parity", state_dir=str(tmp_path / "judge"))  # fmt: skip
        pool = WorkerPool(size=1, timeout_s=120)
        pool.start()
        try:
            (result,) = evaluate_all(pool, [make_task(CRITERIA[1].model_dump(), ITEM, 0, judge)])
        finally:
            pool.close()
    finally:
        server.stop()
    assert reference == {"c0": "error: KeyError: 'Carol'"}
    assert _canonical(server.bodies) == _canonical(reference_bodies)  # asked the same
    assert (result.score, result.error_kind) == (None, "judge_invalid_output")
    assert result.error == (
        "the judge named 'Carol' as the winner, which is not one of the contestants "
        "(Alice, Bob) DeepEval's ArenaGEval showed it"
    )
