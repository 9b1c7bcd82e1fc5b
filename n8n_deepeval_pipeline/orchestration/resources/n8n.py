"""The n8n resource: the workflow, Data Tables and webhooks of one n8n instance.

The API's base URL and key come from the environment through ``EnvVar`` (see
``orchestration.definitions``); a webhook URL named by ``urlEnv`` is read here, when a
run calls it. None of them is logged or stored: tables and metadata name a webhook by
``webhook_identity`` and a workflow by ``n8n:workflow:<id>``.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg
from pydantic import Field

from n8n_deepeval_pipeline.benchmark.config import Benchmark, DatasetConfig
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef, WebhookTarget
from n8n_deepeval_pipeline.n8n_api.client import API_KEY_ENV, API_URL_ENV, N8nClient
from n8n_deepeval_pipeline.n8n_api.sources import fetch_records, fetch_workflow
from n8n_deepeval_pipeline.n8n_api.webhook import WebhookCaller
from n8n_deepeval_pipeline.workflow.file import read_workflow


class N8nNotConfiguredError(RuntimeError):
    """The benchmark reads from n8n but no API URL or key is set."""


class N8nResource(dg.ConfigurableResource):
    """One n8n instance (its public API), and the webhooks a benchmark calls."""

    base_url: str | None = Field(default=None, description="e.g. http://127.0.0.1:5678")
    api_key: str | None = Field(default=None, description="Set from an environment variable.")
    timeout_s: float = 30.0

    @property
    def configured(self) -> bool:
        """Whether an API URL and key are set."""
        return bool(self.base_url and self.api_key)

    def client(self) -> N8nClient:
        """A client of the public API; refuses clearly when it is not configured."""
        if not self.base_url or not self.api_key:  # both, for mypy's sake
            raise N8nNotConfiguredError(
                f"this benchmark reads from n8n: set {API_URL_ENV} (e.g. http://127.0.0.1:5678) "
                f"and {API_KEY_ENV} (Settings → n8n API in n8n)"
            )
        return N8nClient(self.base_url, self.api_key, self.timeout_s)

    def workflow(self, benchmark: Benchmark) -> tuple[dict[str, Any], str]:
        """The workflow as it is now, and where it came from (a file or n8n)."""
        if isinstance(benchmark.workflow, N8nWorkflowRef):
            with self.client() as client:
                workflow = fetch_workflow(client, benchmark.workflow)
            return workflow, f"n8n:workflow:{benchmark.workflow.id}"
        return read_workflow(benchmark.workflow), str(benchmark.workflow)

    def dataset_records(self, config: DatasetConfig) -> list[dict[str, Any]] | None:
        """The rows of the dataset's Data Table (filtered by n8n), or None for a file."""
        if config.data_table is None:
            return None
        with self.client() as client:
            return fetch_records(client, config)

    def webhook_caller(self, target: WebhookTarget) -> WebhookCaller:
        """The caller of the target's webhook (its URL read from the environment if named)."""
        return WebhookCaller(target, self.webhook_url(target), os.environ)

    def webhook_url(self, target: WebhookTarget) -> str:
        """The target's webhook URL: as given, or read from the variable ``urlEnv`` names."""
        url = target.url
        if target.url_env is not None:
            url = os.environ.get(target.url_env)
            if not url:
                raise N8nNotConfiguredError(
                    f"target.urlEnv: the environment variable {target.url_env} is not set"
                )
        assert url is not None  # the target's validator guarantees url or urlEnv
        return url
