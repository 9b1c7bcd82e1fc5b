"""A family run's pieces: the call barrier, how a version's process is read, --variant."""

import threading
import time

import pytest

from n8n_deepeval_pipeline.console.exits import Refused
from n8n_deepeval_pipeline.console.family_run import chosen
from n8n_deepeval_pipeline.orchestration.call_barrier import (
    CALLS_START_TOGETHER,
    arrive,
    start_together,
)
from n8n_deepeval_pipeline.orchestration.family_run import _ended
from n8n_deepeval_pipeline.workflow.variants import Member


def member(name):
    return Member(None if name == "base" else name, {}, name[0] * 64)


def test_versions_start_calling_together_once_all_are_ready_or_gone(tmp_path):
    tags = {CALLS_START_TOGETHER: str(tmp_path)}
    said, started = [], {}

    def version(key, delay):
        time.sleep(delay)
        start_together(tags, key, 3, said.append)
        started[key] = time.monotonic()

    threads = [threading.Thread(target=version, args=(k, d)) for k, d in (("a", 0), ("b", 0.3))]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    assert not started  # two of three are ready: they wait
    arrive(tmp_path, "c")  # the third ended before it could call (a failed step)
    for thread in threads:
        thread.join(5)
    assert started.keys() == {"a", "b"}
    assert abs(started["a"] - started["b"]) < 0.2
    assert all(line.startswith("calling beside 2 other version(s)") for line in said)


def test_without_the_tag_nothing_waits_and_a_missing_version_stops_the_wait(tmp_path):
    said = []
    start_together({}, "a", 3, said.append)
    assert said == []
    start_together({CALLS_START_TOGETHER: str(tmp_path)}, "a", 2, said.append, wait_s=0.2)
    assert said == ["calling without the other versions: they were not ready after 0 s"]


def test_a_versions_process_is_read_from_its_last_line_or_its_exit_code():
    said = '{"completed": true, "failed_checks": [], "errors": [], "run_id": "r1"}'
    ended = _ended(member("nano"), "dagster noise\n" + said + "\n", 0)
    assert (ended.completed, ended.run_id) == (True, "r1")
    crashed = _ended(member("nano"), "", -9)
    assert not crashed.completed
    assert crashed.errors == (f"the process calling nano ({'n' * 12}) ended with exit code -9",)


def test_variant_picks_versions_by_name_in_the_benchmarks_order():
    members = [member("base"), member("fast"), member("terse")]
    assert [m.name for m in chosen(members, ("terse", "base"))] == ["base", "terse"]
    assert chosen(members, ()) == members
    with pytest.raises(Refused, match="--variant slow: not a version of this workflow"):
        chosen(members, ("slow",))
