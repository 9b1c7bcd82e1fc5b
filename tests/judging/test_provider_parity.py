"""Provider parity: every judge provider DeepEval has a class for asks as that class asks.

For each provider, Bias, G-Eval and a conversational metric (Conversation Completeness)
are scored twice against one loopback server that speaks the provider's API: by the
pipeline (worker pool, cache, the provider's SDK) and by DeepEval's own
``metric.measure()`` with DeepEval's own model class for the provider, built as its user
would build it (``tests/judging/deepeval_reference.py``, test cases written by hand). The
server answers from a hash of the whole request, so any difference in a body changes an
answer and a score. Compared: the request bodies (as JSON and as bytes), the URLs, the
headers that carry meaning (version, authentication, beta flags; not the transport's
own), the scores, and how G-Eval was scored. A few more cases pin what the issue found
wrong before: Azure's deployment named apart from its model, a reasoning model on Azure,
Claude 3's ``max_tokens``, and a schema refused mid-run (Anthropic's class then asks in
plain text; OpenRouter's falls back for that call).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import SecretStr

from n8n_deepeval_pipeline import CATALOG, JudgeSpec, WorkerPool
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.testing.loopback_judge import LoopbackJudge
from n8n_deepeval_pipeline.worker.environment import worker_environment
from tests.conftest import ROOT, evaluate_all, make_task
from tests.judging.deepeval_reference import TOOLS
from tests.worker.test_metric_runs import ITEM, config_for

pytestmark = pytest.mark.slow

SLUGS = ["bias", "g_eval", "conversation_completeness"]
KEY = "sk-parity-key"
AWS = {"aws_access_key_id": "AKIAPARITYEXAMPLE", "aws_secret_access_key": KEY}
TIMEOUT_S = 60.0  # the judge's timeout; DeepEval's classes are given the same
# Headers that belong to the transport or to one attempt, not to what is asked: the
# connection, the body's length and encoding, the moment a request was signed, an
# attempt's id and number (botocore counts its own retries: the pipeline's are off), and
# the mark the openai and anthropic SDKs put on a call made through ``with_raw_response``
# (the pipeline reads the reply's bytes and rate-limit headers so; servers ignore it).
TRANSPORT_HEADERS = {
    "accept-encoding",
    "amz-sdk-invocation-id",
    "amz-sdk-request",
    "connection",
    "content-length",
    "host",
    "x-amz-date",
    "x-stainless-raw-response",
}


@dataclass
class Case:
    """One provider judged both ways: the pipeline's spec and DeepEval's class arguments."""

    label: str
    provider: str
    model: str
    g_eval: str  # how G-Eval scores: logprob_weighted or schema_fallback
    options: dict[str, Any] = field(default_factory=dict)  # JudgeSpec fields
    arguments: dict[str, Any] = field(default_factory=dict)  # DeepEval's class, beyond model
    attributes: dict[str, Any] = field(default_factory=dict)  # set on DeepEval's model after
    slugs: list[str] = field(default_factory=lambda: list(SLUGS))
    faults: list[str] = field(default_factory=list)  # armed again for each side
    root: bool = True  # the server's URL without /v1 (the SDK adds its own path)
    # the DeepEval class a provider without one of its own asks as (CLASSES' key)
    reference: str | None = None

    @property
    def deepeval_class(self) -> str:
        """The key of DeepEval's class this case is compared with."""
        return self.reference or self.provider


CASES = [
    Case("openai", "openai", "gpt-4.1", "logprob_weighted", root=False),
    Case(
        "azure-openai",
        "azure-openai",
        "gpt-4o",
        "logprob_weighted",
        options={"deployment": "my-gpt-4o-deployment", "api_version": "2024-10-21"},
        arguments={"deployment_name": "my-gpt-4o-deployment", "api_version": "2024-10-21"},
    ),
    Case(
        "azure-openai gpt-5, deployment named otherwise",
        "azure-openai",
        "gpt-5",
        "schema_fallback",
        options={"deployment": "judge-reasoning", "api_version": "2025-04-01-preview"},
        arguments={"deployment_name": "judge-reasoning", "api_version": "2025-04-01-preview"},
        slugs=["bias", "g_eval"],
    ),
    Case(
        "azure-openai gpt-5.4",
        "azure-openai",
        "gpt-5.4",
        "logprob_weighted",
        options={"deployment": "judge-54", "api_version": "2025-04-01-preview"},
        arguments={"deployment_name": "judge-54", "api_version": "2025-04-01-preview"},
        slugs=["g_eval"],
    ),
    Case("anthropic", "anthropic", "claude-haiku-4-5", "schema_fallback"),
    Case(
        "anthropic claude 3",
        "anthropic",
        "claude-3-haiku-20240307",
        "schema_fallback",
        slugs=["bias"],
    ),
    Case(
        "anthropic, schema refused",
        "anthropic",
        "claude-sonnet-4-5",
        "schema_fallback",
        slugs=["bias"],
        faults=["refuse_schema"],
    ),
    Case(
        "gemini",
        "gemini",
        "gemini-2.5-flash",
        "schema_fallback",
        arguments={"use_vertexai": False},
    ),
    Case("ollama", "ollama", "llama3.1", "schema_fallback"),
    Case("openrouter", "openrouter", "openai/gpt-4.1", "logprob_weighted", root=False),
    Case(
        "openrouter, schema refused",
        "openrouter",
        "anthropic/claude-haiku-4-5",
        "logprob_weighted",
        slugs=["bias"],
        faults=["refuse_schema"],
        root=False,
    ),
    Case("deepseek", "deepseek", "deepseek-chat", "schema_fallback"),
    # A server with OpenAI's API: by default as GPTModel asks a model that takes structured
    # outputs and log-probabilities; with structuredOutputs none and no log-probabilities,
    # as LocalModel (`deepeval set-local-model`) asks any model.
    Case(
        "openai-compatible",
        "openai-compatible",
        "gpt-4.1",
        "logprob_weighted",
        root=False,
        reference="openai",
    ),
    Case(
        "openai-compatible as LocalModel",
        "openai-compatible",
        "qwen2.5-7b-instruct",
        "schema_fallback",
        options={"structured_outputs": "none", "logprobs": False},
        root=False,
        reference="local-model",
    ),
    Case(
        "bedrock",
        "bedrock",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "schema_fallback",
        options={"region": "us-east-1", "aws_access_key_id": AWS["aws_access_key_id"]},
        arguments={"region": "us-east-1", **AWS},
    ),
]


def _judge_spec(case: Case, base_url: str, state_dir: str) -> JudgeSpec:
    return JudgeSpec(
        provider=case.provider,
        model=case.model,
        base_url=base_url,
        api_key=SecretStr(KEY),
        state_dir=state_dir,
        cache_scope="shared",
        **case.options,
    )


def _reference_arguments(case: Case, base_url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """DeepEval's class arguments (a user's, pointed at the server) and attributes to set."""
    arguments: dict[str, Any] = {"model": case.model, **case.arguments}
    attributes = dict(case.attributes)
    where = {
        "openai": {"base_url": base_url, "api_key": KEY, "timeout": TIMEOUT_S},
        "local-model": {"base_url": base_url, "api_key": KEY, "timeout": TIMEOUT_S},
        "azure-openai": {"base_url": base_url, "api_key": KEY, "timeout": TIMEOUT_S},
        "anthropic": {"base_url": base_url, "api_key": KEY, "timeout": TIMEOUT_S},
        "gemini": {
            "api_key": KEY,
            "http_options": {
                "base_url": base_url,
                "timeout": TIMEOUT_S * 1000,
                "retry_options": {"attempts": 1},
            },
        },
        "ollama": {"base_url": base_url, "timeout": TIMEOUT_S},
        "openrouter": {"base_url": base_url, "api_key": KEY, "timeout": TIMEOUT_S},
        "deepseek": {"api_key": KEY, "timeout": TIMEOUT_S},
        "bedrock": {"endpoint_url": base_url},
    }[case.deepeval_class]
    arguments.update(where)
    if case.provider == "deepseek":
        attributes["base_url"] = base_url  # DeepEval's class has DeepSeek's own fixed
    return arguments, attributes


def _deepeval(command: list[str], tmp) -> Any:
    subprocess.run(
        [sys.executable, "-m", "tests.judging.deepeval_reference", *command],
        cwd=tmp,
        env={**worker_environment(), "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=900,
    )
    return json.loads((tmp / command[-1]).read_text(encoding="utf-8"))


def _metrics(case: Case) -> list[dict[str, Any]]:
    return [{"label": slug, "config": config_for(slug).model_dump()} for slug in case.slugs]


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Every case scored both ways: scores, and the bodies, URLs and headers each sent."""
    tmp = tmp_path_factory.mktemp("providers")
    slugs = sorted({slug for case in CASES for slug in case.slugs})
    schemas = _deepeval(["schemas", ",".join(slugs), "schemas.json"], tmp)
    servers = [LoopbackJudge(latency_s=0.0, schemas=schemas).start() for _ in CASES]
    try:
        urls = [
            s.base_url.removesuffix("/v1") if c.root else s.base_url
            for c, s in zip(CASES, servers, strict=True)
        ]
        specs = []
        for case, server, url in zip(CASES, servers, urls, strict=True):
            server.faults = list(case.faults)
            arguments, attributes = _reference_arguments(case, url)
            specs.append(
                {
                    "provider": case.deepeval_class,
                    "arguments": arguments,
                    "attributes": attributes,
                    "metrics": _metrics(case),
                }
            )
        (tmp / "specs.json").write_text(json.dumps(specs), encoding="utf-8")
        references = _deepeval(["specs.json", "out.json"], tmp)
        seen = [_seen(server) for server in servers]

        tools = [AgentTool(name=name, description=text) for name, text in TOOLS.items()]
        item = ITEM.model_copy(update={"available_tools": tools})
        tasks = []
        for index, (case, server, url) in enumerate(zip(CASES, servers, urls, strict=True)):
            server.faults = list(case.faults)
            judge = _judge_spec(case, url, str(tmp / f"judge-{index}"))
            for slug in case.slugs:
                tasks.append(make_task(config_for(slug).model_dump(), item, len(tasks), judge))
        pool = WorkerPool(size=2, timeout_s=300)
        pool.start()
        try:
            results = iter(evaluate_all(pool, tasks))
        finally:
            pool.close()
    finally:
        for server in servers:
            server.stop()
    return {
        case.label: {
            "reference": reference,
            "reference_seen": reference_seen,
            "pipeline": {slug: next(results) for slug in case.slugs},
            "pipeline_seen": _seen(server, after=reference_seen),
        }
        for case, server, reference, reference_seen in zip(
            CASES, servers, references, seen, strict=True
        )
    }


def _seen(server: LoopbackJudge, after: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the server was sent (after the reference's share, for the pipeline's)."""
    sent = {
        "bodies": server.bodies,
        "raw_bodies": server.raw_bodies,
        "urls": server.urls_seen,
        "headers": server.headers_seen,
    }
    start = after["counts"] if after else dict.fromkeys(sent, 0)
    return {
        "counts": {name: len(values) for name, values in sent.items()},
        **{name: list(values[start[name] :]) for name, values in sent.items()},
    }


def _canonical(bodies: list[dict[str, Any]]) -> set[str]:
    # A set: the pipeline's cache answers a prompt that two metrics share only once.
    return {json.dumps(body, sort_keys=True) for body in bodies}


def meaningful(headers: dict[str, str]) -> frozenset[tuple[str, str]]:
    """A request's headers without the transport's; a SigV4 signature without its moment.

    (The signature signs the date: what stays is the scheme, the key id, the region and
    service it is scoped to, and which headers it signs. botocore lists the features a
    client used in its user agent, ``m/…``, in no fixed order.)
    """
    kept = {}
    for name, value in headers.items():
        if name in TRANSPORT_HEADERS:
            continue
        if value.startswith("AWS4-HMAC-SHA256"):
            value = re.sub(r"/\d{8}/", "/<date>/", re.sub(r", Signature=\w+", "", value))
        value = re.sub(r" m/([\w,]+)", lambda m: " m/" + ",".join(sorted(m[1].split(","))), value)
        kept[name] = value
    return frozenset(kept.items())


IDS = [case.label for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_requests_are_deepevals_own(judged, case):
    both = judged[case.label]
    reference, pipeline = both["reference_seen"], both["pipeline_seen"]
    assert pipeline["bodies"], "the pipeline sent no request"
    assert _canonical(pipeline["bodies"]) == _canonical(reference["bodies"])
    assert set(pipeline["urls"]) == set(reference["urls"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_bodies_are_deepevals_own_byte_for_byte(judged, case):
    """Not only the same JSON: the same bytes (key order, spacing, escapes)."""
    both = judged[case.label]
    reference, pipeline = both["reference_seen"], both["pipeline_seen"]
    assert set(pipeline["raw_bodies"]) == set(reference["raw_bodies"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_headers_that_carry_meaning_are_deepevals_own(judged, case):
    both = judged[case.label]
    reference = {meaningful(h) for h in both["reference_seen"]["headers"]}
    pipeline = {meaningful(h) for h in both["pipeline_seen"]["headers"]}
    assert pipeline == reference


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_scores_are_deepevals_own_and_g_eval_is_scored_as_deepeval_scores_it(judged, case):
    both = judged[case.label]
    for slug in case.slugs:
        result, expected = both["pipeline"][slug], both["reference"][slug]
        assert isinstance(expected, float | int), expected
        assert result.error is None, result.error
        if CATALOG[slug].complement_score:
            expected = 1.0 - expected
        assert result.score == pytest.approx(expected, abs=1e-9), slug
    if "g_eval" in case.slugs:
        assert both["pipeline"]["g_eval"].score_path == case.g_eval


def _bodies(judged, label):
    return judged[label]["pipeline_seen"]["bodies"]


def test_anthropic_is_sent_no_temperature_thinking_disabled_and_the_sdks_own_headers(judged):
    bodies = _bodies(judged, "anthropic")
    assert all("temperature" not in body for body in bodies)
    assert all(body["thinking"] == {"type": "disabled"} for body in bodies)
    assert all(body["max_tokens"] == 8192 and "output_config" in body for body in bodies)
    headers = judged["anthropic"]["pipeline_seen"]["headers"]
    from anthropic._constants import ANTHROPIC_API_VERSION  # the SDK's, not an old pin

    assert {h["anthropic-version"] for h in headers} == {ANTHROPIC_API_VERSION}
    assert {h["authorization"] for h in headers} == {f"Bearer {KEY}"}
    assert not any("x-api-key" in h for h in headers)


def test_claude_3_is_asked_for_4096_tokens_in_plain_text(judged):
    bodies = _bodies(judged, "anthropic claude 3")
    assert bodies and all(body["max_tokens"] == 4096 for body in bodies)
    assert not any("output_config" in body or "thinking" in body for body in bodies)


def test_a_refused_schema_makes_anthropics_class_ask_in_plain_text_from_then_on(judged):
    bodies = _bodies(judged, "anthropic, schema refused")
    assert "output_config" in bodies[0]  # refused (HTTP 400 about the schema)
    assert len(bodies) > 2 and not any("output_config" in body for body in bodies[1:])


def test_a_refused_schema_makes_openrouters_class_ask_that_call_in_plain_text(judged):
    bodies = _bodies(judged, "openrouter, schema refused")
    assert "response_format" in bodies[0] and "response_format" not in bodies[1]
    assert bodies[1]["messages"] == bodies[0]["messages"]
    assert "response_format" in bodies[2]  # the next call tries the schema again


def test_azure_keeps_the_deployment_and_the_model_apart(judged):
    both = judged["azure-openai"]
    urls = both["pipeline_seen"]["urls"]
    assert all(
        url.startswith("/openai/deployments/my-gpt-4o-deployment/chat/completions") for url in urls
    )
    raw = [body for body in both["pipeline_seen"]["bodies"] if body.get("logprobs")]
    assert raw and all(body["top_logprobs"] == 20 for body in raw)
    score = both["pipeline"]["g_eval"].score
    assert score * 10 != round(score * 10)  # weighted, not the integer fallback


def test_a_reasoning_model_on_azure_is_sent_no_temperature(judged):
    bodies = _bodies(judged, "azure-openai gpt-5, deployment named otherwise")
    assert bodies and all("temperature" not in body for body in bodies)
    assert all(body["model"] == "judge-reasoning" for body in bodies)


def test_azures_class_asks_gpt_5_4_for_twenty_log_probabilities(judged):
    raw = [b for b in _bodies(judged, "azure-openai gpt-5.4") if b.get("logprobs")]
    assert raw and all(body["top_logprobs"] == 20 for body in raw)  # OpenAI's class caps at 5


def test_deepseek_and_bedrock_answers_are_read_from_text(judged):
    deepseek = _bodies(judged, "deepseek")
    assert all(body.get("response_format") == {"type": "json_object"} for body in deepseek)
    bedrock = _bodies(judged, "bedrock")
    assert bedrock and all(body["inferenceConfig"] == {} for body in bedrock)


def test_openai_compatible_asks_as_gptmodel_by_default_and_as_localmodel_without_a_schema(
    judged,
):
    gpt = _bodies(judged, "openai-compatible")
    assert all(isinstance(body["messages"][0]["content"], list) for body in gpt)  # parts
    assert any(body.get("response_format", {}).get("type") == "json_schema" for body in gpt)
    assert any(body.get("logprobs") for body in gpt)
    local = _bodies(judged, "openai-compatible as LocalModel")
    assert local and all(isinstance(body["messages"][0]["content"], str) for body in local)
    assert not any("response_format" in body or "logprobs" in body for body in local)
    assert all(body["temperature"] == 0.0 for body in gpt + local)
