"""What crosses the process boundary: an evaluation task in, its result out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from n8n_deepeval_pipeline.judging.call_ledger import LedgerTag
from n8n_deepeval_pipeline.judging.call_log import JudgeCall
from n8n_deepeval_pipeline.judging.failures import REFUSED_KINDS, JudgeFailureKind
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_data.agent_steps import AgentTool
from n8n_deepeval_pipeline.n8n_data.images import ImageData
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.statistics.judge_panel import quorum

ErrorKind = Literal[
    "missing_input",
    "invalid_config",
    JudgeFailureKind,  # the judge's failures, named as everywhere else
    "metric_error",
    "target_error",
    "worker_crash",
    "timeout",
]
# A metric's own answer about the run: asking again gives the same one.
FINAL_ERROR_KINDS: frozenset[str] = frozenset({"missing_input", "invalid_config"})
# The workflow failed to answer (a failed call, nothing recorded or stored for the run):
# a result about the workflow, not a gap in the scoring.
TARGET_ERROR_KINDS: frozenset[str] = frozenset({"target_error"})
# The judge did not answer (the circuit was open): the run is incomplete, not judged.
OUTAGE_ERROR_KINDS: frozenset[str] = frozenset({"judge_unavailable"})
# The judge refused the call, by its HTTP status (``judging.failures``).
REFUSED_ERROR_KINDS: Mapping[int, ErrorKind] = REFUSED_KINDS


def is_unjudged(error_kind: str | None) -> bool:
    """A score the judge or the machinery still owes: retried on resume, counted as a gap."""
    return error_kind is not None and error_kind not in FINAL_ERROR_KINDS | TARGET_ERROR_KINDS


class HeadToHead(BaseModel):
    """A run set against the same row's run, same run index, of another version of the family.

    ``name`` and ``opponent`` are the two versions' names (``base`` or a variant's): what
    DeepEval's arena calls its contestants, masked from the judge and named in its reason.
    """

    name: str
    opponent: str
    opponent_output: str | None
    opponent_steps: list[Any] | None = None
    opponent_first: bool  # the judge reads the opponent first: positions swap on odd runs


class EvaluationItem(BaseModel):
    """The n8n-shaped data one metric evaluation reads (snake_case DeepEval names)."""

    input: Any = None
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    expected_tools: list[str] | None = None
    intermediate_steps: list[Any] | None = None
    # The tools connected to the workflow's agent (None: the workflow is not known).
    available_tools: list[AgentTool] | None = None
    turns: list[Any] | None = None  # chat history in any n8n memory form
    chatbot_role: str | None = None
    expected_outcome: str | None = None
    scenario: str | None = None
    head_to_head: HeadToHead | None = None  # a head-to-head metric's other side
    # The MCP servers the agent's MCP Client Tool nodes reached (None: it had none).
    mcp_servers: list[McpServer] | None = None
    # The images the texts above mark ([DEEPEVAL:IMAGE:<sha256>]), from the results store.
    images: list[ImageData] | None = None


class EvaluationTask(BaseModel):
    """One metric on one run (by one judge, or by each judge of a panel in turn)."""

    task_id: int
    run_id: str
    metric_label: str
    config: dict[str, Any]  # the metric's validated config, dumped by field name
    item: EvaluationItem
    judge: JudgeSpec
    timeout_s: float
    clean_session: bool = False
    panel: list[JudgeSpec] = Field(
        default_factory=list, description="A judge panel: the metric is scored by each judge."
    )
    ledger: LedgerTag | None = Field(
        default=None, description="Where each answered judge call is written as it arrives."
    )
    keep_judge_calls: bool = Field(
        default=False,
        description="Keep each judge call's model, tokens and timing (a trace is exported).",
    )

    @property
    def judges(self) -> list[JudgeSpec]:
        """The judges that score this task: the panel's, or the one judge."""
        return self.panel or [self.judge]

    @property
    def secrets(self) -> list[str]:
        """What no message of this task may show: every judge's key and URL credentials."""
        return [secret for judge in self.judges for secret in judge.secrets]

    def fingerprint(self) -> str:
        """Identity of the work (run, metric config, item, judge), not of this attempt."""
        identity = {
            "run_id": self.run_id,
            "metric": self.metric_label,
            "config": self.config,
            "item": self.item.model_dump(mode="json"),
            "judge": self.judge.label,
        }
        if self.panel:
            identity["panel"] = [judge.label for judge in self.panel]
        text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Judgement(BaseModel):
    """A score (or why there is none) and what the judge calls behind it cost."""

    score: float | None = None
    reason: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    judge_calls: int = 0
    judge_retries: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # How DeepEval scored a metric that asks for log-probabilities (G-Eval):
    # logprob_weighted, or schema_fallback when the judge has none; None for other metrics.
    score_path: str | None = None
    # Each judge call, when the task asked to keep them (``keep_judge_calls``); else None.
    judge_call_log: list[JudgeCall] | None = None


class JudgeVote(Judgement):
    """What one judge of a panel answered (or why it gave no score)."""

    judge: str  # provider:model


class EvaluationResult(Judgement):
    """A score, or the reason there is none.

    For a panel, ``votes`` holds each judge's answer in the panel's order and the
    counters are their totals; ``score`` is left to the plan, which combines the votes.
    """

    task_id: int
    latency_s: float = 0.0
    started_at: float | None = None  # seconds since the epoch; kept with judge_call_log
    worker_pid: int | None = None
    votes: list[JudgeVote] | None = None

    @classmethod
    def failed(cls, task_id: int, kind: ErrorKind, message: str, **extra: Any) -> EvaluationResult:
        """A result that carries only an error."""
        return cls(task_id=task_id, error=message, error_kind=kind, **extra)

    @classmethod
    def of_panel(cls, task_id: int, votes: list[JudgeVote]) -> EvaluationResult:
        """A panel's result: its votes and their totals; an error if too few judges answered.

        A panel without its quorum (more than half of its judges answering) has no
        judgement: the error is the first failed judge's kind, and names every failure.
        """
        totals = {
            name: sum(getattr(vote, name) for vote in votes)
            for name in (
                "judge_calls",
                "judge_retries",
                "cached_calls",
                "prompt_tokens",
                "completion_tokens",
            )
        }
        path = ",".join(sorted({vote.score_path for vote in votes if vote.score_path})) or None
        logs = [vote.judge_call_log for vote in votes if vote.judge_call_log is not None]
        calls = [call for log in logs for call in log] if logs else None
        failed = [vote for vote in votes if vote.score is None]
        answered = len(votes) - len(failed)
        if answered >= quorum(len(votes)):
            return cls(
                task_id=task_id, votes=votes, score_path=path, judge_call_log=calls, **totals
            )
        why = "; ".join(f"{vote.judge}: {vote.error_kind}: {vote.error}" for vote in failed)
        return cls(
            task_id=task_id,
            votes=votes,
            error=f"{answered} of {len(votes)} judges answered, a panel needs "
            f"{quorum(len(votes))}. {why}",
            error_kind=failed[0].error_kind or "metric_error",
            score_path=path,
            judge_call_log=calls,
            **totals,
        )
