"""What crosses the process boundary: an evaluation task in, its result out."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from n8n_deepeval_pipeline.judging.retry_policy import RetryPolicy

ErrorKind = Literal[
    "missing_input",
    "invalid_config",
    "judge_error",
    "judge_invalid_output",
    "judge_unavailable",
    "metric_error",
    "no_output",
    "worker_crash",
    "timeout",
]


JudgeProvider = Literal[
    "dry-run", "openai", "openai-compatible", "azure-openai", "anthropic", "local"
]


class JudgeSpec(BaseModel):
    """Which judge a worker builds and how it behaves.

    The key travels to the worker, never into results, logs or the journal: only
    ``label`` is stored.
    """

    model_config = ConfigDict(frozen=True)

    provider: JudgeProvider = "dry-run"
    model: str = "dry-run"
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None  # Azure OpenAI
    timeout_s: float = 60.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    retry: RetryPolicy = RetryPolicy()
    max_in_flight: int = 32  # judge calls in flight across all workers
    requests_per_minute: int | None = None
    breaker_threshold: int = 10  # consecutive failed calls that open the circuit
    breaker_cool_down_s: float = 60.0
    cache: bool = True
    cache_scope: Literal["run", "shared"] = "run"  # "run": each run index re-samples
    state_dir: str | None = None  # cache, rate window and breaker (SQLite), slot locks

    @property
    def is_dry_run(self) -> bool:
        """Scores from the dry-run judge are not judgements and are marked as such."""
        return self.provider == "dry-run"

    @property
    def marker(self) -> str | None:
        """What every reason of this judge is prefixed with, if its judgements are not real."""
        if self.is_dry_run:
            return "[dry-run judge, not a judgement]"
        if self.provider == "local":
            return f"[local smoke-test judge {self.model}, not a reliable judgement]"
        return None

    @property
    def label(self) -> str:
        """Provider and model, safe to store and print."""
        return "dry-run" if self.is_dry_run else f"{self.provider}:{self.model}"


class EvaluationItem(BaseModel):
    """The n8n-shaped data one metric evaluation reads (snake_case DeepEval names)."""

    input: Any = None
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    expected_tools: list[str] | None = None
    intermediate_steps: list[Any] | None = None
    turns: list[Any] | None = None  # chat history in any n8n memory form
    chatbot_role: str | None = None
    expected_outcome: str | None = None
    scenario: str | None = None


class EvaluationTask(BaseModel):
    """One metric on one run."""

    task_id: int
    run_id: str
    metric_label: str
    config: dict[str, Any]  # the metric's validated config, dumped by field name
    item: EvaluationItem
    judge: JudgeSpec
    timeout_s: float
    clean_session: bool = False

    def fingerprint(self) -> str:
        """Identity of the work (run, metric config, item, judge), not of this attempt."""
        identity = {
            "run_id": self.run_id,
            "metric": self.metric_label,
            "config": self.config,
            "item": self.item.model_dump(mode="json"),
            "judge": self.judge.label,
        }
        text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EvaluationResult(BaseModel):
    """A score, or the reason there is none."""

    task_id: int
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    judge_calls: int = 0
    judge_retries: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    worker_pid: int | None = None

    @classmethod
    def failed(cls, task_id: int, kind: ErrorKind, message: str, **extra: Any) -> EvaluationResult:
        """A result that carries only an error."""
        return cls(task_id=task_id, error=message, error_kind=kind, **extra)
