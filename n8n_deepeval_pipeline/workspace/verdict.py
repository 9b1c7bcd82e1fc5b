"""The verdict of a version against its baseline: the one place every page asks for it.

``version_verdicts`` gives each version's outcome (``summary.outcome``) as ``compare`` and
the report build it (the versions compared case by case, the red team's stored rates and
errored attacks, incompleteness at ``checks.maxErrorRate``), reading only what the
outcome depends on: each run's pass flag by dataset row, each version's score rows
counted with the failed ones loaded, and its red team's rates and errors. While
``calibration.gate`` keeps metrics from deciding, each run is decided again without them
from its aggregate's metric outcomes by ``tables.comparison.run_passes``, as ``compare``
decides it. Pages render the ``VersionOutcome`` it returns and never decide a verdict
themselves.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.red_team.breach_rates import red_team_outcome
from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
from n8n_deepeval_pipeline.statistics.version_comparison import (
    RunOutcome,
    VersionComparison,
    VersionRuns,
    compare_versions,
)
from n8n_deepeval_pipeline.summary.gate import comparison_gate
from n8n_deepeval_pipeline.summary.outcome import (
    Limits,
    RedTeamOutcome,
    VersionOutcome,
    incompleteness,
)
from n8n_deepeval_pipeline.summary.run_summary import ErrorSummary, errors_among
from n8n_deepeval_pipeline.tables.comparison import run_passes
from n8n_deepeval_pipeline.tables.rows import MetricScore
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkSettings
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, placeholders, table
from n8n_deepeval_pipeline.workspace.versions import StoredVersion

# A run as the verdict reads it: its pass flag (frozen models, shared by every run).
_PASSED, _FAILED = RunOutcome(passed=True), RunOutcome(passed=False)


class VersionVerdict(BaseModel):
    """A version's outcome against its baseline, and each case's verdict in that comparison."""

    model_config = ConfigDict(frozen=True)

    outcome: VersionOutcome
    comparison: VersionComparison | None  # None: no baseline


def version_verdicts(
    reader: Reader,
    schema: str,
    benchmark: BenchmarkSettings,
    versions: Sequence[StoredVersion],
    baselines: Mapping[str, str | None],
    not_deciding: Collection[str] = (),
) -> dict[str, VersionVerdict]:
    """Each version's verdict against its baseline (``baselines``: version key → key).

    ``versions`` holds the ones asked for and their baselines; ``not_deciding``: the
    metrics ``calibration.gate`` keeps from deciding now (``calibration_gate``).
    """
    by_key = {version.key: version for version in versions}
    asked = [key for key in baselines if key in by_key]
    needed = set(asked) | {b for key in asked if (b := baselines[key]) in by_key}
    hashes = [by_key[key].workflow_hash for key in sorted(needed)]
    runs = _runs_by_row(reader, schema, hashes, not_deciding)
    errors = _errors(reader, schema, [by_key[key].workflow_hash for key in asked])
    red_teams = _red_teams(reader, schema, benchmark, [by_key[key].workflow_hash for key in asked])
    limits = Limits.of(benchmark.max_error_rate)
    found = {}
    for key in asked:
        candidate, base = by_key[key], by_key.get(baselines[key] or "")
        # What the runner's outcome does for `compare` and the report, keeping the comparison.
        comparison = (
            compare_versions(runs[base.workflow_hash], runs[candidate.workflow_hash])
            if base
            else None
        )
        red_team = red_teams.get(candidate.workflow_hash)
        outcome = VersionOutcome(
            benchmark=benchmark.name,
            workflow_hash=candidate.workflow_hash,
            variant=candidate.variant,
            runs=candidate.pass_rate.runs,
            pass_rate=candidate.pass_rate.rate,
            gate=comparison_gate(
                benchmark.fail_on, base.workflow_hash if base else None, comparison
            ),
            red_team=red_team,
            incomplete=incompleteness(errors[candidate.workflow_hash], red_team, limits),
            limits=limits,
        )
        found[key] = VersionVerdict(outcome=outcome, comparison=comparison)
    return found


# An attack's long texts, which the verdict does not read.
_ATTACK_TEXTS = ("input", "actual_output", "turns", "reason")


def _red_teams(
    reader: Reader, schema: str, benchmark: BenchmarkSettings, hashes: list[str]
) -> dict[str, RedTeamOutcome]:
    """Each version's red-team outcome from its stored rates and attacks (none: not played)."""
    if not hashes:
        return {}
    within = f"workflow_hash in ({placeholders(hashes)})"
    rates = model_rows(reader, BreachRate, schema, f"{within} and kind = 'vulnerability'", hashes)
    results = model_rows(reader, RedTeamResult, schema, within, hashes, _ATTACK_TEXTS)
    return {
        digest: red_team_outcome(
            [rate for rate in rates if rate.workflow_hash == digest],
            played,
            benchmark.fail_on,
        )
        for digest in hashes
        if (played := [result for result in results if result.workflow_hash == digest])
    }


def _runs_by_row(
    reader: Reader, schema: str, hashes: list[str], not_deciding: Collection[str]
) -> dict[str, VersionRuns]:
    """Each version's runs by dataset row, as ``tables.comparison.version_runs`` groups them.

    Only each run's pass flag is read (a version's metric results explain its cases' drops,
    they decide no verdict), unless ``calibration.gate`` keeps metrics from deciding now:
    then its metric outcomes too, and it is decided again without them (``run_passes``).
    """
    found: dict[str, dict[str, list[RunOutcome]]] = {digest: defaultdict(list) for digest in hashes}
    if not hashes:
        return {}
    decided_again = ", a.pass_rule, a.metrics" if not_deciding else ""
    for record in reader.records(
        f"select a.workflow_hash, e.row_id, a.overall_success{decided_again} "
        f"from {table(schema, 'run_aggregates')} as a "
        f"join {table(schema, 'expanded_runs')} as e "
        "on e.workflow_hash = a.workflow_hash and e.run_id = a.run_id "
        # Both sides named: PostgreSQL carries an equality across a join, not a list.
        f"where a.workflow_hash in ({placeholders(hashes)}) "
        f"and e.workflow_hash in ({placeholders(hashes)}) order by a.run_id",
        [*hashes, *hashes],
    ):
        passed = bool(record["overall_success"])
        if not_deciding:
            outcomes = json.loads(record["metrics"]) if record["metrics"] else []
            passed = run_passes(outcomes, str(record["pass_rule"]), passed, not_deciding)
        found[str(record["workflow_hash"])][str(record["row_id"])].append(
            _PASSED if passed else _FAILED
        )
    return {digest: dict(rows) for digest, rows in found.items()}


def _errors(reader: Reader, schema: str, hashes: list[str]) -> dict[str, ErrorSummary]:
    """Each version's score errors, counted in the database; only failed rows are loaded."""
    if not hashes:
        return {}
    counts = {
        str(record["workflow_hash"]): (int(record["scores"]), int(record["runs"]))
        for record in reader.records(
            "select workflow_hash, count(*) as scores, count(distinct run_id) as runs "
            f"from {table(schema, 'metric_scores')} "
            f"where workflow_hash in ({placeholders(hashes)}) group by workflow_hash",
            hashes,
        )
    }
    failed: dict[str, list[MetricScore]] = defaultdict(list)
    for score in model_rows(
        reader,
        MetricScore,
        schema,
        f"workflow_hash in ({placeholders(hashes)}) "
        "and error_kind is not null and error_kind <> ''",
        hashes,
    ):
        failed[score.workflow_hash].append(score)
    return {digest: errors_among(failed[digest], *counts.get(digest, (0, 0))) for digest in hashes}
