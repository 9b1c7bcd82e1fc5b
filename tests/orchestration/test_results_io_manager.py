"""Result tables written by an older version of the project: migrated, or a clear stop."""

import dagster as dg
import duckdb
import pytest

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from tests.orchestration.conftest import example_key, query, run_job, step_failure

pytestmark = pytest.mark.slow


def _alter(database, sql):
    with duckdb.connect(str(database)) as connection:
        connection.execute(sql)


def test_a_table_without_a_newer_column_gains_it_and_keeps_its_rows(example_copy, environment):
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        # as an earlier version of the project wrote it: no error_kind column, and a
        # partition of another version that must survive the migration
        _alter(environment, "alter table support_agent.agent_outputs drop column error_kind")
        _alter(
            environment,
            "insert into support_agent.agent_outputs by name select * replace "
            "('old' as workflow_hash) from support_agent.agent_outputs limit 2",
        )
        assert run_job(defs, instance, key, "support_agent__rescore").success  # reads the old table
        assert run_job(defs, instance, key).success  # writes into it
    assert query(
        environment,
        "select workflow_hash = 'old', count(*), count(error_kind) "
        "from support_agent.agent_outputs group by 1 order by 1",
    ) == [(False, 27, 0), (True, 2, 0)]


def test_a_column_whose_type_changed_stops_with_what_to_do(example_copy, environment):
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        _alter(environment, "alter table support_agent.expanded_runs alter run_index type varchar")
        result = run_job(defs, instance, key)
    failure = step_failure(result)
    message = str(failure.event_specific_data)
    assert "table support_agent.expanded_runs in DuckDB database 'results'" in message
    assert "written by an older version of n8n-deepeval-pipeline" in message
    assert "column run_index is VARCHAR, now BIGINT" in message
    assert "Move the database file aside" in message
    assert query(environment, "select count(*) from support_agent.expanded_runs") == [(27,)]


def test_a_table_never_written_reads_as_no_rows():
    # An empty partition creates no table: a red team played in no version yet has no
    # results table when the report reads every version's.
    from dagster._core.storage.db_io_manager import TableSlice

    from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import (
        MigratingPandasTypeHandler,
    )

    handler = MigratingPandasTypeHandler()
    table = TableSlice(table="red_team_results", schema="demo", database="results")
    with duckdb.connect() as connection:
        assert handler.load_input(None, table, connection).empty
        connection.execute("create schema demo")
        connection.execute("create table demo.red_team_results as select 'a001:0' as result_id")
        assert handler.load_input(None, table, connection)["result_id"].tolist() == ["a001:0"]


def test_a_stored_tables_columns_are_read_as_information_schema_lists_them(tmp_path):
    from n8n_deepeval_pipeline.orchestration.resources.results_io_manager import stored_columns

    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute("create schema bench")
        connection.execute(
            "create table bench.scores (run_id varchar, score double, judge_calls bigint, "
            "success boolean, scored_at timestamp with time zone, metrics json)"
        )
        connection.execute("create schema other")
        connection.execute("create table other.scores (elsewhere integer)")
        listed = connection.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_schema = 'bench' and table_name = 'scores' order by ordinal_position"
        ).fetchall()
        assert list(stored_columns(connection, "bench", "scores").items()) == listed
        assert stored_columns(connection, "bench", "scores") == {
            "run_id": "VARCHAR",
            "score": "DOUBLE",
            "judge_calls": "BIGINT",
            "success": "BOOLEAN",
            "scored_at": "TIMESTAMP WITH TIME ZONE",
            "metrics": "JSON",
        }
        assert stored_columns(connection, "bench", "no_such_table") == {}
        assert stored_columns(connection, "no_such_schema", "scores") == {}
