"""What `run` and `backfill` exit with and say, for each way a version can end.

The runner is a stand-in: each test says how materialising a version ended and which
score rows it left, as Dagster and the stored tables would.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field

import pytest
import yaml
from click.testing import CliRunner

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.cli import main
from n8n_deepeval_pipeline.orchestration import local_runner
from n8n_deepeval_pipeline.orchestration.local_runner import Materialised
from n8n_deepeval_pipeline.summary.gate import version_gate
from n8n_deepeval_pipeline.summary.outcome import Limits, VersionOutcome, version_outcome
from n8n_deepeval_pipeline.summary.run_summary import BenchmarkSummary, summarise
from n8n_deepeval_pipeline.tables.rows import MetricScore

CURRENT, OLDER = "a" * 64, "b" * 64
COMPLETED = Materialised(completed=True, failed_checks=(), errors=())
FULL_DISK = Materialised(
    completed=False,
    failed_checks=(),
    errors=("IOException: IO Error: Could not write file: No space left on device",),
)


def score(run: int, error_kind: str | None = None, error: str | None = None) -> MetricScore:
    return MetricScore(
        workflow_hash=CURRENT, run_id=f"{CURRENT}:r:{run}", case_id=f"{CURRENT}:r",
        metric="helpfulness", metric_slug="g_eval", score=None if error_kind else 1.0,
        threshold=0.5, success=error_kind is None, direction="higher_is_better", reason=None,
        error=error, error_kind=error_kind, judge="openai:gpt-4o-mini", dry_run=False,
        judge_calls=1, judge_retries=0, cached_calls=0, prompt_tokens=0, completion_tokens=0,
        tokens=0, cost_usd=None, latency_s=0.0,
    )  # fmt: skip


JUDGED = [score(run) for run in range(40)]
# the judge went down for the last 2 of 40 scores (5%, not above checks.maxErrorRate)
OUTAGE = JUDGED[:38] + [score(run, "judge_unavailable", "circuit open") for run in (38, 39)]


@dataclass
class FakeRunner:
    """A runner whose versions end as told: how each materialised, the scores each left."""

    benchmark: Benchmark
    ended: dict[str, Materialised]
    scores: dict[str, list[MetricScore]]
    flagged: dict[str, list[str]] = field(default_factory=dict)  # failing the gate against OLDER
    materialised: list[str] = field(default_factory=list)

    def register_current_version(self, workflow_hash: str | None = None) -> str:
        return CURRENT

    def known_versions(self) -> list[str]:
        return list(self.ended)

    def versions_to_backfill(self, current: set[str]) -> tuple[list[str], list[str]]:
        return list(self.ended), []  # every version has stored outputs

    def materialise(
        self,
        partition: str,
        from_asset: str | None = None,
        verbose: bool = False,
        regenerate_attacks: bool = False,
        limits: Limits | None = None,
    ) -> Materialised:
        self.materialised.append(partition)
        return self.ended[partition]

    def summary(self, partition: str) -> BenchmarkSummary:
        return summarise(self.benchmark.name, partition, self.scores[partition], [], [], [])

    def outcome(
        self,
        partition: str,
        limits: Limits | None = None,
        summary: BenchmarkSummary | None = None,
    ) -> VersionOutcome:
        """The outcome as the runner builds it: the gate against OLDER, no red team."""
        flagged = self.flagged.get(partition, [])
        gate = version_gate(self.benchmark.compare.fail_on, OLDER, flagged)
        limits = limits or Limits.of(self.benchmark.checks.max_error_rate)
        return version_outcome(summary or self.summary(partition), gate, None, limits)


@pytest.fixture
def flagged_cases() -> dict[str, list[str]]:
    """The cases compare.failOn flags in a version, against OLDER (none unless a test says)."""
    return {}


@pytest.fixture
def versions(monkeypatch, tmp_path, flagged_cases):
    """Make the CLI's runner end each version as the test sets it in the returned dicts."""
    ended: dict[str, Materialised] = {}
    scores: dict[str, list[MetricScore]] = {}
    flagged = flagged_cases
    runners: list[FakeRunner] = []

    def fake_runner(path, instance, judge_cache=True, selection=None, benchmark=None):
        runners.append(FakeRunner(benchmark, ended, scores, flagged))
        return runners[-1]

    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("n8n_deepeval_pipeline.console.benchmarks.runner", fake_runner)
    monkeypatch.setattr(local_runner, "local_instance", contextlib.nullcontext)
    return ended, scores, runners


def test_backfill_during_a_judge_outage_exits_3_and_names_the_incomplete_version(
    example_copy, versions
):
    ended, scores, _ = versions
    ended.update({OLDER: COMPLETED, CURRENT: COMPLETED})
    scores.update({OLDER: JUDGED, CURRENT: OUTAGE})
    done = CliRunner().invoke(main, ["backfill", str(example_copy)])
    assert done.exit_code == 3, done.output
    assert "backfilled" not in done.stdout
    assert done.stderr.splitlines()[-1] == (
        f"workflow {CURRENT[:12]}: incomplete: 2 of 40 scores have no judgement: the judge "
        "was unavailable for 2 (--max-error-rate sets how many unjudged scores are acceptable)"
    )


def test_backfill_on_a_full_disk_exits_4_with_the_one_line_and_goes_on(example_copy, versions):
    ended, _, runners = versions
    ended.update({OLDER: FULL_DISK, CURRENT: FULL_DISK})
    done = CliRunner().invoke(main, ["backfill", str(example_copy)])
    assert done.exit_code == 4
    home = example_copy.parent.parent / "home"
    assert done.stderr.splitlines()[2:] == [  # after the two progress lines, said once
        f"Error: no space left under {home}: free some space and run again "
        "(the rows stored before are kept)"
    ]
    assert runners[0].materialised == [OLDER, CURRENT]


def test_backfill_of_complete_versions_exits_0(example_copy, versions):
    ended, scores, _ = versions
    ended.update({OLDER: COMPLETED, CURRENT: COMPLETED})
    scores.update({OLDER: JUDGED, CURRENT: JUDGED})
    done = CliRunner().invoke(main, ["backfill", str(example_copy)])
    assert (done.exit_code, done.stdout) == (0, "backfilled 2 version(s)\n")


def test_run_says_the_validation_warnings_on_stderr_as_validate_does(example_copy, versions):
    ended, scores, _ = versions
    ended[CURRENT], scores[CURRENT] = COMPLETED, JUDGED
    document = yaml.safe_load(example_copy.read_text())
    document["compare"] = {"failOn": "regression"}  # out of reach with runsPerRow 3
    example_copy.write_text(yaml.safe_dump(document))
    validated = CliRunner().invoke(main, ["validate", str(example_copy)])
    warning = f"{example_copy}: warning: compare.failOn: regression can never fire with "
    assert validated.stderr.startswith(warning)
    done = CliRunner().invoke(main, ["run", str(example_copy), "--json"])
    assert done.exit_code == 0, done.output
    assert validated.stderr in done.stderr
    assert json.loads(done.stdout)["runs"] == 0  # the warning stays out of the JSON


def test_an_incomplete_run_that_also_regressed_exits_3_and_says_both(
    example_copy, versions, flagged_cases
):
    ended, scores, _ = versions
    ended[CURRENT] = Materialised(completed=True, failed_checks=("no_regression",), errors=())
    scores[CURRENT] = OUTAGE
    flagged_cases[CURRENT] = ["ord-missing"]
    done = CliRunner().invoke(main, ["run", str(example_copy)])
    assert done.exit_code == 3, done.output
    assert done.stderr.splitlines()[-2:] == [
        f"likely_regression against baseline {OLDER[:12]}: ord-missing "
        f"(1 case; `n8n-deepeval compare {example_copy}` shows why)",
        "incomplete: 2 of 40 scores have no judgement: the judge was unavailable for 2 "
        "(--max-error-rate sets how many unjudged scores are acceptable)",
    ]


def test_a_regressed_run_names_the_flagged_cases_and_the_baseline(
    example_copy, versions, flagged_cases
):
    ended, scores, _ = versions
    ended[CURRENT] = Materialised(completed=True, failed_checks=("no_regression",), errors=())
    scores[CURRENT] = JUDGED
    flagged_cases[CURRENT] = ["ord-missing", "returns-policy"]
    done = CliRunner().invoke(main, ["run", str(example_copy)])
    assert done.exit_code == 5, done.output
    assert done.stderr.splitlines()[-1] == (
        f"likely_regression against baseline {OLDER[:12]}: ord-missing, returns-policy "
        f"(2 cases; `n8n-deepeval compare {example_copy}` shows why)"
    )
    as_json = CliRunner().invoke(main, ["run", str(example_copy), "--json"])
    assert as_json.exit_code == 5
    outcome = json.loads(as_json.stdout)["outcome"]
    assert outcome["gate"] == {
        "fail_on": "likely_regression",
        "baseline": OLDER[:12],
        "flagged_cases": ["ord-missing", "returns-policy"],
        "has_regression": True,
    }
    assert (outcome["verdict"], outcome["incomplete"]) == ("regressed", None)
    assert outcome["exit_codes"] == {"run": 5, "compare": 1}


def test_two_runs_of_one_version_each_say_their_own_judge_calls_and_the_attempts_total(
    example_copy, versions
):
    from n8n_deepeval_pipeline.tables.judge_spend import JudgeSpend

    ended, scores, _ = versions
    scores[CURRENT] = JUDGED  # the stored rows: 40 calls, whichever run wrote them last
    spend = {
        "run-a": JudgeSpend(evaluations=30, judge_calls=30),
        "run-b": JudgeSpend(evaluations=40, judge_calls=40),
    }
    said = {}
    for run_id in ("run-a", "run-b"):
        ended[CURRENT] = COMPLETED._replace(run_id=run_id, attempts=spend)
        done = CliRunner().invoke(main, ["run", str(example_copy), "--json"])
        assert done.exit_code == 0, done.output
        summary = json.loads(done.stdout)
        said[run_id] = (summary["run_id"], summary["attempts"][run_id]["judge_calls"])
        assert summary["judge_calls"] == 40
        text = CliRunner().invoke(main, ["run", str(example_copy)]).stdout
        assert "judge over 2 attempts · calls 70 (+0 cached)" in text
    assert said == {"run-a": ("run-a", 30), "run-b": ("run-b", 40)}
