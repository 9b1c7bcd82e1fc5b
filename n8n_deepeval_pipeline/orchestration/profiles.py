"""Deployment profiles: what the Dagster instance and the jobs' executor are made of.

``local`` (the default): a SQLite-backed instance under ``$DAGSTER_HOME`` and Dagster's
default executor; results in DuckDB. ``distributed``: the instance's run, event-log and
schedule storage in PostgreSQL (``dagster-postgres``), results in PostgreSQL, and every
step sent to Celery workers through a Redis broker (``dagster-celery``). The files below
name environment variables, never their values: a URL with a password is read where the
process runs, and never written to ``dagster.yaml`` or to a run's config.
"""

from __future__ import annotations

import dagster as dg

from n8n_deepeval_pipeline.settings import POSTGRES_URL_ENV, PROFILES, REDIS_URL_ENV

_TELEMETRY_OFF = "telemetry:\n  enabled: false\n"
# The UI's "join the Dagster community" pop-up, which covers its first page.
_NUX_OFF = "nux:\n  enabled: false\n"
_POSTGRES_STORAGE = f"""storage:
  postgres:
    postgres_url:
      env: {POSTGRES_URL_ENV}
"""
# Dagster's SQLite files under $DAGSTER_HOME, their connections kept open (sqlite_storage.py).
_POOLED_SQLITE_STORAGE = """storage:
  custom:
    module: n8n_deepeval_pipeline.orchestration.sqlite_storage
    class: PooledSqliteStorage
    config:
      base_dir:
        env: DAGSTER_HOME
"""
INSTANCE_YAML = {
    "local": _TELEMETRY_OFF + _NUX_OFF + _POOLED_SQLITE_STORAGE,
    "distributed": _TELEMETRY_OFF + _NUX_OFF + _POSTGRES_STORAGE,
    # The Helm chart writes the instance of the kubernetes profile (deploy/helm/values.yaml).
    "kubernetes": _TELEMETRY_OFF + _NUX_OFF + _POSTGRES_STORAGE,
}
# What earlier versions wrote for a profile: still theirs to rewrite.
_EARLIER_INSTANCE_YAML = (
    _TELEMETRY_OFF,
    _TELEMETRY_OFF + _POOLED_SQLITE_STORAGE,
    _TELEMETRY_OFF + _POSTGRES_STORAGE,
)
_EXTRA_HINT = "pip install 'n8n-deepeval-pipeline[distributed]'"
STEP_REQUEUE_S = 3600
"""How long a step taken by a worker lost whole waits in Redis before another worker takes it.

Redis gives an unacknowledged step to another worker after this long even when its worker
is still at it, so it must exceed the longest step (a chunk of 1,000 evaluations).
"""
CELERY_SETTINGS = {
    # A step is acknowledged when it ends, not when a worker takes it: a worker lost whole
    # (its main process too) leaves it unacknowledged, and another worker takes it again.
    "task_acks_late": True,
    # A step whose process alone died still fails (WorkerLostError), never loops re-queued.
    "task_reject_on_worker_lost": False,
    "worker_prefetch_multiplier": 1,  # a worker holds only the step it runs
    "broker_transport_options": {"visibility_timeout": STEP_REQUEUE_S},
}
"""The Celery settings of the executor, and of every worker (``deploy/celery/worker.yaml``)."""


def instance_yaml(profile: str) -> str:
    """The ``dagster.yaml`` of a profile's instance (telemetry and the UI's pop-up off)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    return INSTANCE_YAML[profile]


def is_generated_instance_yaml(text: str) -> bool:
    """Whether a ``dagster.yaml`` is one this project wrote (and may rewrite)."""
    return text in INSTANCE_YAML.values() or text in _EARLIER_INSTANCE_YAML


def k8s_job_executor() -> dg.ExecutorDefinition:
    """Dagster's Kubernetes executor: each step in its own job (the ``kubernetes`` extra)."""
    try:
        from dagster_k8s import k8s_job_executor as executor
    except ImportError as error:  # pragma: no cover - not installed here
        raise ImportError(
            "the kubernetes profile runs steps as Kubernetes jobs: "
            "pip install 'n8n-deepeval-pipeline[kubernetes]'"
        ) from error
    return executor  # type: ignore[no-any-return]


def celery_executor() -> dg.ExecutorDefinition:
    """Dagster's Celery executor, its broker and result backend at ``$N8N_DEEPEVAL_REDIS_URL``."""
    try:
        from dagster_celery import celery_executor as executor
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(f"the distributed profile runs steps on Celery: {_EXTRA_HINT}") from error
    configured: dg.ExecutorDefinition = executor.configured(
        {
            "broker": {"env": REDIS_URL_ENV},
            "backend": {"env": REDIS_URL_ENV},
            "config_source": CELERY_SETTINGS,
        },
        name="celery_redis",
    )
    return configured
