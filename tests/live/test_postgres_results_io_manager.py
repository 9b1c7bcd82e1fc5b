"""The PostgreSQL results IO manager against a real PostgreSQL (started here on loopback).

The runs are in process (``execute_in_process``); the Celery side is in
test_distributed.py. Runs only with N8N_DEEPEVAL_DISTRIBUTED=1 (.ci/run sets it).
"""

from __future__ import annotations

import dagster as dg
import pytest

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
    PostgresResultsIOManager,
)
from tests.live.services import Postgres
from tests.orchestration.conftest import example_key, run_job, step_failure

pytestmark = [pytest.mark.live, pytest.mark.distributed, pytest.mark.slow]


@pytest.fixture
def distributed(postgres, tmp_path, monkeypatch) -> Postgres:
    monkeypatch.setenv("N8N_DEEPEVAL_PROFILE", "distributed")
    monkeypatch.setenv("N8N_DEEPEVAL_POSTGRES_URL", postgres.url)
    monkeypatch.setenv("N8N_DEEPEVAL_REDIS_URL", "redis://127.0.0.1:9/0")  # never contacted
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEEPEVAL_POOL_SIZE", "2")
    postgres.sql("drop schema if exists support_agent cascade")
    return postgres


def _example(example_copy):
    defs = build_definitions([example_copy])
    assert isinstance(defs.resources["io_manager"], PostgresResultsIOManager)
    return defs, example_key(example_copy)


def test_rematerialising_a_version_replaces_its_rows_only(example_copy, distributed):
    defs, key = _example(example_copy)
    with dg.instance_for_test() as instance:
        assert run_job(defs, instance, key).success
        distributed.sql(
            "insert into support_agent.metric_scores "
            "select * from support_agent.metric_scores limit 2",
        )  # duplicates a re-materialisation must clear
        distributed.sql(
            "insert into support_agent.agent_outputs select * from support_agent.agent_outputs "
            "limit 2; update support_agent.agent_outputs set workflow_hash = 'old' "
            "where ctid in (select ctid from support_agent.agent_outputs limit 2)",
        )  # another version's rows, which must survive
        assert run_job(defs, instance, key).success
        assert run_job(defs, instance, key, "support_agent__rescore").success  # reads them back
        scores = defs.load_asset_value(
            ["support_agent", "metric_scores"], instance=instance, partition_key=key
        )
    assert distributed.sql(
        "select count(*), count(distinct (run_id, metric)) from support_agent.metric_scores",
    ) == [(189, 189)]
    assert distributed.sql(
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
        distributed.sql("alter table support_agent.agent_outputs drop column error_kind")
        assert run_job(defs, instance, key, "support_agent__rescore").success  # reads old table
        assert run_job(defs, instance, key).success  # writes into it: the column comes back
        assert distributed.sql(
            "select count(*), count(error_kind) from support_agent.agent_outputs"
        ) == [(27, 0)]
        distributed.sql("alter table support_agent.expanded_runs alter run_index type text")
        result = run_job(defs, instance, key)
    failure = step_failure(result)
    message = str(failure.event_specific_data)
    assert "table support_agent.expanded_runs in PostgreSQL database 'n8n_deepeval'" in message
    assert "column run_index is text, now bigint" in message
    assert distributed.sql("select count(*) from support_agent.expanded_runs") == [(27,)]


def test_online_scores_are_upserted_into_their_day_and_the_summary_reads_its_days(
    distributed, tmp_path, monkeypatch
):
    from datetime import timedelta

    from tests.n8n_api.fake_n8n import FakeN8nApi
    from tests.n8n_api.test_traffic_dataset import WEBHOOK_AGENT
    from tests.orchestration.test_online import DAY, benchmark_file, tick, webhook_execution

    distributed.sql("drop schema if exists support_online cascade")
    with FakeN8nApi() as n8n, dg.instance_for_test() as instance:
        n8n.workflows["wf"] = {**WEBHOOK_AGENT, "active": True, "activeVersionId": "v1"}
        monkeypatch.setenv("N8N_API_URL", n8n.base_url)
        monkeypatch.setenv("N8N_API_KEY", "test-key")
        defs = build_definitions([benchmark_file(tmp_path)])
        job = defs.resolve_job_def("support_online__online")
        cursor = tick(defs, instance, n8n).cursor
        n8n.executions = [
            {**webhook_execution(n, answer, DAY + timedelta(days=day, minutes=n)),
             "workflowVersionId": "v1"}
            for n, day, answer in [(1, -1, "fine"), (2, -1, "fine"), (3, 0, "Refund issued"),
                                   (4, 0, "fine")]
        ]  # fmt: skip
        result = tick(defs, instance, n8n, cursor)
        assert [request.partition_key for request in result.run_requests] == [
            "2026-11-29", "2026-11-30"]  # fmt: skip
        for request in [*result.run_requests, result.run_requests[1]]:  # one run twice
            ran = job.execute_in_process(
                partition_key=request.partition_key, run_config=request.run_config,
                instance=instance,
            )  # fmt: skip
            assert ran.success
        # a run of one item of a day adds to the day's rows; it does not replace them
        config = request.run_config
        items = config["ops"]["support_online__online_scores"]["config"]["items"]
        single = {"ops": {"support_online__online_scores": {"config": {"items": items[:1]}}}}
        assert job.execute_in_process(
            partition_key="2026-11-30", run_config=single, instance=instance
        ).success
    assert distributed.sql(
        "select to_char(started_at at time zone 'UTC', 'YYYY-MM-DD'), count(*), "
        "count(distinct score_id), sum(success::int) from support_online.online_scores "
        "group by 1 order by 1",
    ) == [("2026-11-29", 2, 2, 2), ("2026-11-30", 2, 2, 1)]
    # the day's summary read the day before it too (the drop check's window)
    checks = {check.check_name: check for check in ran.get_asset_check_evaluations()}
    assert checks["no_pass_rate_drop"].metadata["before/items"].value == 2
    assert checks["no_pass_rate_drop"].metadata["last/items"].value == 2
    assert distributed.sql(
        "select to_char(day at time zone 'UTC', 'YYYY-MM-DD'), items, passed "
        "from support_online.online_summary order by 1",
    ) == [("2026-11-29", 2, 2), ("2026-11-30", 2, 1)]
