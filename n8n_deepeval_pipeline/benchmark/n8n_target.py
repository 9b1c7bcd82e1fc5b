"""The n8n side of a benchmark file: the webhook target and the Data Table sink."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from n8n_deepeval_pipeline.config.model import ConfigModel
from n8n_deepeval_pipeline.judging.prices import Price
from n8n_deepeval_pipeline.n8n_data.templates import TemplateRenderError, env_names
from n8n_deepeval_pipeline.workflow.variants import BASE

HttpMethod = Literal["GET", "POST", "PUT", "PATCH"]
# Methods that may already have acted when they fail: never retried automatically.
UNSAFE_TO_RETRY: frozenset[str] = frozenset({"POST", "PATCH"})
# The project's own secrets (the judge's key, the results database's URL, n8n's API key):
# a benchmark file is shared like code, so its templates can never send them anywhere.
_OWN_PREFIX = "N8N_DEEPEVAL_"
_OWN_NAMES = frozenset({"N8N_API_KEY"})


def _not_the_projects_own(name: str) -> str:
    if name.startswith(_OWN_PREFIX) or name in _OWN_NAMES:
        raise ValueError(
            f"{name} belongs to this project ({_OWN_PREFIX}*, N8N_API_KEY): templates never see it"
        )
    return name


EnvName = Annotated[
    str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"), AfterValidator(_not_the_projects_own)
]


def _env_field() -> Any:
    return Field(
        default_factory=list,
        description="Environment variables the templates may read as env.NAME (only these; "
        "never N8N_DEEPEVAL_* or N8N_API_KEY).",
    )


def _prices_field() -> Any:
    return Field(
        default_factory=dict,
        description="USD per million tokens of the workflow's own models ({input, output} by "
        "model name), over the built-in table and N8N_DEEPEVAL_PRICES; a model with no "
        "price leaves the run's cost unpriced, never free.",
    )


def refuse_unlisted_env(templates: dict[str, Any], listed: list[str]) -> None:
    """Every ``env.NAME`` a template reads is in ``target.env``; the error names the field."""
    for field, template in templates.items():
        try:
            unlisted = sorted(env_names(template) - set(listed))
        except TemplateRenderError as error:
            raise ValueError(f"{field}: {error}") from None
        for name in unlisted:
            try:
                _not_the_projects_own(name)
            except ValueError as error:
                raise ValueError(f"{field} reads env.{name}: {error}") from None
        if unlisted:
            raise ValueError(
                f"{field} reads env.{unlisted[0]}, which is not in target.env "
                f"(list the variables templates may read: env: [{', '.join(unlisted)}])"
            )


# The body sent when a target names none, as a template: the mapped fields (unset ones are
# left out), chatInput (what a Chat Trigger sends), the session and the run's ids.
DEFAULT_BODY: dict[str, str] = {
    "input": "{{ input }}",
    "expectedOutput": "{{ expectedOutput }}",
    "context": "{{ context }}",
    "retrievalContext": "{{ retrievalContext }}",
    "expectedTools": "{{ expectedTools }}",
    "label": "{{ label }}",
    "chatInput": "{{ input }}",
    "sessionId": "{{ sessionId }}",
    "evalContext": "{{ evalContext }}",
}


class N8nWorkflowRef(ConfigModel):
    """A workflow in n8n, read through its public API (``workflow: {id: …}``)."""

    id: str = Field(min_length=1, description="The workflow id in n8n (from its URL).")


class WebhookTarget(ConfigModel):
    """Call the workflow over its webhook, once per run (the promptfoo n8n provider's way).

    Templates (Jinja2, sandboxed: no code) see the row's mapped fields (``input``,
    ``expectedOutput``, …), ``row`` (every column), ``evalContext`` (``caseId``,
    ``runId``, ``runIndex``, ``workflowHash``), ``sessionId`` and ``env``: only the
    variables listed in ``env``.
    """

    type: Literal["n8n_webhook"] = Field(description="Call the workflow over its webhook.")
    url: str | None = Field(default=None, description="The webhook URL (a template).")
    url_env: str | None = Field(
        default=None, description="Name of the environment variable that holds the URL."
    )
    method: HttpMethod = Field(
        default="POST",
        description="GET sends the body's fields as query parameters; POST and PATCH are "
        "never retried (the workflow may already have acted).",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Header templates.")
    body: Any = Field(
        default=None,
        description="Body template (object, list or text). Default: the mapped fields, "
        "chatInput, sessionId and evalContext. GET adds its fields to the URL's own query "
        "string (a name that query holds already keeps the URL's value).",
    )
    response_path: str | None = Field(
        default=None, description="JMESPath to the output when the answer has another shape."
    )
    timeout_s: float = Field(default=120.0, gt=0, le=3600, description="Seconds one call may take.")
    max_concurrency: int = Field(
        default=4, ge=1, le=64, description="Calls to the workflow in flight at once."
    )
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
    env: list[EnvName] = _env_field()
    prices: dict[str, Price] = _prices_field()

    @model_validator(mode="after")
    def _one_url(self) -> WebhookTarget:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("an n8n_webhook target needs exactly one of 'url' or 'urlEnv'")
        return self

    @model_validator(mode="after")
    def _reads_only_listed_env(self) -> WebhookTarget:
        headers = {f"headers.{name}": value for name, value in self.headers.items()}
        refuse_unlisted_env({"url": self.url, **headers, "body": self.body}, self.env)
        return self


class NodeMock(ConfigModel):
    """What one node answers instead of running: fixed, a dataset column's, or the judge's."""

    response: Any = Field(
        default=None,
        description="The fixed response: an object (one item), a list (items) or text. A "
        "mocked tool answers it as text (JSON for structures).",
    )
    column: str | None = Field(
        default=None,
        min_length=1,
        description="Dataset column holding each row's response (JSON text or text), so "
        "each case scripts its own answer.",
    )
    judge: bool = Field(
        default=False,
        description="The judge writes a plausible response for each row from the node's "
        "type, parameters and the row's input (once per row, cached like every judge call).",
    )

    @model_validator(mode="after")
    def _one_answer(self) -> NodeMock:
        if [self.response is not None, self.column is not None, self.judge].count(True) != 1:
            raise ValueError("a mock needs exactly one of 'response', 'column' or 'judge'")
        return self

    @property
    def per_row(self) -> bool:
        """Whether the answer differs by row (read from the run's request)."""
        return self.column is not None or self.judge


def _judge_shorthand(value: Any) -> Any:
    """A node mocked as ``judge`` is ``{judge: true}``."""
    return {"judge": True} if value == "judge" else value


def _or_judge(schema: dict[str, Any]) -> None:
    """Editors accept the shorthand too."""
    mock = schema["additionalProperties"]
    schema["additionalProperties"] = {"anyOf": [{"const": "judge", "type": "string"}, mock]}


class Mocks(ConfigModel):
    """Nodes of the harness copy that answer from the benchmark instead of acting."""

    services: bool = Field(
        default=False,
        description="Mock every node that carries credentials or makes HTTP requests, except "
        "language models, memory, embeddings, rerankers and read-only vector stores and "
        'retrievers; those not named under nodes answer {"mocked": true}.',
    )
    nodes: dict[str, Annotated[NodeMock, BeforeValidator(_judge_shorthand)]] = Field(
        default_factory=dict,
        json_schema_extra=_or_judge,
        description='Node name → its mock (main-path nodes and tools); "judge" (= {judge: '
        "true}) has the judge write it.",
    )


def _services_shorthand(value: Any) -> Any:
    """``mocks: services`` is ``mocks: {services: true}``."""
    return {"services": True} if value == "services" else value


def _or_services(schema: dict[str, Any]) -> None:
    """Editors accept the shorthand too."""
    schema["anyOf"] = [{"const": "services", "type": "string"}, {"$ref": schema.pop("$ref")}]


class McpServerSettings(ConfigModel):
    """An MCP Client Tool node's server: whether runs may call it, and what it offers.

    Its tools' calls are mocked unless ``safe`` (the node's mock under ``mocks.nodes``, or
    ``{"mocked": true}``). What the server offers is listed from it through the MCP
    protocol when a run starts (listing calls no tool), unless it is given here: a server
    the pipeline cannot reach, or one behind credentials only n8n holds.
    """

    safe: bool = Field(
        default=False,
        description="The server may be called: its tools run for real on every run (default: "
        "they are mocked, and the server sees no tool call).",
    )
    tools: list[dict[str, Any]] | None = Field(
        default=None,
        description="The server's tools as MCP lists them ({name, description, inputSchema}); "
        "given, the server is not asked for them.",
    )
    resources: list[dict[str, Any]] | None = Field(
        default=None, description="The server's resources as MCP lists them ({uri, name, …})."
    )
    prompts: list[dict[str, Any]] | None = Field(
        default=None, description="The server's prompts as MCP lists them ({name, arguments, …})."
    )

    @field_validator("tools", "resources", "prompts")
    @classmethod
    def _named(cls, primitives: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for index, primitive in enumerate(primitives or []):
            if not isinstance(primitive.get("name"), str) or not primitive["name"]:
                raise ValueError(f"entry {index} has no name (MCP lists each by its name)")
        return primitives


# Each version of a run calls its workflow from a process of its own, all at once (about
# 0.3 GB each: ten variants peaked at 3.1 GB); more than this would not fit a machine.
MAX_VARIANTS = 16
# A variant's name is a label in tables, partitions' tags and the report.
VariantName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
NodeName = Annotated[str, Field(min_length=1)]
ParameterPath = Annotated[str, Field(pattern=r"^[^.]+(\.[^.]+)*$")]


class WorkflowTarget(ConfigModel):
    """Run the workflow from a start node to an end node (n8n's config evals), as it is.

    The pipeline creates a harness copy on the same n8n whose trigger is replaced by a
    webhook, runs every run through it, and removes it afterwards (n8n deletes its
    executions with it) unless ``keepHarnessCopy``.
    """

    type: Literal["n8n_workflow"] = Field(
        description="Run the workflow from a start node to an end node through a harness copy."
    )
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
    timeout_s: float = Field(
        default=300.0, gt=0, le=3600, description="Seconds one run of the harness copy may take."
    )
    max_concurrency: int = Field(
        default=4, ge=1, le=64, description="Runs of the harness copy in flight at once."
    )
    messages_column: str | None = Field(
        default=None, description="Dataset column with a list of user messages (multi-turn)."
    )
    steps_from_execution: bool = Field(
        default=True,
        description="Read intermediateSteps from the execution when the end node's output "
        "has none (an AI Agent with Return Intermediate Steps off, or a node after it).",
    )
    keep_harness_copy: bool = Field(
        default=False,
        description="Keep each run's harness copy in n8n, unpublished, with its executions, "
        "to inspect them there (delete it when done). Default: the copy is deleted when the "
        "run ends, and n8n deletes its executions with it.",
    )
    # One type behind the shorthand, so a mistake is named by its field, not by union branch.
    mocks: Annotated[Mocks, BeforeValidator(_services_shorthand)] = Field(
        default_factory=Mocks,
        json_schema_extra=_or_services,
        description="Nodes that answer from the benchmark instead of acting on the world; "
        '"services" (= {services: true}) mocks every node that acts on a real service.',
    )
    mcp_servers: dict[NodeName, McpServerSettings] = Field(
        default_factory=dict,
        description="MCP Client Tool node name → its server: safe to call (its tool calls "
        "are mocked otherwise), and what it offers when it cannot be listed.",
    )
    env: list[EnvName] = _env_field()
    prices: dict[str, Price] = _prices_field()
    variants: dict[VariantName, dict[NodeName, dict[ParameterPath, Any]]] = Field(
        default_factory=dict,
        json_schema_extra={"maxProperties": MAX_VARIANTS},
        description="Variants benchmarked beside the workflow in one run: variant name → "
        "node name → parameter path (dots: options.systemMessage) → value. Each variant is "
        "a workflow version of its own (its own workflowHash and results), never the "
        "baseline of the next version; a model's `model` takes the name as the editor "
        f"shows it. At most {MAX_VARIANTS} (each version runs in a process of its own).",
    )

    @model_validator(mode="after")
    def _reads_only_listed_env(self) -> WorkflowTarget:
        refuse_unlisted_env({"input": self.input}, self.env)
        return self

    @model_validator(mode="after")
    def _safe_or_mocked(self) -> WorkflowTarget:
        mocked = self.mocks.nodes
        both = sorted(
            name for name, server in self.mcp_servers.items() if server.safe and name in mocked
        )
        if both:
            raise ValueError(
                f'mcpServers: "{both[0]}" is safe to call and mocked under mocks.nodes: '
                "say one or the other"
            )
        return self

    @field_validator("variants")
    @classmethod
    def _base_is_the_workflow(cls, variants: dict[str, Any]) -> dict[str, Any]:
        if len(variants) > MAX_VARIANTS:
            raise ValueError(
                f"{len(variants)} variants: at most {MAX_VARIANTS} run beside the workflow (each "
                "version calls it from a process of its own, all at once); split them over "
                "two benchmark files"
            )
        if BASE in variants:
            raise ValueError(f"{BASE!r} names the workflow itself: give the variant another name")
        return variants

    def as_webhook(self, url: str, body: Any) -> WebhookTarget:
        """The harness copy's webhook, called like any webhook target with ``body``."""
        return WebhookTarget(
            type="n8n_webhook",
            url=url,
            body=body,
            response_path=self.response_path,
            timeout_s=self.timeout_s,
            max_concurrency=self.max_concurrency,
            messages_column=self.messages_column,
            steps_from_execution=self.steps_from_execution,
            env=self.env,
            prices=self.prices,
        )


SinkWriteMode = Literal["append", "upsert"]


class DataTableOutput(ConfigModel):
    """One table of results written to an n8n Data Table (created when missing)."""

    data_table: str = Field(min_length=1, description="The Data Table's id or name.")
    write_mode: SinkWriteMode = Field(
        default="upsert",
        description="upsert (a row replaced by its key: runId or caseId, and workflowHash) or "
        "append (rows never written before are added).",
    )
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

    run_aggregates: DataTableOutput | None = Field(
        default=None, description="The run_aggregates rows, with the seed's column names."
    )
    consistency_stats: DataTableOutput | None = Field(
        default=None, description="The consistency_stats rows, with the seed's column names."
    )
    online_scores: DataTableOutput | None = Field(
        default=None, description="The online section's scores, upserted by score id."
    )
