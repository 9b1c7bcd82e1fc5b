"""The red team across versions: each vulnerability's and attack's breach rate, every attack.

Read from the tables the red team's assets store (``red_team_summary``: the rates with
their Wilson intervals, ``failOn`` and verdict against the baseline, as the run computed
them; ``red_team_results``: each attack as it was played).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline.red_team.rows import BreachRate, RedTeamResult
from n8n_deepeval_pipeline.workspace.store import Reader, model_rows, placeholders
from n8n_deepeval_pipeline.workspace.versions import StoredVersion


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class BreachHistory(_Frozen):
    """Breach rates of the versions whose attacks were played, oldest first."""

    versions: tuple[StoredVersion, ...]
    vulnerabilities: dict[str, dict[str, BreachRate]]  # vulnerability → version key → rate
    methods: dict[str, dict[str, BreachRate]]  # attack method → version key → rate


def breach_history(reader: Reader, schema: str, versions: list[StoredVersion]) -> BreachHistory:
    """The stored breach rates of every version (``versions`` in run order)."""
    hashes = [version.workflow_hash for version in versions]
    rows = model_rows(
        reader,
        BreachRate,
        schema,
        f"workflow_hash in ({placeholders(hashes)}) and kind in ('vulnerability', 'attack_method')",
        hashes,
    )
    played = {row.workflow_hash for row in rows}
    by_vulnerability: dict[str, dict[str, BreachRate]] = {}
    by_method: dict[str, dict[str, BreachRate]] = {}
    for row in rows:
        key = row.workflow_hash[:12]
        if row.kind == "vulnerability":
            by_vulnerability.setdefault(row.vulnerability or "", {})[key] = row
        else:
            by_method.setdefault(row.attack_method or "", {})[key] = row
    return BreachHistory(
        versions=tuple(version for version in versions if version.workflow_hash in played),
        vulnerabilities=dict(sorted(by_vulnerability.items())),
        methods=dict(sorted(by_method.items())),
    )


def attacks(reader: Reader, schema: str, version: StoredVersion) -> list[RedTeamResult]:
    """Every attack played on a version, by vulnerability, method and id."""
    results = model_rows(
        reader, RedTeamResult, schema, "workflow_hash = ?", [version.workflow_hash]
    )
    return sorted(
        results, key=lambda r: (r.vulnerability, r.attack_method or "", r.attack_id, r.run_index)
    )


def attack(
    reader: Reader, schema: str, version: StoredVersion, result_id: str
) -> RedTeamResult | None:
    """One attack played on a version, by its result id."""
    found = model_rows(
        reader,
        RedTeamResult,
        schema,
        "workflow_hash = ? and result_id = ?",
        [version.workflow_hash, result_id],
    )
    return found[0] if found else None
