"""People's labels in the results' PostgreSQL (the distributed profiles), started here.

The same scenario as the DuckDB store's; the score tables are written by the PostgreSQL
results IO manager's own helpers. Runs only with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it).
"""

from __future__ import annotations

import pytest

from n8n_deepeval_pipeline import load_benchmark
from n8n_deepeval_pipeline.orchestration.resources.human_labels import (
    HumanLabelsResource,
    PostgresLabelStore,
)
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
    insert_rows,
    migrate,
)
from n8n_deepeval_pipeline.tables.postgres_connection import psycopg2_connection
from n8n_deepeval_pipeline.workspace.calibration_gate import labels_beside_scores
from n8n_deepeval_pipeline.workspace.store import StoreSource, reading
from tests.conftest import EXAMPLE
from tests.orchestration.label_store_scenarios import labels_kept_and_joined

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]


def test_labels_are_kept_and_read_beside_the_scores(postgres):
    postgres.sql("drop schema if exists support_agent cascade")
    store = HumanLabelsResource(url=postgres.url).store(load_benchmark(EXAMPLE / "benchmark.yaml"))
    assert isinstance(store, PostgresLabelStore)

    def write_table(name, frame):
        connection = psycopg2_connection(postgres.url, "test")
        try:
            with connection.cursor() as cursor:
                cursor.execute("create schema if not exists support_agent")
            migrate(connection, "support_agent", name, frame)
            insert_rows(connection, "support_agent", name, frame)
            connection.commit()
        finally:
            connection.close()

    labels_kept_and_joined(store, write_table)
    assert postgres.sql(
        "select count(*), count(distinct (run_id, metric, reviewer)) "
        "from support_agent.human_labels"
    ) == [(5, 5)]  # the red team's label too
    # The results workspace reads the same labels in its read-only session.
    with reading(StoreSource("postgresql", postgres.url)) as reader:
        read = labels_beside_scores(reader, store.benchmark)
    assert [label.kind for label in read] == ["benchmark", "benchmark", "online", "red_team"]
    assert read == store.judged()
