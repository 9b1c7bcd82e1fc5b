"""The n8n side of a benchmark file: the webhook target and the Data Table sink."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from n8n_deepeval_pipeline.config_model import ConfigModel

HttpMethod = Literal["GET", "POST", "PUT", "PATCH"]
# Methods that may already have acted when they fail: never retried automatically.
UNSAFE_TO_RETRY: frozenset[str] = frozenset({"POST", "PATCH"})


class N8nWorkflowRef(ConfigModel):
    """A workflow in n8n, read through its public API (``workflow: {id: …}``)."""

    id: str = Field(min_length=1, description="The workflow id in n8n (from its URL).")


class WebhookTarget(ConfigModel):
    """Call the workflow over its webhook, once per run (the promptfoo n8n provider's way).

    Templates (Jinja2, sandboxed: no code) see the row's mapped fields (``input``,
    ``expectedOutput``, …), ``row`` (every column), ``evalContext`` (``caseId``,
    ``runId``, ``runIndex``, ``workflowHash``), ``sessionId`` and ``env``.
    """

    type: Literal["n8n_webhook"]
    url: str | None = Field(default=None, description="The webhook URL (a template).")
    url_env: str | None = Field(
        default=None, description="Name of the environment variable that holds the URL."
    )
    method: HttpMethod = "POST"
    headers: dict[str, str] = Field(default_factory=dict, description="Header templates.")
    body: Any = Field(
        default=None,
        description="Body template (object, list or text). Default: the mapped fields, "
        "chatInput, sessionId and evalContext. GET sends its fields as query parameters.",
    )
    response_path: str | None = Field(
        default=None, description="JMESPath to the output when the answer has another shape."
    )
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    max_concurrency: int = Field(default=4, ge=1, le=64)
    retries: int = Field(
        default=2, ge=0, le=10, description="Retries of GET and PUT (POST/PATCH never)."
    )
    messages_column: str | None = Field(
        default=None,
        description="Dataset column with a list of user messages, sent one by one in one "
        "session (a multi-turn run).",
    )
    session_field: str | None = Field(
        default="sessionId", description="Body field that carries the session id."
    )
    session_header: str | None = Field(
        default=None, description="Header that carries the session id."
    )
    session_parser: str | None = Field(
        default=None, description="JMESPath to a session id in the answer (used from then on)."
    )
    steps_from_execution: bool = Field(
        default=False,
        description="Read intermediateSteps from the run's execution through the n8n API "
        "when the answer has none (needs workflow: {id: …}).",
    )

    @model_validator(mode="after")
    def _one_url(self) -> WebhookTarget:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("an n8n_webhook target needs exactly one of 'url' or 'urlEnv'")
        return self


class WorkflowTarget(ConfigModel):
    """Run the workflow from a start node to an end node (n8n's config evals), as it is.

    The pipeline creates a harness copy on the same n8n whose trigger is replaced by a
    webhook, runs every run through it, and removes it afterwards.
    """

    type: Literal["n8n_workflow"]
    start_node_name: str = Field(
        min_length=1, description="The first node the trigger feeds (never the trigger)."
    )
    end_node_name: str = Field(
        min_length=1, description="The node whose output is the run's output."
    )
    input: Any = Field(
        default=None,
        description="What the trigger outputs for a row (a template, as a webhook body). "
        "Default: the mapped fields, chatInput from input, a sessionId per run.",
    )
    response_path: str | None = Field(
        default=None, description="JMESPath to the output in the end node's item."
    )
    timeout_s: float = Field(default=300.0, gt=0, le=3600)
    max_concurrency: int = Field(default=4, ge=1, le=64)
    messages_column: str | None = Field(
        default=None, description="Dataset column with a list of user messages (multi-turn)."
    )
    steps_from_execution: bool = Field(
        default=True,
        description="Read intermediateSteps from the execution when the end node's output "
        "has none (an AI Agent with Return Intermediate Steps off, or a node after it).",
    )

    def as_webhook(self, url: str) -> WebhookTarget:
        """The harness copy's webhook, called like any webhook target."""
        return WebhookTarget(
            type="n8n_webhook",
            url=url,
            body=self.input,
            response_path=self.response_path,
            timeout_s=self.timeout_s,
            max_concurrency=self.max_concurrency,
            messages_column=self.messages_column,
            steps_from_execution=self.steps_from_execution,
        )


SinkWriteMode = Literal["append", "upsert"]


class DataTableOutput(ConfigModel):
    """One table of results written to an n8n Data Table (created when missing)."""

    data_table: str = Field(min_length=1, description="The Data Table's id or name.")
    write_mode: SinkWriteMode = "upsert"
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="Renamed columns: the seed's camelCase name → the Data Table's name.",
    )

    @field_validator("columns")
    @classmethod
    def _distinct_names(cls, columns: dict[str, str]) -> dict[str, str]:
        names = list(columns.values())
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"two columns cannot share the name(s) {repeated}")
        return columns


class DataTableSink(ConfigModel):
    """Where results are written back to n8n, besides DuckDB."""

    run_aggregates: DataTableOutput | None = None
    consistency_stats: DataTableOutput | None = None
