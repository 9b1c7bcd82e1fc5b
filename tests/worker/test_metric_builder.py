"""How a DeepEval metric is built for each evaluation, and what that costs the worker."""

from deepeval.config import settings
from deepeval.config.eval_mode import EvalMode

from n8n_deepeval_pipeline import CATALOG, JudgeSpec
from n8n_deepeval_pipeline.judging.judge import PipelineJudge, UsageCounter
from n8n_deepeval_pipeline.worker.metric_builder import construct_metric


def test_a_metric_given_the_workers_eval_mode_reads_deepevals_settings_no_more(monkeypatch):
    judge = PipelineJudge(JudgeSpec(), UsageCounter())
    entry = CATALOG["bias"]
    config = entry.config_model.model_validate({"metric": "bias"})
    reads = []
    read = settings.get_settings
    monkeypatch.setattr(settings, "get_settings", lambda: reads.append(1) or read())
    given = construct_metric(entry, config, judge, EvalMode.LLM)
    assert (given.eval_mode, len(reads)) == (EvalMode.LLM, 0)
    # Left to DeepEval, each metric reads the settings (rehashing the environment).
    assert construct_metric(entry, config, judge).eval_mode == EvalMode.LLM
    assert len(reads) == 1
