"""A family run's pieces: the call barrier, how a version's process is read, --variant, and
the exit code of a family whose reports are written again."""

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from n8n_deepeval_pipeline.console.exits import Refused
from n8n_deepeval_pipeline.console.family_run import FamilyOptions, chosen, run_family, say
from n8n_deepeval_pipeline.orchestration import family_run
from n8n_deepeval_pipeline.orchestration.call_barrier import (
    CALLS_START_TOGETHER,
    arrive,
    start_together,
)
from n8n_deepeval_pipeline.orchestration.local_runner import Materialised
from n8n_deepeval_pipeline.summary.gate import version_gate
from n8n_deepeval_pipeline.summary.outcome import Limits, version_outcome
from n8n_deepeval_pipeline.summary.run_summary import summarise
from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError
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


def test_a_version_whose_process_dies_is_failed_with_its_exit_code_and_last_lines(
    tmp_path, monkeypatch, capfd
):
    # A process that aborted after it reported its calls done (a variant's did, exit -6,
    # once in five runs) was a version missing from the matrix, its Dagster run a SUCCESS.
    monkeypatch.setattr(family_run, "CALLS_MODULE", "tests.orchestration.fake_version_process")
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    members = [member("clean"), member("aborts"), member("dies")]
    clean, aborted, died = family_run.call_side_by_side(tmp_path / "b.yaml", members, True, False)
    assert (clean.completed, clean.run_id, clean.errors) == (True, "clean", ())
    assert not aborted.completed and aborted.run_id == "aborts"
    headline, *tail = aborted.errors
    assert headline.startswith(
        f"the process calling aborts ({'a' * 12}) ended abnormally after its work "
        "(exit code -6, SIGABRT); its log: "
    )
    assert tail[-1] == "terminate called after throwing an instance of ''"
    assert not died.completed and died.run_id is None
    assert "ended before its result (exit code 7)" in died.errors[0]
    logs = sorted((tmp_path / "home" / "logs").iterdir())
    said = " ".join(aborted.errors + died.errors)
    assert len(logs) == 2 and all(str(log) in said for log in logs)
    printed = capfd.readouterr().err  # each version's progress, passed on as it came
    assert all(f"[{name}] called 4/4" in printed for name in ("clean", "aborts", "dies"))


def test_variant_picks_versions_by_name_in_the_benchmarks_order():
    members = [member("base"), member("fast"), member("terse")]
    assert [m.name for m in chosen(members, ("terse", "base"))] == ["base", "terse"]
    assert chosen(members, ()) == members
    with pytest.raises(Refused, match="--variant slow: not a version of this workflow"):
        chosen(members, ("slow",))


class FakeFamilyRunner:
    """A test double of BenchmarkRunner for a family of base and fast, no red team: every
    version's calls and scoring complete; the re-write of base's report ends ``rewrite``."""

    benchmark = SimpleNamespace(name="bench")

    def __init__(self, rewrite):
        self.rewrite = rewrite
        self.members = [member("base"), member("fast")]

    def register_current_family(self):
        return self.members

    def asset_names(self):
        return ["metric_scores", "benchmark_report"]

    def materialise(self, key, *args, only=(), **kwargs):
        if only == ("benchmark_report",):
            return self.rewrite
        return Materialised(completed=True, failed_checks=(), errors=())

    def outcome(self, key, limits, summary):
        return version_outcome(summary, version_gate("regression", None, []), None, limits)

    def variant_matrix(self, key):
        raise UnknownVersionError("no matrix in this double")


def _run(rewrite, capsys):
    runner = FakeFamilyRunner(rewrite)
    options = FamilyOptions(side_by_side=False, judge_cache=True, verbose=False,
                            limits=Limits.of(0.05))  # fmt: skip

    def judged(runner, key, materialised):
        return summarise("bench", key * 4, [], [], [], [])

    ran = run_family(runner, Path("bench.yaml"), (), options, judged)
    with pytest.raises((SystemExit, Refused)) as ended:
        say(ran, Path("bench.yaml"), as_json=True)
    capsys.readouterr()
    return ran, ended.value


def test_a_report_that_cannot_be_written_again_fails_the_family_run_with_exit_4(capsys):
    completed = Materialised(completed=True, failed_checks=(), errors=())
    ran, ended = _run(completed, capsys)
    assert (ran.failed, ended.code) == ([], 0)  # the outcomes pass: run exits 0

    broken = Materialised(completed=False, failed_checks=(), errors=("ValueError: no template",))
    ran, ended = _run(broken, capsys)
    assert isinstance(ended, Refused) and ended.exit_code == 4
    assert (
        ended.message == "base: its report could not be written again:\n  ValueError: no template"
    )
    assert [failed.name for failed in ran.failed] == ["base"]
    assert ran.outcome.exit_code == 4 and list(ran.outcomes) == ["base", "fast"]
