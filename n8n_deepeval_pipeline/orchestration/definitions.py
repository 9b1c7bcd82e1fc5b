"""The code location Dagster loads (``-m n8n_deepeval_pipeline.orchestration.definitions``).

One asset group, job, schedule and sensor per benchmark file named, or found in the
folders named, by ``$N8N_DEEPEVAL_BENCHMARKS`` (``n8n-deepeval ui FILE…`` sets it to its
files; default ``./benchmarks`` and the bundled examples).
This is the one place where environment variables (and secrets) meet resources.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from n8n_deepeval_pipeline import environment_variables, settings
from n8n_deepeval_pipeline.benchmark.config import Benchmark, load_benchmark
from n8n_deepeval_pipeline.n8n_api.client import API_KEY_ENV, API_URL_ENV, timeout_from
from n8n_deepeval_pipeline.orchestration.assets import build_benchmark_assets
from n8n_deepeval_pipeline.orchestration.automation import (
    build_job,
    build_rescore_job,
    build_schedule,
    build_sensor,
)
from n8n_deepeval_pipeline.orchestration.chunked_scoring import STEP_IO_MANAGER
from n8n_deepeval_pipeline.orchestration.online import (
    build_online_assets,
    build_online_job,
    build_online_sensor,
)
from n8n_deepeval_pipeline.orchestration.optimize_job import (
    build_optimize_job,
    optimizable,
    search_asset,
)
from n8n_deepeval_pipeline.orchestration.profiles import celery_executor, k8s_job_executor
from n8n_deepeval_pipeline.orchestration.resources.human_labels import HumanLabelsResource
from n8n_deepeval_pipeline.orchestration.resources.judge import JudgeResource
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
    PostgresResultsIOManager,
    check_storage_url,
)
from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import ResultsIOManager
from n8n_deepeval_pipeline.orchestration.resources.score_journal import ScoreJournalResource
from n8n_deepeval_pipeline.orchestration.resources.step_io_manager import PostgresStepIOManager
from n8n_deepeval_pipeline.orchestration.resources.worker_pool import WorkerPoolResource
from n8n_deepeval_pipeline.tables.row_selection import RowSelection

JUDGE_API_KEY_ENV = "N8N_DEEPEVAL_JUDGE_API_KEY"
# What the multiprocess local executor's forkserver imports once, so steps start at once.
PRELOADED_MODULES = (
    "dagster",
    "pandas",
    "duckdb",
    "n8n_deepeval_pipeline.orchestration.definitions",
)


def _is_set(name: str) -> bool:
    """Whether the variable is set to something: blank is unset, as the registry reads it."""
    return bool(os.environ.get(name, "").strip())


def _env_or_default(name: str) -> str | dg.EnvVar:
    """An EnvVar when the variable is set (resolved at launch), else its registered default."""
    return dg.EnvVar(name) if _is_set(name) else environment_variables.setting(name)


def _env_int(name: str) -> int:
    return int(environment_variables.setting(name))


def _env_optional_int(name: str) -> int | None:
    found = environment_variables.value(name)
    return int(found) if found else None


def _env_float(name: str) -> float:
    return float(environment_variables.setting(name))


def _env_text(name: str) -> str | None:
    return environment_variables.value(name)


def _env_flag(name: str) -> bool | None:
    """1/true or 0/false; unset: None (the default decides)."""
    found = (environment_variables.value(name) or "").strip().lower()
    return None if not found else found in ("1", "true", "yes")


def n8n_resource() -> N8nResource:
    """n8n's public API, from N8N_API_URL and N8N_API_KEY (unset: only files are read)."""
    return N8nResource(
        base_url=dg.EnvVar(API_URL_ENV) if API_URL_ENV in os.environ else None,
        api_key=dg.EnvVar(API_KEY_ENV) if API_KEY_ENV in os.environ else None,
        timeout_s=timeout_from(os.environ),
    )


def _env_secret(name: str) -> dg.EnvVar | None:
    return dg.EnvVar(name) if _is_set(name) else None


def build_resources(judge_cache: bool = True) -> dict[str, object]:
    """The worker pool, the judge, n8n, the results IO manager and the labels' store."""
    return {
        "worker_pool": WorkerPoolResource(
            size=_env_int("DEEPEVAL_POOL_SIZE"),
            evaluations_per_worker=_env_int("N8N_DEEPEVAL_EVALUATIONS_PER_WORKER"),
            timeout_s=_env_float("N8N_DEEPEVAL_EVAL_TIMEOUT_S"),
            max_evaluations=_env_int("N8N_DEEPEVAL_WORKER_MAX_EVALUATIONS"),
            max_rss_mb=_env_float("N8N_DEEPEVAL_WORKER_MAX_RSS_MB"),
        ),
        "judge": JudgeResource(
            provider=_env_or_default("N8N_DEEPEVAL_JUDGE_PROVIDER"),
            model=_env_or_default("N8N_DEEPEVAL_JUDGE_MODEL"),
            base_url=_env_text("N8N_DEEPEVAL_JUDGE_BASE_URL"),
            api_key=_env_secret(JUDGE_API_KEY_ENV),
            api_version=_env_text("N8N_DEEPEVAL_JUDGE_API_VERSION"),
            deployment=_env_text("N8N_DEEPEVAL_JUDGE_DEPLOYMENT"),
            region=_env_text("N8N_DEEPEVAL_JUDGE_REGION"),
            aws_access_key_id=_env_secret("N8N_DEEPEVAL_JUDGE_AWS_ACCESS_KEY_ID"),
            aws_session_token=_env_secret("N8N_DEEPEVAL_JUDGE_AWS_SESSION_TOKEN"),
            timeout_s=_env_float("N8N_DEEPEVAL_JUDGE_TIMEOUT_S"),
            structured_outputs=_env_or_default("N8N_DEEPEVAL_JUDGE_STRUCTURED_OUTPUTS"),
            logprobs=_env_flag("N8N_DEEPEVAL_JUDGE_LOGPROBS"),
            max_in_flight=_env_int("N8N_DEEPEVAL_JUDGE_MAX_IN_FLIGHT"),
            requests_per_minute=_env_optional_int("N8N_DEEPEVAL_JUDGE_RPM"),
            tokens_per_minute=_env_optional_int("N8N_DEEPEVAL_JUDGE_TPM"),
            max_attempts=_env_int("N8N_DEEPEVAL_JUDGE_MAX_ATTEMPTS"),
            breaker_threshold=_env_int("N8N_DEEPEVAL_JUDGE_BREAKER_THRESHOLD"),
            cache=judge_cache and environment_variables.setting("N8N_DEEPEVAL_JUDGE_CACHE") != "0",
            state_dir=str(settings.judge_state_dir()),
            evaluation_timeout_s=_env_float("N8N_DEEPEVAL_EVAL_TIMEOUT_S"),
            prices_file=_env_text("N8N_DEEPEVAL_PRICES"),
        ),
        "score_journal": score_journal(),
        "n8n": n8n_resource(),
        "io_manager": results_io_manager(),
        "human_labels": human_labels(),
        STEP_IO_MANAGER: step_io_manager(),
    }


def _required_env(name: str) -> dg.EnvVar:
    if not os.environ.get(name):
        raise ValueError(f"{settings.PROFILE_ENV}={settings.profile()} needs {name}")
    return dg.EnvVar(name)


def results_io_manager() -> dg.ConfigurableIOManagerFactory:
    """DuckDB on this machine (``local``), or PostgreSQL (``distributed``, ``kubernetes``)."""
    if settings.profile() != "local":
        url = _required_env(settings.POSTGRES_URL_ENV)
        check_storage_url(os.environ[settings.POSTGRES_URL_ENV])  # the instance's URL too
        return PostgresResultsIOManager(url=url)
    database = settings.database_path()
    settings.private_dir(database.parent)  # DuckDB's WAL lives beside the file while writing
    return ResultsIOManager(database=str(database))


def human_labels() -> HumanLabelsResource:
    """People's labels, beside the results: the DuckDB file, or the results' PostgreSQL."""
    if settings.profile() != "local":
        return HumanLabelsResource(url=_required_env(settings.POSTGRES_URL_ENV))
    return HumanLabelsResource(database=str(settings.database_path()))


def score_journal() -> ScoreJournalResource:
    """Finished evaluations journaled: files here, PostgreSQL for a fleet (every machine reads)."""
    directory = str(settings.home() / "journal")
    if settings.profile() != "local":
        return ScoreJournalResource(
            directory=directory, url=_required_env(settings.POSTGRES_URL_ENV)
        )
    return ScoreJournalResource(directory=directory)


def step_io_manager() -> dg.ConfigurableIOManager | dg.ConfigurableIOManagerFactory:
    """In-between step outputs (scoring chunks): files here, PostgreSQL for a fleet."""
    if settings.profile() != "local":
        return PostgresStepIOManager(url=_required_env(settings.POSTGRES_URL_ENV))
    return dg.FilesystemIOManager(base_dir=str(settings.home() / "steps"))


def local_executor() -> dg.ExecutorDefinition:
    """The ``local`` profile's executor: in process, or forked steps for parallel chunks.

    Dagster's default starts every step as a fresh Python that imports Dagster, pandas,
    DuckDB and the project again (5–7 s a step on 2 cores). The steps of a run are a chain
    but for the scoring chunks, so by default they run one after the other in the run's
    own process (a UI run then takes about as long as ``n8n-deepeval run``); with
    ``$N8N_DEEPEVAL_LOCAL_EXECUTOR=multiprocess`` they are forked from a server that has
    imported the project once (well under a second a step) and chunks run in parallel, up
    to ``$N8N_DEEPEVAL_MAX_STEPS`` at once (default the number of CPUs).
    """
    chosen = settings.local_executor()
    if chosen == "in_process":
        return dg.in_process_executor
    if chosen != "multiprocess":
        raise ValueError(
            f"{settings.LOCAL_EXECUTOR_ENV}={chosen!r}: choose in_process or multiprocess"
        )
    config: dict[str, object] = {
        "start_method": {"forkserver": {"preload_modules": list(PRELOADED_MODULES)}}
    }
    if _env_optional_int("N8N_DEEPEVAL_MAX_STEPS"):
        config["max_concurrent"] = _env_optional_int("N8N_DEEPEVAL_MAX_STEPS")
    configured: dg.ExecutorDefinition = dg.multiprocess_executor.configured(
        config, name="local_forkserver"
    )
    return configured


def build_executor() -> dg.ExecutorDefinition | None:
    """The jobs' executor for the profile (``local``: ``local_executor``).

    ``distributed``: Celery on a Redis broker; ``kubernetes``: a Kubernetes job per step.
    """
    if settings.profile() == "distributed":
        _required_env(settings.REDIS_URL_ENV)
        return celery_executor()
    if settings.profile() == "kubernetes":
        return k8s_job_executor()
    return local_executor()


def build_definitions(
    benchmark_files: list[Path], judge_cache: bool = True, selection: RowSelection | None = None
) -> dg.Definitions:
    """Definitions for the given benchmark files (a trial of a few rows with ``selection``).

    Loading reads files only; it never calls n8n or a judge.
    """
    assets: list[dg.AssetsDefinition | dg.AssetSpec] = []
    jobs: list[dg.JobDefinition | dg.UnresolvedAssetJobDefinition] = []
    schedules, sensors = [], []
    for path, benchmark in loaded_benchmarks(benchmark_files):
        if selection is not None:
            benchmark = benchmark.for_trial()
        group, partitions = build_benchmark_assets(benchmark, path, selection)
        job = build_job(benchmark, partitions)
        assets += group
        jobs += [job, build_rescore_job(benchmark, partitions)]
        schedules.append(build_schedule(benchmark, job, partitions.name or ""))
        sensors.append(build_sensor(benchmark, job, partitions.name or ""))
        if optimizable(benchmark) and selection is None:
            assets.append(search_asset(benchmark))
            jobs.append(build_optimize_job(benchmark, path))
        if benchmark.online is not None and selection is None:
            online_job = build_online_job(benchmark)
            assets += build_online_assets(benchmark)
            jobs.append(online_job)
            sensors.append(build_online_sensor(benchmark, online_job))
    return dg.Definitions(
        assets=assets,
        jobs=jobs,
        schedules=schedules,
        sensors=sensors,
        resources=build_resources(judge_cache),
        executor=build_executor(),
    )


def loaded_benchmarks(benchmark_files: list[Path]) -> list[tuple[Path, Benchmark]]:
    """Each file with its benchmark, as one code location can hold them.

    A file that does not validate is a ``BenchmarkConfigError``; a name two files share
    (their assets, jobs and schema would be the same) or the DuckDB file's is a
    ``ValueError`` naming both.
    """
    names: dict[str, Path] = {}
    loaded = []
    for path in benchmark_files:
        benchmark = load_benchmark(path)
        _check_schema_name(benchmark)
        if benchmark.name in names:
            used_by = names[benchmark.name]
            raise ValueError(
                f"{path}: benchmark name {benchmark.name!r} is already used by {used_by}"
            )
        names[benchmark.name] = path
        loaded.append((path, benchmark))
    return loaded


def _check_schema_name(benchmark: Benchmark) -> None:
    # DuckDB resolves a schema named like the database file's stem ambiguously.
    if settings.profile() == "local" and benchmark.name == settings.database_path().stem:
        raise ValueError(
            f"benchmark name {benchmark.name!r} equals the DuckDB file's name; rename one of them"
        )


def load_definitions() -> dg.Definitions:
    """Definitions for every benchmark file named, or found in the folders named."""
    return build_definitions(settings.discover_benchmark_files(settings.benchmark_paths()))


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` loads: built when the code location loads, not at import."""
    return load_definitions()
