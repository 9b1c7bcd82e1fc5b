"""The Dagster assets end to end: a partition materialised and read back from DuckDB."""

import base64
import json
import re

import dagster as dg
import pytest
import yaml
from dagster._core.test_utils import create_run_for_test

from n8n_deepeval_pipeline import load_benchmark, settings
from n8n_deepeval_pipeline.orchestration.assets import ASSET_NAMES, EXIT_CODE_TAG, VERDICT_TAG
from n8n_deepeval_pipeline.orchestration.automation import CALLS_SHARED_BY, current_hash
from n8n_deepeval_pipeline.orchestration.definitions import build_definitions
from n8n_deepeval_pipeline.orchestration.resources.n8n import N8nResource
from n8n_deepeval_pipeline.orchestration.resources.score_journal import ScoreJournalResource
from n8n_deepeval_pipeline.orchestration.stored_tables import stored_image
from n8n_deepeval_pipeline.workflow.hashing import version_key
from n8n_deepeval_pipeline.workflow.variants import family
from tests.conftest import worker_processes
from tests.orchestration.conftest import (
    PARTITIONS,
    edit_and_record_new_version,
    example_key,
    query,
    run_job,
    step_failure,
)

pytestmark = pytest.mark.slow


def materialise(defs, instance, key):
    result = run_job(defs, instance, key)
    assert result.success
    return result


def test_materialised_partition_is_stored_and_rematerialising_replaces_it(
    example_copy, environment
):
    defs = build_definitions([example_copy])
    full = current_hash(load_benchmark(example_copy), N8nResource())
    key = version_key(full)
    assert key == full[:12]  # the UI's partition key; the tables keep the full hash
    with dg.instance_for_test() as instance:
        result = materialise(defs, instance, key)
        materialise(defs, instance, key)
        checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {
        "every_run_scored": True,
        "error_rate": True,
        "no_metric_errors": True,  # FAQ runs without tool calls are judged on a bare trace
        "no_regression": True,
        "version_passes": True,  # the run is a success: its version passes
        "workflow_checks_pass": False,  # the example's webhook has no authentication
    }

    counts = dict(
        (table, query(environment, f"select count(*) from support_agent.{table}")[0][0])
        for table in ASSET_NAMES
        # one version: nothing to compare, so no table; the report is files, not a table;
        # the example's answers carry no image, so there is no image table either
        if table not in ("version_comparison", "benchmark_report", "output_images")
    )
    assert counts == {
        "workflow_snapshot": 1,
        "workflow_checks": 9,
        "dataset_rows": 9,
        "expanded_runs": 27,
        "agent_outputs": 27,
        "metric_scores": 27 * 7,
        "run_aggregates": 27,
        "consistency_stats": 9,
    }
    assert query(environment, "select distinct workflow_hash from support_agent.metric_scores") == [
        (full,)
    ]
    run_ids = [
        r[0]
        for r in query(
            environment, "select run_id from support_agent.expanded_runs order by run_id"
        )
    ]
    assert f"{full}:refund:2" in run_ids

    # recorded values reach the table: the refund run 1 called a denied tool
    (permission,) = query(
        environment,
        "select score, success, error_kind from support_agent.metric_scores "
        f"where metric = 'tool_permission' and run_id = '{full}:refund:1'",
    )
    assert permission == (0.5, False, None)
    errors = query(
        environment,
        "select metric, error_kind, count(*) from support_agent.metric_scores "
        "where error_kind is not null group by all",
    )
    assert errors == []  # an agent that called no tool is judged, not missing input
    (bare,) = query(
        environment,
        "select count(*) from support_agent.metric_scores "
        "where metric = 'agent_loop_detection' and success",
    )
    assert bare == (27,)
    dry = query(
        environment,
        "select distinct metric from support_agent.metric_scores where dry_run order by 1",
    )
    assert dry == [("bias",), ("helpfulness",)]

    # aggregates follow the pass rule over the counted metrics only, and the dry-run
    # judge's placeholders (helpfulness, bias) decide no run: the scores without a judge do
    aggregates = query(
        environment,
        "select a.run_id, a.overall_success, a.metrics_counted, bool_and(s.success) "
        "from support_agent.run_aggregates a join support_agent.metric_scores s using (run_id) "
        "where s.metric in ('tool_correctness', 'tool_permission', 'no_refund_promise') "
        "group by all",
    )
    assert len(aggregates) == 27
    assert all(
        success == all_passed and counted == 3 for _, success, counted, all_passed in aggregates
    )

    # consistency of a case whose three runs are identical and one whose labels differ
    stats = dict(
        (case.split(":")[1], (cv, agreement, json.loads(at)))
        for case, cv, agreement, at in query(
            environment,
            "select case_id, cv, label_agreement, pass_at_k from support_agent.consistency_stats",
        )
    )
    assert stats["refund"][1] == pytest.approx(2 / 3)
    assert stats["returns-policy"][1] == 1.0
    assert set(stats["refund"][2]) == {"1", "2", "3"}


def test_changed_workflow_needs_its_own_recordings_and_old_rows_stay(example_copy, environment):
    defs = build_definitions([example_copy])
    benchmark = load_benchmark(example_copy)
    old = version_key(current_hash(benchmark, N8nResource()))
    workflow = json.loads(benchmark.workflow.read_text())
    workflow["nodes"][1]["parameters"]["options"]["maxIterations"] = 3
    benchmark.workflow.write_text(json.dumps(workflow))
    new_hash = current_hash(benchmark, N8nResource())
    new = version_key(new_hash)
    assert new != old
    with dg.instance_for_test() as instance:
        job = defs.resolve_job_def("support_agent__benchmark")
        instance.add_dynamic_partitions(PARTITIONS, [new])
        refused = job.execute_in_process(partition_key=new, instance=instance, raise_on_error=False)
        failure = step_failure(refused)
        assert f"no recorded outputs for version {new}" in str(failure.event_specific_data)
        # the new version's recordings, as `run --record` writes them
        recorded = example_copy.parent / "outputs.jsonl"
        lines = [json.loads(line) for line in recorded.read_text().splitlines()]
        lines = [line for line in lines if "workflow_hash" not in line]  # the first version's
        with recorded.open("a") as file:
            file.writelines(
                json.dumps({**line, "workflow_hash": new_hash}) + "\n" for line in lines
            )
        materialise(defs, instance, new)
        instance.add_dynamic_partitions(PARTITIONS, [old])
        failed = job.execute_in_process(partition_key=old, instance=instance, raise_on_error=False)
    assert not failed.success  # that version's workflow is no longer on disk
    assert query(
        environment, "select workflow_hash, count(*) from support_agent.run_aggregates group by 1"
    ) == [(new_hash, 27)]


def test_rescore_job_backfills_every_version_and_leaves_every_asset_materialised(
    example_copy, environment
):
    defs = build_definitions([example_copy])
    old = example_key(example_copy)
    with dg.instance_for_test() as instance:
        materialise(defs, instance, old)
        new = edit_and_record_new_version(example_copy)
        materialise(defs, instance, new)
        rescore = defs.resolve_job_def("support_agent__rescore")
        for key in (old, new):  # what a backfill of the re-score job runs
            assert rescore.execute_in_process(partition_key=key, instance=instance).success
        partitions = (
            defs.resolve_asset_graph()
            .get(dg.AssetKey(["support_agent", "metric_scores"]))
            .partitions_def
        )
        statuses = {
            (name, key): status.value
            for name in ASSET_NAMES
            for key, status in instance.get_status_by_partition(
                dg.AssetKey(["support_agent", name]), [old, new], partitions
            ).items()
        }
        assert set(statuses.values()) == {"MATERIALIZED"}
        assert len(statuses) == len(ASSET_NAMES) * 2
        # the full job still refuses an old version, and says where to go instead
        refused = defs.resolve_job_def("support_agent__benchmark").execute_in_process(
            partition_key=old, instance=instance, raise_on_error=False
        )
    failure = step_failure(refused)
    assert "`…__rescore` job" in str(failure.event_specific_data)
    assert query(
        environment,
        "select left(workflow_hash, 12), count(*) from support_agent.metric_scores group by 1 "
        "order by 1",
    ) == sorted([(old, 27 * 7), (new, 27 * 7)])


def _tick(sensor, instance, cursor=None):
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"n8n": N8nResource()}
    )
    return sensor(context)


def test_sensor_registers_the_first_version_without_a_run_and_runs_later_ones(
    example_copy, environment
):
    defs = build_definitions([example_copy])
    sensor = defs.resolve_sensor_def("support_agent__workflow_changed")
    benchmark = load_benchmark(example_copy)
    key = version_key(current_hash(benchmark, N8nResource()))
    with dg.instance_for_test() as instance:
        first = _tick(sensor, instance)
        # opening the UI on a benchmark never run before spends no judge call
        assert first.run_requests == []
        assert first.dynamic_partitions_requests[0].partition_keys == [key]
        assert "registered without a run" in first.skip_reason.skip_message
        instance.add_dynamic_partitions(PARTITIONS, [key])
        assert isinstance(_tick(sensor, instance, first.cursor), dg.SkipReason)

        workflow = json.loads(benchmark.workflow.read_text())
        workflow["connections"].pop("calculator")
        benchmark.workflow.write_text(json.dumps(workflow))
        changed = _tick(sensor, instance, first.cursor)
        new = version_key(current_hash(benchmark, N8nResource()))
        assert new != key
        assert [r.partition_key for r in changed.run_requests] == [new]
        assert changed.dynamic_partitions_requests[0].partition_keys == [new]


def test_sensor_runs_a_version_production_traffic_registered_before_it_saw_it(
    example_copy, environment
):
    defs = build_definitions([example_copy])
    sensor = defs.resolve_sensor_def("support_agent__workflow_changed")
    benchmark = load_benchmark(example_copy)
    with dg.instance_for_test() as instance:
        first = _tick(sensor, instance)
        instance.add_dynamic_partitions(
            PARTITIONS, first.dynamic_partitions_requests[0].partition_keys
        )
        workflow = json.loads(benchmark.workflow.read_text())
        workflow["connections"].pop("calculator")
        benchmark.workflow.write_text(json.dumps(workflow))
        new = version_key(current_hash(benchmark, N8nResource()))
        instance.add_dynamic_partitions(PARTITIONS, [new])  # by the online sensor
        changed = _tick(sensor, instance, first.cursor)
        assert [r.partition_key for r in changed.run_requests] == [new]
        assert changed.dynamic_partitions_requests == []  # already a partition
        # once it has run (or is running), the next tick leaves it alone, cursor or not
        create_run_for_test(
            instance, job_name="support_agent__benchmark", tags={"dagster/partition": new}
        )
        assert isinstance(_tick(sensor, instance), dg.SkipReason)


def test_sensor_runs_the_first_version_when_the_benchmark_opts_in(example_copy, environment):
    text = example_copy.read_text()
    example_copy.write_text(text + "runFirstVersion: true\n")
    defs = build_definitions([example_copy])
    sensor = defs.resolve_sensor_def("support_agent__workflow_changed")
    key = example_key(example_copy)
    with dg.instance_for_test() as instance:
        first = _tick(sensor, instance)
    assert [r.partition_key for r in first.run_requests] == [key]


def test_schedule_is_off_unless_the_benchmark_sets_one(example_copy, environment):
    on = build_definitions([example_copy]).resolve_schedule_def("support_agent__nightly")
    assert on.default_status == dg.DefaultScheduleStatus.RUNNING
    lines = example_copy.read_text().splitlines()
    example_copy.write_text("\n".join(x for x in lines if not x.startswith("schedule:")) + "\n")
    off = build_definitions([example_copy]).resolve_schedule_def("support_agent__nightly")
    assert off.default_status == dg.DefaultScheduleStatus.STOPPED
    assert off.cron_schedule == "0 2 * * *"


def test_schedule_requests_the_current_hash_and_registers_it(example_copy, environment):
    defs = build_definitions([example_copy])
    schedule = defs.resolve_schedule_def("support_agent__nightly")
    assert schedule.cron_schedule == "0 2 * * *"
    key = example_key(example_copy)
    with dg.instance_for_test() as instance:
        (request,) = schedule(
            dg.build_schedule_context(instance=instance, resources={"n8n": N8nResource()})
        )
        assert request.partition_key == key
        assert instance.has_dynamic_partition(PARTITIONS, key)


def with_variants(example_copy):
    """The example run through a harness copy, with two variants of its model and prompt."""
    document = yaml.safe_load(example_copy.read_text())
    document["target"] = {
        "type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "AI Agent",
        "variants": {"nano": {"OpenAI Chat Model": {"model": "gpt-4.1-nano"}},
                     "terse": {"AI Agent": {"options.systemMessage": "One sentence."}}},
    }  # fmt: skip
    example_copy.write_text(yaml.safe_dump(document))
    return version_keys(example_copy)


def version_keys(example_copy):
    """The keys of the workflow and of each of its variants, in the benchmark's order."""
    benchmark = load_benchmark(example_copy)
    workflow = json.loads(benchmark.workflow.read_text())
    return [member.key for member in family(workflow, benchmark.variants)]


def test_the_sensor_and_the_schedule_take_the_workflow_with_its_variants(example_copy, environment):
    keys = with_variants(example_copy)
    # Definitions are resolved inside the instance's block: they load with its state storage.
    with dg.instance_for_test() as instance:
        defs = build_definitions([example_copy])
        sensor = defs.resolve_sensor_def("support_agent__workflow_changed")
        schedule = defs.resolve_schedule_def("support_agent__nightly")
        first = _tick(sensor, instance)
        assert first.run_requests == []  # registered without a run, as any first version
        assert first.dynamic_partitions_requests[0].partition_keys == keys
        instance.add_dynamic_partitions(PARTITIONS, keys)
        requests = schedule(
            dg.build_schedule_context(instance=instance, resources={"n8n": N8nResource()})
        )
        # one run per version, told that three versions share the target's call slots
        assert [request.partition_key for request in requests] == keys
        assert {request.tags[CALLS_SHARED_BY] for request in requests} == {"3"}
    # a new variant alone is a new version: the sensor runs it, and only it
    document = yaml.safe_load(example_copy.read_text())
    document["target"]["variants"]["big"] = {"OpenAI Chat Model": {"model": "gpt-4o"}}
    example_copy.write_text(yaml.safe_dump(document))
    (big,) = [key for key in version_keys(example_copy) if key not in keys]
    with dg.instance_for_test() as instance:
        defs = build_definitions([example_copy])
        sensor = defs.resolve_sensor_def("support_agent__workflow_changed")
        instance.add_dynamic_partitions(PARTITIONS, keys)
        added = _tick(sensor, instance)
    assert [request.partition_key for request in added.run_requests] == [big]
    assert CALLS_SHARED_BY not in added.run_requests[0].tags


@pytest.mark.parametrize(
    ("name", "runs", "metrics"),
    [
        ("kitchen_sink_non_conversational", 4, 20),
        ("kitchen_sink_conversational", 2, 13),
        ("mcp_agent", 6, 4),
        ("image_workflow", 6, 3),
    ],
)
def test_examples_score_every_metric_without_error(name, runs, metrics, tmp_path, environment):
    from tests.conftest import ROOT

    source = ROOT / "examples" / name / "benchmark.yaml"
    benchmark = load_benchmark(source)
    key = version_key(current_hash(benchmark, N8nResource()))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(f"{name}__workflow_hash", [key])
        result = (
            build_definitions([source])
            .resolve_job_def(f"{name}__benchmark")
            .execute_in_process(partition_key=key, instance=instance)
        )
    assert result.success
    rows = query(
        environment,
        "select metric, count(*), count(score), count(error_kind) "
        f"from {name}.metric_scores group by 1",
    )
    assert sorted(row[0] for row in rows) == sorted(benchmark.metric_labels)
    assert len(rows) == metrics
    assert all(row[1:] == (runs, runs, 0) for row in rows), rows
    if name == "image_workflow":
        assert_images_kept_once_and_shown(name, key, source, environment)


def assert_images_kept_once_and_shown(name, key, source, environment):
    """Each run's poster is one row of output_images, its text marks it, the report shows it."""
    images = query(environment, f"select sha256, mime_type, byte_size from {name}.output_images")
    assert len(images) == 6 and {mime for _, mime, _ in images} == {"image/png"}
    outputs = query(environment, f"select actual_output, images from {name}.agent_outputs")
    for text, listed in outputs:
        (image,) = json.loads(listed)
        assert image["role"] == "output" and text.endswith(f"[DEEPEVAL:IMAGE:{image['sha256']}]")
        assert "base64" not in text  # the bytes are in output_images, not in the row
    stored = {sha for sha, _, _ in images}
    with dg.instance_for_test() as instance:
        defs = build_definitions([source])
        (sha, _, size) = images[0]
        found = stored_image(defs, instance, name, key, sha[:16])
        assert (found.sha256, found.byte_size) == (sha, size)
        assert base64.b64decode(found.data_base64)[:8] == b"\x89PNG\r\n\x1a\n"
        assert stored_image(defs, instance, name, key, "0" * 64) is None
    report = next((settings.reports_dir() / name).glob("*/report.html"))
    shown = set(
        re.findall(r'<img class="image" src="images/([0-9a-f]{64})\.png"', report.read_text())
    )
    assert shown and shown <= stored
    assert all((report.parent / "images" / f"{sha}.png").is_file() for sha in shown)


class FailingJournal(ScoreJournalResource):
    """Test double: the journal stops working after a few records, failing the step.

    It fails once it holds ``fail_after`` records and one of them called the judge: the
    deterministic metrics (no judge) often finish first, and the test needs the journaled
    part to have cost judge calls.
    """

    fail_after: int

    def journal(self, benchmark, partition, chunk="c01_of_01"):
        real = super().journal(benchmark, partition, chunk)
        limit = self.fail_after

        class Journal(type(real)):
            def record(self, task, result, run_id=""):
                lines = self.path.read_text().splitlines() if self.path.exists() else []
                judged = any(json.loads(line)["result"]["judge_calls"] for line in lines)
                if len(lines) >= limit and judged:
                    raise OSError("disk full (test double)")
                super().record(task, result, run_id)

        return Journal(real.path, real.shared)


def test_failed_scoring_step_leaves_no_worker_and_the_rerun_resumes(
    example_copy, environment, tmp_path
):
    before = worker_processes()  # a shared pool of another test may be running
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    journal_dir = tmp_path / "journal"
    with dg.instance_for_test() as instance:
        # Resolved with a live instance: Dagster keeps the last instance's state storage.
        job = defs.resolve_job_def("support_agent__benchmark")
        instance.add_dynamic_partitions(PARTITIONS, [key])
        failed = job.execute_in_process(
            partition_key=key,
            instance=instance,
            raise_on_error=False,
            resources={"score_journal": FailingJournal(directory=str(journal_dir), fail_after=40)},
        )
        assert not failed.success
        assert worker_processes() == before
        # one chunk (189 evaluations at most 1000 a chunk): one journal file
        kept = (journal_dir / "support_agent" / key / "c01_of_01.jsonl").read_text().splitlines()
        assert 40 <= len(kept) < 27 * 7
        rerun = job.execute_in_process(
            partition_key=key,
            instance=instance,
            resources={"score_journal": ScoreJournalResource(directory=str(journal_dir))},
        )
    assert rerun.success
    (materialisation,) = [
        m for m in rerun.asset_materializations_for_node("support_agent__metric_scores")
    ]
    metadata = {k: v.value for k, v in materialisation.metadata.items()}
    # every journaled result is kept (none is a crash, timeout or judge error)
    assert (metadata["resumed"], metadata["evaluated"]) == (len(kept), 27 * 7 - len(kept))
    # The judge's spend of both attempts, and of the resuming run alone.
    earlier = sum(json.loads(line)["result"]["judge_calls"] for line in kept)
    assert json.loads(kept[0])["run"] == failed.run_id
    assert earlier > 0 and metadata["judge_calls"] > earlier
    spend = metadata["attempts/judge_spend"]
    assert set(spend) == {failed.run_id, rerun.run_id}
    assert (spend[failed.run_id]["evaluations"], spend[rerun.run_id]["evaluations"]) == (
        len(kept),
        27 * 7 - len(kept),
    )
    # the failed attempt is charged every call its judge answered: those of the evaluations
    # it journaled, and of those the failure cut short (asked again by the rerun)
    charged = spend[failed.run_id]["judge_calls"]
    assert charged >= earlier
    assert (metadata["attempts/count"], metadata["attempts/judge_calls"]) == (
        2,
        metadata["judge_calls"] - earlier + charged,
    )
    assert metadata["run/judge_calls"] == metadata["judge_calls"] - earlier
    assert not (journal_dir / "support_agent" / key).exists()
    assert query(environment, "select count(*) from support_agent.metric_scores") == [(189,)]
    assert worker_processes() == before


class JournalKilledInChunk(ScoreJournalResource):
    """Test double: the journal of one chunk stops working after a few records (the run is
    killed there, after the chunks before it finished); every result any chunk journals
    is also kept in ``RECORDED`` (the test's own account of what each run evaluated)."""

    killed_in: str
    after: int

    def journal(self, benchmark, partition, chunk="c01_of_01"):
        real = super().journal(benchmark, partition, chunk)
        limit = self.after if chunk == self.killed_in else None

        class Journal(type(real)):
            def record(self, task, result, run_id=""):
                if limit is not None and len(self.attempts()) >= limit:
                    raise OSError("killed (test double)")
                RECORDED.append((run_id, result))
                super().record(task, result, run_id)

        return Journal(real.path, real.shared)


RECORDED: list = []


def test_a_run_killed_after_a_chunk_finished_is_charged_every_call_and_resumed_whole(
    example_copy, environment, tmp_path, monkeypatch
):
    # A kill after a chunk finished deleted its journal and its call record: the resumed
    # run scored the chunk again from the cache and said "calls 498" where the judge had
    # answered 1,055.
    monkeypatch.setenv("N8N_DEEPEVAL_CHUNK_SIZE", "50")  # 189 evaluations: 4 chunks
    RECORDED.clear()
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    journal_dir = str(tmp_path / "journal")
    with dg.instance_for_test() as instance:
        job = defs.resolve_job_def("support_agent__benchmark")
        instance.add_dynamic_partitions(PARTITIONS, [key])
        killed = job.execute_in_process(
            partition_key=key, instance=instance, raise_on_error=False,
            resources={"score_journal": JournalKilledInChunk(
                directory=journal_dir, killed_in="c02_of_04", after=10)},
        )  # fmt: skip
        assert not killed.success
        evaluated = [result for run, result in RECORDED if run == killed.run_id]
        # chunk 2 killed after ten; the others (in this process, one after another) whole
        done = len(evaluated)
        assert 50 + 10 <= done < 189
        resumed = job.execute_in_process(
            partition_key=key, instance=instance,
            resources={"score_journal": ScoreJournalResource(directory=journal_dir)},
        )  # fmt: skip
    assert resumed.success
    (materialisation,) = resumed.asset_materializations_for_node("support_agent__metric_scores")
    metadata = {k: v.value for k, v in materialisation.metadata.items()}
    assert (metadata["resumed"], metadata["evaluated"]) == (done, 189 - done)  # none again
    spend = metadata["attempts/judge_spend"]
    assert set(spend) == {killed.run_id, resumed.run_id}
    assert spend[killed.run_id]["evaluations"] == done
    # every call the killed run was answered: those behind its results, and those of
    # the evaluations it was cut short in
    behind = sum(result.judge_calls for result in evaluated)
    assert behind > 0 and spend[killed.run_id]["judge_calls"] >= behind
    assert spend[resumed.run_id]["evaluations"] == 189 - done
    assert not (tmp_path / "journal" / "support_agent" / key).exists()  # stored: forgotten


def test_recordings_that_no_run_reads_fail_the_outputs_step_naming_both_files(
    example_copy, environment
):
    outputs = example_copy.parent / "outputs.jsonl"
    with outputs.open("a") as file:
        file.write(json.dumps({"row_id": "typo", "run_index": 0, "output": "x"}) + "\n")
    defs = build_definitions([example_copy])
    key = example_key(example_copy)
    steps = ["workflow_snapshot", "dataset_rows", "expanded_runs", "agent_outputs", "output_images"]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PARTITIONS, [key])
        refused = defs.resolve_job_def("support_agent__benchmark").execute_in_process(
            partition_key=key,
            instance=instance,
            raise_on_error=False,
            asset_selection=[dg.AssetKey(["support_agent", name]) for name in steps],
        )
    failure = step_failure(refused)
    assert failure.step_key == "support_agent__agent_outputs"
    assert failure.event_specific_data.error.cause.message == (
        "n8n_deepeval_pipeline.config.errors.DataFileError: "
        f"{outputs}: invalid recorded outputs (target.outputs of {example_copy})\n"
        "  - line 55: row_id 'typo' run_index 0: no such row in the dataset "
        "(after filters and maxRows)\n"
        "  - to leave out the lines no run reads, set target.ignoreUnusedOutputs: true\n"
    )


def test_the_example_second_version_is_compared_and_its_regressions_fail_the_check(
    example_copy, environment
):
    defs = build_definitions([example_copy])
    first_hash = current_hash(load_benchmark(example_copy), N8nResource())
    first = version_key(first_hash)
    with dg.instance_for_test() as instance:
        alone = materialise(defs, instance, first)
        first_checks = {e.check_name: e.passed for e in alone.get_asset_check_evaluations()}
        assert first_checks["no_regression"] is True  # nothing before it to compare with
        # a version registered but never scored is no baseline: the one before it is
        instance.add_dynamic_partitions(PARTITIONS, ["0" * 12])
        workflow = example_copy.parent / "workflow.json"
        workflow.write_text((example_copy.parent / "workflow.v2.json").read_text())
        second = example_key(example_copy)
        result = run_job(defs, instance, second)
        checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
        (report,) = result.asset_materializations_for_node("support_agent__benchmark_report")
        tags = instance.get_run_by_id(result.run_id).tags
        assert alone.success and instance.get_run_by_id(alone.run_id).tags[VERDICT_TAG] == "passed"
    # A regressed version is no green success: the run fails on version_passes (blocking),
    # once every asset is materialised, and its tags say why (it succeeded before).
    assert not result.success and not checks["version_passes"].passed
    assert (tags[VERDICT_TAG], tags[EXIT_CODE_TAG]) == ("regressed", "5")
    assert checks["version_passes"].metadata["run_exit_code"].value == 5
    failed = {event.step_key for event in result.all_events if event.is_step_failure}
    assert failed == {"support_agent__benchmark_report"}
    assert not checks["no_regression"].passed
    flagged = checks["no_regression"].metadata["flagged_cases"].value
    assert flagged == "ord-missing, returns-policy"
    rows = query(
        environment,
        "select row_id, baseline_hash, baseline_passed, candidate_passed, verdict "
        "from support_agent.version_comparison where verdict != 'stable' order by row_id",
    )
    assert rows == [
        ("calc-discount", first_hash, 3, 1, "worth_watching"),  # not a gate failure
        ("ord-missing", first_hash, 3, 0, "likely_regression"),
        ("returns-policy", first_hash, 3, 0, "likely_regression"),
    ]
    # the report is made even though the version regressed (that is when it is read)
    html = report.metadata["report"].value
    assert html.endswith(f"reports/support_agent/{second[:12]}/report.html")
    assert report.metadata["run_pass_rate"].value == 0.5185  # 14/27, as the UI shows it
    # links the UI opens: the report, and the version's page, where `n8n-deepeval ui` serves
    # the results workspace
    workspace = f"http://127.0.0.1:{settings.reports_port()}"
    assert report.metadata["report_url"].value == (
        f"{workspace}/reports/support_agent/{second}/report.html"
    )
    assert report.metadata["workspace_url"].value == (
        f"{workspace}/benchmarks/support_agent/versions/{second}"
    )
    # every float the UI shows is rounded one way: 4 significant digits, costs to $0.000001
    shown = [
        (key, value.value)
        for event in result.get_asset_materialization_events()
        for key, value in event.step_materialization_data.materialization.metadata.items()
        if isinstance(value, dg.FloatMetadataValue)
    ]
    assert len(shown) > 10
    for key, value in shown:
        assert value == (round(value, 6) if "cost_usd" in key else float(f"{value:.4g}")), key
    assert "| returns-policy | 3/3 | 0/3 |" in report.metadata["summary"].value
