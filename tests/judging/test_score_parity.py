"""Score parity: every judge-backed DeepEval metric of the catalog, scored by the pipeline
(pool, cache, real OpenAI provider) and by DeepEval's own ``metric.measure()`` with its own
OpenAI model class, against one deterministic loopback judge that answers from the whole
request (so any difference in prompt, schema form or log-probability request shows up as
a different answer). The reference test cases are written by hand in
``tests/judging/deepeval_reference.py``, not built by the pipeline."""

import base64
import json

import pytest

from n8n_deepeval_pipeline import CATALOG, JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge, prompt_text
from tests.conftest import evaluate_all, make_task
from tests.judging.deepeval_reference import TOOLS
from tests.png_images import BLUE_SQUARE, CHART, RED_SQUARE
from tests.reference_run import run_reference
from tests.worker.test_metric_runs import ITEM, config_for, item_for

pytestmark = pytest.mark.slow

MODEL = "gpt-4.1"  # an OpenAI model DeepEval knows: structured outputs and log-probabilities
# Judge-backed metrics whose pipeline score is not DeepEval's, and why (none today).
NOT_AT_PARITY: dict[str, str] = {}
DEEPEVAL_METRICS = [
    slug for slug, entry in CATALOG.items() if entry.needs_judge and entry.runner is None
]
G_EVAL = {"g_eval", "conversational_g_eval"}


def _canonical(bodies):
    # A set: the pipeline's cache answers a prompt that two metrics share only once.
    return {json.dumps(body, sort_keys=True) for body in bodies}


def _both_ways(tmp, model, slugs):
    """Both paths' scores and the request bodies each sent, plus a cached re-run's results."""
    server = LoopbackJudge(latency_s=0.0).start()
    try:
        metrics = [{"label": slug, "config": config_for(slug).model_dump()} for slug in slugs]
        spec = {"base_url": server.base_url, "model": model, "metrics": metrics}
        reference = run_reference("tests.judging.deepeval_reference", tmp, spec)
        reference_bodies = list(server.bodies)
        server.bodies.clear()

        judge = JudgeSpec(
            provider="openai",
            model=model,
            base_url=server.base_url,
            api_key="sk-parity",
            state_dir=str(tmp / "judge"),
            cache_scope="shared",
        )
        tools = [AgentTool(name=name, description=text) for name, text in TOOLS.items()]
        support = ITEM.model_copy(update={"available_tools": tools})
        tasks = [
            make_task(
                config_for(slug).model_dump(),
                support if item_for(slug) is ITEM else item_for(slug),
                index,
                judge,
            )
            for index, slug in enumerate(slugs)
        ]
        pool = WorkerPool(size=2, timeout_s=120)
        pool.start()
        try:
            first = evaluate_all(pool, tasks)
            pipeline_bodies = list(server.bodies)
            again = evaluate_all(pool, tasks)
        finally:
            pool.close()
    finally:
        server.stop()
    return {
        "reference": reference,
        "pipeline": dict(zip(slugs, first, strict=True)),
        "again": dict(zip(slugs, again, strict=True)),
        "bodies": (reference_bodies, pipeline_bodies),
    }


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    return _both_ways(tmp_path_factory.mktemp("parity"), MODEL, DEEPEVAL_METRICS)


@pytest.fixture(scope="module")
def reasoning(tmp_path_factory):
    """A reasoning model: no temperature, no log-probabilities (DeepEval's model data)."""
    slugs = ["g_eval", "bias", "answer_relevancy", "conversational_g_eval"]
    return _both_ways(tmp_path_factory.mktemp("reasoning"), "gpt-5", slugs)


def test_a_reasoning_judge_is_asked_and_scored_as_deepeval_asks_it(reasoning):
    reference, pipeline = reasoning["bodies"]
    assert _canonical(pipeline) == _canonical(reference)
    assert pipeline and all("temperature" not in body for body in pipeline)
    assert not any(body.get("logprobs") for body in pipeline)
    for slug, result in reasoning["pipeline"].items():
        assert result.error is None, result.error
        expected = reasoning["reference"][slug]
        assert result.score == pytest.approx(
            1.0 - expected if CATALOG[slug].complement_score else expected, abs=1e-9
        )
    # G-Eval takes DeepEval's own fallback (the schema's score / 10), and the row says so
    assert reasoning["pipeline"]["g_eval"].score_path == "schema_fallback"
    assert reasoning["pipeline"]["conversational_g_eval"].score_path == "schema_fallback"


@pytest.mark.parametrize("slug", DEEPEVAL_METRICS)
def test_the_pipelines_score_is_deepevals_own(scored, slug):
    if slug in NOT_AT_PARITY:
        pytest.skip(NOT_AT_PARITY[slug])
    reference = scored["reference"][slug]
    result = scored["pipeline"][slug]
    assert isinstance(reference, float | int), reference
    assert result.error is None, result.error
    expected = 1.0 - reference if CATALOG[slug].complement_score else reference
    assert result.score == pytest.approx(expected, abs=1e-9)


def test_the_requests_are_deepevals_own_byte_for_byte_in_meaning(scored):
    reference, pipeline = scored["bodies"]
    assert pipeline, "the pipeline sent no judge request"
    assert _canonical(pipeline) == _canonical(reference)
    strict = [b["response_format"] for b in pipeline if "response_format" in b]
    assert strict and all(f["json_schema"]["strict"] is True for f in strict)
    assert all(f["json_schema"]["schema"]["additionalProperties"] is False for f in strict)
    raw = [b for b in pipeline if b.get("logprobs")]
    assert raw and all(b["top_logprobs"] == 20 and "response_format" not in b for b in raw)


def test_g_eval_scores_are_weighted_by_log_probabilities_and_say_so(scored):
    for slug in G_EVAL:
        result = scored["pipeline"][slug]
        assert result.score_path == "logprob_weighted"
        assert result.score * 10 != round(result.score * 10)  # not DeepEval's integer fallback
    assert {scored["pipeline"][slug].score_path for slug in set(DEEPEVAL_METRICS) - G_EVAL} <= {
        None
    }


def test_a_cached_rerun_gives_every_score_again_without_a_judge_call(scored):
    for slug in DEEPEVAL_METRICS:
        first, again = scored["pipeline"][slug], scored["again"][slug]
        assert again.judge_calls == 0
        assert again.cached_calls == first.judge_calls + first.cached_calls > 0
        assert again.score == first.score
        assert again.score_path == first.score_path


def _image_urls(body):
    return [
        part["image_url"]["url"]
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def test_images_reach_the_judge_inline_as_deepeval_sends_them(scored):
    reference, pipeline = scored["bodies"]
    expected = {
        f"data:image/png;base64,{base64.b64encode(png).decode()}"
        for png in (RED_SQUARE, BLUE_SQUARE, CHART)
    }
    for bodies in (reference, pipeline):
        sent = {url for body in bodies for url in _image_urls(body)}
        assert sent == expected
    # Image Editing shows the judge the image given and the image made, in that order.
    editing = [_image_urls(b) for b in pipeline if len(_image_urls(b)) == 2]
    assert any(
        urls == [f"data:image/png;base64,{base64.b64encode(png).decode()}"
                 for png in (RED_SQUARE, BLUE_SQUARE)]
        for urls in editing
    )  # fmt: skip


def test_the_mcp_metrics_show_the_judge_the_servers_offer_and_the_calls(scored):
    _, pipeline = scored["bodies"]
    prompts = [prompt_text(body.get("messages", [])) for body in pipeline]
    mcp = [p for p in prompts if "get_weather" in p]
    assert len(mcp) >= 6  # MCP Use: 2 calls; each multi-turn metric: 2 tasks, 1-2 calls each
    single = next(p for p in mcp if "MCP Primitives Available" in p)
    for offered in ("get_forecast", "weather://cities", "trip_advice", "Sunny in Paris, 21C"):
        assert offered in single
    assert "Weather_MCP_get_weather" not in " ".join(mcp)  # the server's names, not n8n's
    tasks = [p for p in mcp if "Sun on Monday and Tuesday, rain on Wednesday" in p]
    assert tasks  # the second task's call and its result reach the judge
