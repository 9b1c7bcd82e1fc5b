"""The PostgreSQL results IO manager against a real PostgreSQL (started here on loopback).

The runs are in process (``execute_in_process``); the Celery side is in
test_distributed.py. Runs only with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it).
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg
import pytest

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
    PostgresResultsIOManager,
    libpq_url,
)
from tests.live.services import Postgres, postgres_server
from tests.live.test_distributed import _require_distributed
from tests.orchestration.conftest import example_key, run_job, step_failure

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    _require_distributed()
    with postgres_server() as server:
        yield server


def sql(postgres: Postgres, statement: str) -> list[tuple]:
    import psycopg2

    connection = psycopg2.connect(libpq_url(postgres.url))
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
        connection.commit()
        return rows
    finally:
        connection.close()


@pytest.fixture
def distributed(postgres, tmp_path, monkeypatch) -> Postgres:
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "distributed")
    monkeypatch.setenv("N8N_DEEPEVAL_POSTGRES_URL", postgres.url)
    monkeypatch.setenv("N8N_DEEPEVAL_REDIS_URL", "redis://127.0.0.1:9/0")  # never contacted
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "2")
    sql(postgres, "drop schema if exists support_agent cascade")
    return postgres


def _example(example_copy):
    defs = build_definitions([example_copy])
    assert isinstance(defs.resources["io_manager"], PostgresResultsIOManager)
    return defs, example_key(example_copy)


def test_rematerialising_a_version_replaces_its_rows_only(example_copy, distributed):
    defs, key = _example(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        sql(
            distributed,
            "insert into support_agent.metric_scores "
            "select * from support_agent.metric_scores limit 2",
        )  # duplicates a re-materialisation must clear
        sql(
            distributed,
            "insert into support_agent.agent_outputs select * from support_agent.agent_outputs "
            "limit 2; update support_agent.agent_outputs set workflow_hash = 'old' "
            "where ctid in (select ctid from support_agent.agent_outputs limit 2)",
        )  # another version's rows, which must survive
        assert run_job(defs, instance, key).success
        assert run_job(defs, instance, key, "support_agent__rescore").success  # reads them back
        scores = defs.load_asset_value(
            ["support_agent", "metric_scores"], instance=instance, partition_key=key
        )
    assert sql(
        distributed,
        "select count(*), count(distinct (run_id, metric)) from support_agent.metric_scores",
    ) == [(189, 189)]
    assert sql(
        distributed,
        "select workflow_hash = 'old', count(*) from support_agent.agent_outputs "
        "group by 1 order by 1",
    ) == [(False, 27), (True, 2)]
    # read back typed as the DuckDB IO manager hands them over
    assert len(scores) == 189 and str(scores["score"].dtype) == "Float64"
    assert str(scores["success"].dtype) == "boolean" and str(scores["run_id"].dtype) == "string"


def test_a_column_added_since_is_migrated_and_a_changed_type_stops(example_copy, distributed):
    defs, key = _example(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        sql(distributed, "alter table support_agent.agent_outputs drop column error_kind")
        assert run_job(defs, instance, key, "support_agent__rescore").success  # reads old table
        assert run_job(defs, instance, key).success  # writes into it: the column comes back
        assert sql(
            distributed, "select count(*), count(error_kind) from support_agent.agent_outputs"
        ) == [(27, 0)]
        sql(distributed, "alter table support_agent.expanded_runs alter run_index type text")
        result = run_job(defs, instance, key)
    failure = step_failure(result)
    message = str(failure.event_specific_data)
    assert "table support_agent.expanded_runs in PostgreSQL database 'n8n_deepeval'" in message
    assert "column run_index is text, now bigint" in message
    assert sql(distributed, "select count(*) from support_agent.expanded_runs") == [(27,)]
