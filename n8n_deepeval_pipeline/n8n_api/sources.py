"""What a benchmark reads from n8n: its workflow and its dataset's Data Table rows.

The one place that turns ``workflow: {id}`` and ``dataset.dataTable`` into data, used
by the Dagster resource and by ``validate`` alike.
"""

from __future__ import annotations

from typing import Any

from n8n_deepeval_pipeline.benchmark.config import DatasetConfig
from n8n_deepeval_pipeline.benchmark.n8n_target import N8nWorkflowRef
from n8n_deepeval_pipeline.n8n_api.client import N8nApiError, N8nClient, equals_filter
from n8n_deepeval_pipeline.workflow.hashing import extract_workflow


def fetch_workflow(client: N8nClient, ref: N8nWorkflowRef) -> dict[str, Any]:
    """The workflow as its triggers run it (the published version when there is one)."""
    return dict(extract_workflow(client.workflow(ref.id)))


def fetch_records(client: N8nClient, config: DatasetConfig) -> list[dict[str, Any]]:
    """The rows of the dataset's Data Table, filtered by n8n."""
    assert config.data_table is not None
    table = client.find_data_table(config.data_table)
    if table is None:
        raise N8nApiError(f"dataset.dataTable: no Data Table {config.data_table!r} in n8n", 404)
    return client.rows(table.id, equals_filter(dict(config.filters)))
