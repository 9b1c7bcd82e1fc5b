"""``metric_scores`` in chunks: a step per chunk, and a failed chunk re-executed alone."""

import os
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableRepository

from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.worker_pool import WorkerPoolResource
from tests.conftest import ROOT
from tests.orchestration.conftest import PARTITIONS, example_key, query

pytestmark = pytest.mark.slow

JOB = "support_agent__benchmark"
STEP = "support_agent__metric_scores"
FAULTY_TASK = 100  # in the second of three chunks of 70 evaluations at most
_BENCHMARK_ENV = "TEST_CHUNKED_BENCHMARK"
_MARKER_ENV = "TEST_CHUNKED_FAULT_MARKER"


class FailingOncePool(WorkerPoolResource):
    """Test double: the chunk holding FAULTY_TASK fails its step once (its marker file)."""

    marker: str

    def evaluate(self, tasks):
        tasks = list(tasks)
        marker = Path(self.marker)
        if any(task.task_id == FAULTY_TASK for task in tasks) and not marker.exists():
            marker.write_text("failed once")
            raise RuntimeError("injected fault: this chunk's machine went away")
        return super().evaluate(tasks)


def faulty_job() -> dg.JobDefinition:
    """The example's job with the failing pool, in process (reconstructable for re-execution)."""
    defs = build_definitions([Path(os.environ[_BENCHMARK_ENV])])
    resources = dict(defs.resources or {})
    resources["worker_pool"] = FailingOncePool(size=2, marker=os.environ[_MARKER_ENV])
    faulty = dg.Definitions(
        assets=defs.assets,
        jobs=defs.jobs,
        resources=resources,
        executor=dg.in_process_executor,
    )
    return faulty.resolve_job_def(JOB)


def _started_steps(result) -> set[str]:
    return {event.step_key for event in result.all_events if event.is_step_start}


def _register(instance: dg.DagsterInstance, example_copy: Path) -> str:
    key = example_key(example_copy)
    instance.add_dynamic_partitions(PARTITIONS, [key])
    return key


def test_a_failed_chunk_is_reexecuted_alone_and_the_table_is_whole(
    example_copy, environment, tmp_path, monkeypatch
):
    monkeypatch.setenv("N8N_DEEPEVAL_CHUNK_SIZE", "70")
    monkeypatch.setenv(_BENCHMARK_ENV, str(example_copy))
    monkeypatch.setenv(_MARKER_ENV, str(tmp_path / "fault-injected"))
    job = dg.reconstructable(faulty_job)
    with dg.instance_for_test() as instance:
        key = _register(instance, example_copy)
        failed = dg.execute_job(
            job, instance=instance, tags={"dagster/partition": key}, raise_on_error=False
        )
        assert not failed.success
        first = _started_steps(failed)
        chunks = sorted(step for step in first if step.startswith(f"{STEP}.score["))
        assert chunks == [f"{STEP}.score[c0{i}_of_03]" for i in (1, 2, 3)]
        failures = {event.step_key for event in failed.all_events if event.is_step_failure}
        assert failures == {f"{STEP}.score[c02_of_03]"}
        retried = dg.execute_job(
            job,
            instance=instance,
            tags={"dagster/partition": key},
            raise_on_error=False,
            reexecution_options=dg.ReexecutionOptions.from_failure(failed.run_id, instance),
        )
        assert retried.success, [str(e) for e in retried.all_events if e.is_failure]
        again = _started_steps(retried)
        # only the failed chunk, the collecting step and what is downstream of the table
        assert f"{STEP}.score[c02_of_03]" in again and f"{STEP}.collect" in again
        assert not again & {
            f"{STEP}.plan",
            f"{STEP}.score[c01_of_03]",
            f"{STEP}.score[c03_of_03]",
            "support_agent__agent_outputs",
        }
        checks = {e.check_name: e.passed for e in retried.get_asset_check_evaluations()}
        (materialisation,) = retried.asset_materializations_for_node(STEP)
    assert {k: checks[k] for k in ("every_run_scored", "error_rate")} == {
        "every_run_scored": True,
        "error_rate": True,
    }
    metadata = {k: v.value for k, v in materialisation.metadata.items()}
    assert (metadata["rows"], metadata["chunks"]) == (189, 3)
    assert query(
        environment,
        "select count(*), count(distinct (run_id, metric)) from support_agent.metric_scores",
    ) == [(189, 189)]
    assert query(environment, "select count(*) from support_agent.run_aggregates") == [(27,)]


def test_the_multiprocess_executor_scores_chunks_in_their_own_processes(
    example_copy, environment, tmp_path, monkeypatch
):
    monkeypatch.setenv("N8N_DEEPEVAL_LOCAL_EXECUTOR", "multiprocess")
    monkeypatch.setenv("N8N_DEEPEVAL_CHUNK_SIZE", "100")
    monkeypatch.setenv("N8N_DEEPEVAL_BENCHMARKS", str(example_copy.parent))
    job = ReconstructableRepository.for_module(
        "n8n_deepeval_pipeline.orchestration.definitions", "defs", str(ROOT)
    ).get_reconstructable_job(JOB)
    with dg.instance_for_test() as instance:
        key = _register(instance, example_copy)
        result = dg.execute_job(job, instance=instance, tags={"dagster/partition": key})
        assert result.success
        pids = {
            entry.step_key: entry.dagster_event.pid
            for entry in instance.all_logs(result.run_id)
            if entry.dagster_event is not None and entry.dagster_event.is_step_start
        }
        checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    chunk_pids = {pid for step, pid in pids.items() if step.startswith(f"{STEP}.score[")}
    assert len(chunk_pids) == 2 and os.getpid() not in chunk_pids  # a process per chunk
    assert checks["every_run_scored"] and checks["error_rate"]
    assert query(
        environment,
        "select count(*), count(distinct (run_id, metric)) from support_agent.metric_scores",
    ) == [(189, 189)]
