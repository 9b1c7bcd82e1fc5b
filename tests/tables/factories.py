"""Table rows for the table tests, with only the fields a test cares about spelled out."""

from n8n_deepeval_pipeline import MetricScore


def metric_score(
    run_id: str, metric: str, value: float | None, success: bool, **extra
) -> MetricScore:
    """A score row of a run (``{hash}:{row}:{index}``) that cost nothing; ``extra`` overrides."""
    case_id = run_id.rsplit(":", 1)[0]
    fields = {
        "workflow_hash": case_id.split(":", 1)[0],
        "run_id": run_id,
        "case_id": case_id,
        "metric": metric,
        "metric_slug": metric,
        "score": value,
        "threshold": 0.5,
        "success": success,
        "direction": "higher_is_better",
        "reason": None,
        "error": None,
        "error_kind": None,
        "judge": None,
        "dry_run": False,
        "judge_calls": 0,
        "judge_retries": 0,
        "cached_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "tokens": 0,
        "cost_usd": None,
        "latency_s": 0.1,
    }
    return MetricScore.model_validate({**fields, **extra})
