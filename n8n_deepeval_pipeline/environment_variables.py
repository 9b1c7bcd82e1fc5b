"""Every environment variable the project reads: its name, default and meaning, in one place.

The code reads a variable's value through its entry here (``value``), so the default it
uses is the one the documentation's reference page, written from this registry, states.
A test keeps the registry whole: every ``N8N_DEEPEVAL_*``-like name in the package, the
scripts and the tests is registered, and every registered one is read somewhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

Group = Literal[
    "where things live", "n8n", "judge", "worker pool", "scaling out", "traces", "CI", "test suite"
]
GROUPS: tuple[Group, ...] = (
    "where things live",
    "n8n",
    "judge",
    "worker pool",
    "scaling out",
    "traces",
    "CI",
    "test suite",
)


class Variable(BaseModel):
    """One environment variable: what it sets, and what holds when it is unset."""

    model_config = ConfigDict(frozen=True)

    name: str
    group: Group
    meaning: str
    default: str | None = None
    """The value the code reads when the variable is unset or empty (None: nothing)."""
    default_described: str | None = None
    """A default that is not one value: a path under another folder, the CPU count."""

    def value(self, environ: Mapping[str, str] = os.environ) -> str | None:
        """The variable's value, or its default when it is unset or blank."""
        raw = environ.get(self.name)
        return raw if raw and raw.strip() else self.default

    @property
    def shown_default(self) -> str:
        """The default as the reference page states it."""
        if self.default_described is not None:
            return self.default_described
        return "unset" if self.default is None else f"`{self.default}`"


VARIABLES: tuple[Variable, ...] = (
    Variable(
        name="N8N_DEEPEVAL_HOME",
        group="where things live",
        default=".n8n-deepeval",
        default_described="`./.n8n-deepeval` (in the working directory)",
        meaning="The working folder: the Dagster instance, the results, the judge's state, "
        "the score journal, the reports and the trials.",
    ),
    Variable(
        name="DAGSTER_HOME",
        group="where things live",
        default_described="`$N8N_DEEPEVAL_HOME/dagster`",
        meaning="The local Dagster instance the CLI, the UI and the daemon share (telemetry off).",
    ),
    Variable(
        name="N8N_DEEPEVAL_DUCKDB",
        group="where things live",
        default_described="`$N8N_DEEPEVAL_HOME/results.duckdb`",
        meaning="The results, one schema per benchmark (the `local` profile).",
    ),
    Variable(
        name="N8N_DEEPEVAL_BENCHMARKS",
        group="where things live",
        default_described="`./benchmarks` and the bundled `examples/`",
        meaning="Benchmark files, or folders searched for them (`benchmark.yaml`, "
        "`*.benchmark.yaml`), `:`-separated; `n8n-deepeval ui FILE…` sets it to its files.",
    ),
    Variable(
        name="N8N_DEEPEVAL_REPORTS_PORT",
        group="where things live",
        default="3001",  # beside the UI's 3000, which `ui` then does not take
        meaning="The port where `n8n-deepeval ui` serves the results workspace, and the "
        "reports folder under its `/reports/`: the address the `workspace_url` and "
        "`report_url` links in the Dagster UI and in the reports name (written when a report "
        "is made).",
    ),
    Variable(
        name="N8N_DEEPEVAL_WORKSPACE_URL",
        group="where things live",
        default_described="`http://127.0.0.1:$N8N_DEEPEVAL_REPORTS_PORT`",
        meaning="The address the results workspace is reached at, when `n8n-deepeval ui "
        "--host` serves it on a team's server (`http://evals.example.internal:3001`): the "
        "links written into reports and the Dagster UI start with it.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_STATE",
        group="where things live",
        default_described="`$N8N_DEEPEVAL_HOME/judge`",
        meaning="The judge's cache (`judge.sqlite`: every prompt and answer), rate window, "
        "circuit breaker and in-flight slots, shared by every process of the machine.",
    ),
    Variable(
        name="N8N_API_URL",
        group="n8n",
        meaning="The n8n instance benchmarks read workflows, Data Tables and executions from "
        "(with `N8N_API_KEY`; unset: only files are read).",
    ),
    Variable(
        name="N8N_API_KEY",
        group="n8n",
        meaning="The key of n8n's public API (*Settings → n8n API*). Read once where the "
        "resources are built; never logged or stored.",
    ),
    Variable(
        name="N8N_DEEPEVAL_N8N_TIMEOUT_S",
        group="n8n",
        default="30",
        meaning="Timeout of one n8n API request, in seconds.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_PROVIDER",
        group="judge",
        default="dry-run",
        meaning="The default judge's provider: `openai`, `azure-openai`, `anthropic`, "
        "`gemini`, `ollama`, `openrouter`, `deepseek`, `bedrock` (asked as DeepEval's class "
        "for each asks; `gemini`, `ollama` and `bedrock` need their extra), "
        "`openai-compatible` (any server with OpenAI's API), `local` (an in-process model) "
        "or `dry-run` (placeholder answers, no model).",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_MODEL",
        group="judge",
        default="dry-run",
        meaning="The default judge's model (for Azure OpenAI, the deployment name).",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_API_KEY",
        group="judge",
        meaning="The default judge's key; it reaches the workers inside the judge spec, "
        "never in their environment.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_BASE_URL",
        group="judge",
        meaning="The default judge's endpoint: an Azure resource, or an OpenAI-compatible "
        "server (vLLM, Ollama, llama.cpp server, LM Studio).",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_API_VERSION",
        group="judge",
        meaning="The Azure OpenAI API version.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_DEPLOYMENT",
        group="judge",
        meaning="Azure OpenAI: the deployment that runs the model (unset: the model's name).",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_REGION",
        group="judge",
        meaning="Amazon Bedrock: the AWS region.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_AWS_ACCESS_KEY_ID",
        group="judge",
        meaning="Amazon Bedrock: the access key id (with `N8N_DEEPEVAL_JUDGE_API_KEY` as the "
        "secret key; unset: AWS's own chain, a profile or an instance role).",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_AWS_SESSION_TOKEN",
        group="judge",
        meaning="Amazon Bedrock: a session token, with temporary keys.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_TIMEOUT_S",
        group="judge",
        default="60",
        meaning="Timeout of one judge request, in seconds.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_STRUCTURED_OUTPUTS",
        group="judge",
        default="strict",
        meaning="How an `openai-compatible` judge is asked for JSON: `strict`, `schema`, "
        "`json` or `none`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_LOGPROBS",
        group="judge",
        meaning="`0`: never ask an `openai-compatible` judge for log-probabilities "
        "(G-Eval then takes DeepEval's schema fallback); unset: ask.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_MAX_IN_FLIGHT",
        group="judge",
        default="256",
        meaning="Ceiling of one judge's calls in flight on the machine; the pacing fits the "
        "concurrency below it.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_RPM",
        group="judge",
        meaning="Requests a minute the judge allows, when its provider's headers do not say.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_TPM",
        group="judge",
        meaning="Tokens a minute the judge allows, when its provider's headers do not say.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_MAX_ATTEMPTS",
        group="judge",
        default="6",
        meaning="Attempts of one judge call (429, 5xx, timeouts and dropped connections "
        "are retried, honouring `Retry-After`).",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_BREAKER_THRESHOLD",
        group="judge",
        default="10",
        meaning="Failed calls in a row that open a judge's circuit: its remaining "
        "evaluations fail fast with `judge_unavailable`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_JUDGE_CACHE",
        group="judge",
        default="1",
        meaning="`0` turns the judge cache off (as `run --no-cache` does for one run).",
    ),
    Variable(
        name="N8N_DEEPEVAL_PRICES",
        group="judge",
        meaning="A YAML file of prices in USD per million tokens that adds or overrides "
        "models: `my-model: {input: 0.2, output: 0.6}`.",
    ),
    Variable(
        name="HTTPS_PROXY",
        group="judge",
        meaning="The proxy for a judge's `https://` endpoint (aiohttp's lookup, done once "
        "per worker).",
    ),
    Variable(
        name="HTTP_PROXY",
        group="judge",
        meaning="The proxy for a judge's `http://` endpoint.",
    ),
    Variable(
        name="NO_PROXY",
        group="judge",
        meaning="Hosts a judge is called on directly, past the proxy.",
    ),
    Variable(
        name="DEEPEVAL_POOL_SIZE",
        group="worker pool",
        default="4",
        meaning="Worker processes of a scoring step's pool (clamped to 1..64).",
    ),
    Variable(
        name="N8N_DEEPEVAL_EVALUATIONS_PER_WORKER",
        group="worker pool",
        default="64",
        meaning="Most evaluations in flight on one worker (how many below it is fitted as "
        "the pool runs); `1` runs one evaluation per process.",
    ),
    Variable(
        name="N8N_DEEPEVAL_EVAL_TIMEOUT_S",
        group="worker pool",
        default="300",
        meaning="Per-evaluation timeout, in seconds (`timeoutS` on a metric overrides it); "
        "each judge call of a simulated user or of the synthesizer has 90% of it.",
    ),
    Variable(
        name="N8N_DEEPEVAL_WORKER_MAX_EVALUATIONS",
        group="worker pool",
        default="500",
        meaning="Evaluations after which a worker is replaced by a fresh one.",
    ),
    Variable(
        name="N8N_DEEPEVAL_WORKER_MAX_RSS_MB",
        group="worker pool",
        default="600",
        meaning="Resident memory, in MB, above which a worker is replaced.",
    ),
    Variable(
        name="N8N_DEEPEVAL_CHUNK_SIZE",
        group="scaling out",
        default="1000",
        meaning="Most evaluations per scoring step (chunk) of `metric_scores`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_LOCAL_EXECUTOR",
        group="scaling out",
        default="in_process",
        meaning="How the `local` profile runs steps: `in_process` (one after the other in "
        "the run's process) or `multiprocess` (forked from a preloaded server, scoring "
        "chunks in parallel).",
    ),
    Variable(
        name="N8N_DEEPEVAL_MAX_STEPS",
        group="scaling out",
        default_described="the number of CPUs",
        meaning="With `multiprocess`: steps (and so scoring chunks) run at once.",
    ),
    Variable(
        name="N8N_DEEPEVAL_PROFILE",
        group="scaling out",
        default="local",
        meaning="Where the instance and the results live and what runs the steps: "
        "`local`, `distributed` or `kubernetes`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_POSTGRES_URL",
        group="scaling out",
        meaning="`distributed` and `kubernetes`: the Dagster instance and the results, "
        "`postgresql+psycopg2://user:password@host:port/database`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_REDIS_URL",
        group="scaling out",
        meaning="`distributed`: the Celery broker and result backend, `redis://host:port/0`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_OTLP_ENDPOINT",
        group="traces",
        meaning="Send every benchmark run (and every online evaluation) as an OpenTelemetry "
        "trace to this OTLP/HTTP endpoint, e.g. `http://127.0.0.1:6006` (`/v1/traces` is "
        "added); needs the `otel` extra. Unset, and no `OTEL_EXPORTER_OTLP_*ENDPOINT` "
        "either: no export, and nothing is kept for one.",
    ),
    Variable(
        name="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        group="traces",
        meaning="OpenTelemetry's own: the full URL traces are sent to (used when "
        "`N8N_DEEPEVAL_OTLP_ENDPOINT` is unset).",
    ),
    Variable(
        name="OTEL_EXPORTER_OTLP_ENDPOINT",
        group="traces",
        meaning="OpenTelemetry's own: the base URL of every signal (`/v1/traces` is added).",
    ),
    Variable(
        name="OTEL_EXPORTER_OTLP_HEADERS",
        group="traces",
        meaning="OpenTelemetry's own: headers sent with every export, `key=value,…` (an "
        "observability platform's API key); read by the OTLP exporter, never logged.",
    ),
    Variable(
        name="OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        group="traces",
        meaning="OpenTelemetry's own: headers of trace exports only.",
    ),
    Variable(
        name="OTEL_SERVICE_NAME",
        group="traces",
        default="n8n-deepeval",
        meaning="The `service.name` of the exported traces.",
    ),
    Variable(
        name="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        group="traces",
        meaning="`true`: the spans carry what was said (the run's input and output, tool "
        "arguments and results), credentials redacted, as the GenAI conventions' opt-in "
        "content; unset: names, ids, timings, tokens, costs and scores only.",
    ),
    Variable(
        name="GITHUB_TOKEN",
        group="CI",
        meaning="`ci comment github`: the token that writes the pull request's comment (the "
        "Action passes its `github-token` input); never printed.",
    ),
    Variable(
        name="GITHUB_API_URL",
        group="CI",
        default="https://api.github.com",
        meaning="Set by GitHub Actions: the REST API `ci comment github` calls.",
    ),
    Variable(
        name="GITHUB_REPOSITORY",
        group="CI",
        meaning="Set by GitHub Actions: `owner/name` of the pull request's repository.",
    ),
    Variable(
        name="GITHUB_EVENT_PATH",
        group="CI",
        meaning="Set by GitHub Actions: the event's JSON, whose pull request is commented on.",
    ),
    Variable(
        name="GITHUB_EVENT_NAME",
        group="CI",
        meaning="Set by GitHub Actions: named when the event is not a pull request's.",
    ),
    Variable(
        name="GITLAB_TOKEN",
        group="CI",
        meaning="`ci comment gitlab`: a token with the `api` scope that writes the merge "
        "request's note (a masked CI/CD variable); never printed.",
    ),
    Variable(
        name="CI_API_V4_URL",
        group="CI",
        meaning="Set by GitLab CI: the REST API `ci comment gitlab` calls.",
    ),
    Variable(
        name="CI_PROJECT_ID",
        group="CI",
        meaning="Set by GitLab CI: the merge request's project.",
    ),
    Variable(
        name="CI_MERGE_REQUEST_IID",
        group="CI",
        meaning="Set by GitLab CI in a merge request pipeline: the merge request commented on.",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_PACKAGE",
        group="CI",
        meaning="The GitLab template: the pip requirement of the pinned package, e.g. "
        "`n8n-deepeval-pipeline[otel] @ git+<repository URL>@<ref>` (required).",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_CONSTRAINTS",
        group="CI",
        meaning="The GitLab template: a constraints file or URL pinning the package's "
        "dependencies (the repository's `constraints.txt` at the same ref).",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_BENCHMARKS",
        group="CI",
        meaning="The GitLab template: the benchmark files to run, separated by spaces (required).",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_RUN_ARGS",
        group="CI",
        meaning="The GitLab template: more options for `n8n-deepeval run`.",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_COMMENT",
        group="CI",
        default="true",
        meaning="The GitLab template: `false` writes no merge-request note.",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_ALLOW_SIDE_EFFECTS",
        group="CI",
        default="false",
        meaning="The GitLab template: `true` runs benchmarks whose workflow calls could act "
        "on real services.",
    ),
    Variable(
        name="N8N_DEEPEVAL_CI_REPORTS",
        group="CI",
        default="n8n-deepeval-reports",
        meaning="The GitLab template: where the reports are written (the job's artifacts).",
    ),
    Variable(
        name="N8N_DEEPEVAL_VENV",
        group="test suite",
        default_described="`./.venv`",
        meaning="Where `scripts/bootstrap.sh` creates the virtual environment.",
    ),
    Variable(
        name="N8N_DEEPEVAL_LOCAL_JUDGE",
        group="test suite",
        meaning="`1`: `scripts/bootstrap.sh` installs the `local` extra (llama-cpp-python "
        "builds, ~4 min) and its test runs.",
    ),
    Variable(
        name="N8N_DEEPEVAL_REQUIRE_LOCAL_JUDGE",
        group="test suite",
        meaning="`1`: the local judge's test fails instead of skipping when it is missing.",
    ),
    Variable(
        name="N8N_DEEPEVAL_EMBEDDER_MODEL",
        group="judge",
        meaning="The embedding model of `dataset synthesize --from-docs` (or `--embedder`).",
    ),
    Variable(
        name="N8N_DEEPEVAL_EMBEDDER_PROVIDER",
        group="judge",
        meaning="Who serves the embeddings: `openai`, `azure-openai` or `openai-compatible` "
        "(unset: the judge's provider, with the judge's endpoint and key).",
    ),
    Variable(
        name="N8N_DEEPEVAL_EMBEDDER_BASE_URL",
        group="judge",
        meaning="The embedder's base URL (unset: the judge's, when it is the same provider).",
    ),
    Variable(
        name="N8N_DEEPEVAL_EMBEDDER_API_KEY",
        group="judge",
        meaning="The embedder's key (unset: the judge's, when it is the same provider).",
    ),
    Variable(
        name="N8N_DEEPEVAL_EMBEDDER_API_VERSION",
        group="judge",
        meaning="The Azure OpenAI API version of the embedder.",
    ),
    Variable(
        name="N8N_DEEPEVAL_DOCUMENTS",
        group="test suite",
        meaning="`1`: `scripts/bootstrap.sh` installs the `documents` extra (ChromaDB, "
        "LangChain) that `dataset synthesize --from-docs` needs.",
    ),
    Variable(
        name="N8N_DEEPEVAL_REQUIRE_DOCUMENTS",
        group="test suite",
        meaning="`1`: the test of `dataset synthesize --from-docs` fails instead of skipping "
        "without the `documents` extra.",
    ),
    Variable(
        name="N8N_DEEPEVAL_REQUIRE_CHROMIUM",
        group="test suite",
        meaning="`1`: the tests that render pages in headless Chromium fail instead of "
        "skipping without it (`scripts/install_chromium.sh`).",
    ),
    Variable(
        name="N8N_DEEPEVAL_LIVE",
        group="test suite",
        meaning="`1`: install n8n 2.41.1 and run the live tests against it on loopback.",
    ),
    Variable(
        name="N8N_DEEPEVAL_N8N_CACHE",
        group="test suite",
        default_described="`~/.cache/n8n-deepeval`",
        meaning="Where `scripts/install_n8n.sh` installs n8n and Node 24 (3.2 GB).",
    ),
    Variable(
        name="N8N_DEEPEVAL_PHOENIX_CACHE",
        group="test suite",
        default_described="`~/.cache/n8n-deepeval`",
        meaning="Where `scripts/install_phoenix.sh` installs Arize Phoenix, the trace receiver "
        "of the live trace test, in a virtual environment of its own (~860 MB).",
    ),
    Variable(
        name="N8N_DEEPEVAL_DISTRIBUTED",
        group="test suite",
        meaning="`1`: `scripts/bootstrap.sh` installs the `distributed` extra and the "
        "distributed profile's live test runs (PostgreSQL, Redis, Celery on loopback).",
    ),
)


def _index(variables: tuple[Variable, ...]) -> dict[str, Variable]:
    registry: dict[str, Variable] = {}
    for variable in variables:
        if variable.name in registry:
            raise ValueError(f"environment variable registered twice: {variable.name}")
        registry[variable.name] = variable
    return registry


REGISTRY: dict[str, Variable] = _index(VARIABLES)


def value(name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The value of the registered variable ``name``, or its default (KeyError: unknown)."""
    return REGISTRY[name].value(environ)


def setting(name: str, environ: Mapping[str, str] = os.environ) -> str:
    """The value of the registered variable ``name``, which has a default."""
    found = REGISTRY[name].value(environ)
    if found is None:
        raise KeyError(f"{name} has no default: read it with value()")
    return found
