"""What the simulator process is asked: the goldens to play, the judge, the target to call.

The judge's key and the target's URL (which may hold a token) and template variables
travel inside the request, over the process's private connection: never in its
environment, arguments or log.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from n8n_deepeval_pipeline.benchmark.n8n_target import WebhookTarget
from n8n_deepeval_pipeline.judging.call_ledger import LedgerTag
from n8n_deepeval_pipeline.judging.retry_policy import DEFAULT_CALL_LIMIT_S
from n8n_deepeval_pipeline.judging.spec import JudgeSpec
from n8n_deepeval_pipeline.n8n_api.webhook import webhook_identity
from n8n_deepeval_pipeline.redaction import url_secrets
from n8n_deepeval_pipeline.simulation.golden import GoldenRun


class SimulationRequest(BaseModel):
    """Play every golden run as one conversation with the target."""

    model_config = ConfigDict(frozen=True)

    runs: list[GoldenRun]
    judge: JudgeSpec  # the simulated user's model and the outcome checker
    target: WebhookTarget  # a webhook, or a harness copy's webhook
    url: str
    env: dict[str, str] = Field(default_factory=dict)  # the variables target.env lists
    max_user_turns: int = Field(ge=1)
    language: str = "English"
    judge_call_limit_s: float = Field(default=DEFAULT_CALL_LIMIT_S, gt=0)
    """How long one call of the simulated user's judge may take, its rate-limit retries and
    its wait for a turn included: what an evaluation of the worker pool gives its judge
    (``RATE_LIMIT_SHARE`` of the evaluation's timeout); past it the conversation ends as
    ``judge_rate_limited``."""
    ledger: LedgerTag | None = None
    """Where each answered call of the simulated user is written as it arrives, charged to
    the run that asked (None: nowhere)."""

    @property
    def secrets(self) -> list[str]:
        """What no message or log line may show: the judge's key, the URL and its tokens."""
        return [*self.judge.secrets, self.url, *url_secrets(self.url)]

    @property
    def target_identity(self) -> str:
        """The target, named without its URL."""
        return webhook_identity(self.url)

    def namespace(self, run_id: str) -> str:
        """The judge cache's namespace of a run: its run index, unless the cache is shared.

        So a run played again replays its own user turns from the cache, and the runs of
        one golden stay separate samples (as the metrics' evaluations do).
        """
        return run_id.rsplit(":", 1)[-1] if self.judge.cache_scope == "run" else "shared"
