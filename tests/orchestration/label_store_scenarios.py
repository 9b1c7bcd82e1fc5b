"""What every label store must do, whichever database keeps it (DuckDB here, PostgreSQL live).

``write_table(name, frame)`` stores a score table under the example's schema, as the
results' IO manager would have.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pandas as pd

from n8n_deepeval_pipeline.calibration.label_store import LabelStore
from n8n_deepeval_pipeline.online.scoring import OnlineScore
from n8n_deepeval_pipeline.red_team.rows import RedTeamResult
from n8n_deepeval_pipeline.tables.frames import to_frame
from n8n_deepeval_pipeline.tables.rows import HumanLabel, MetricScore
from tests.red_team.played_attacks import NOW, played

OLD, NEW = "1" * 64, "2" * 64
T0 = datetime(2026, 6, 11, 9, 0, tzinfo=UTC)


def score(version: str, row: str, metric: str, value: float, success: bool) -> MetricScore:
    return MetricScore(
        workflow_hash=version, run_id=f"{version}:{row}:0", case_id=f"{version}:{row}",
        metric=metric, metric_slug="g_eval", score=value, threshold=0.5, success=success,
        direction="higher_is_better", reason="r", error=None, error_kind=None, judge="j",
        dry_run=False, judge_calls=1, judge_retries=0, cached_calls=0, prompt_tokens=1,
        completion_tokens=1, tokens=2, cost_usd=None, latency_s=0.1, judge_agreement=0.5,
    )  # fmt: skip


def online(score_id: str, value: float) -> OnlineScore:
    return OnlineScore(
        workflow_hash=NEW, n8n_version_id=None, version_match="stored_copy", score_id=score_id,
        kind="execution", item_key="7", execution_ids=["7"], started_at=T0, scored_at=T0,
        metric="bias", metric_slug="bias", score=value, threshold=0.5, success=value <= 0.5,
        reason=None, error_kind=None, judge="j", dry_run=False, tokens=1, cost_usd=None,
    )  # fmt: skip


def label(run_id: str, metric: str, reviewer: str, passed: bool | None, rating=None) -> HumanLabel:
    return HumanLabel(
        workflow_hash=run_id.split(":")[0] if ":" in run_id else NEW, run_id=run_id,
        metric=metric, reviewer=reviewer, passed=passed, rating=rating, comment="c",
        labelled_at=T0, source="import",
    )  # fmt: skip


def labels_kept_and_joined(
    store: LabelStore, write_table: Callable[[str, pd.DataFrame], None]
) -> None:
    """Labels upserted, replaced and deleted; read back beside the scores their runs have."""
    assert store.labels() == [] and store.judged() == [] and store.scored([f"{OLD}:a:0"]) == {}
    first = [
        label(f"{OLD}:a:0", "helpfulness", "ann", True, rating=4),
        label(f"{OLD}:a:0", "helpfulness", "ben", False),
        label(f"{NEW}:a:0", "helpfulness", "ann", None, rating=3),
        label("execution:7", "bias", "ann", True),
        label(f"{NEW}:zz:0", "helpfulness", "ann", True),  # no score stored for it
    ]
    store.upsert(first)
    store.upsert([label(f"{OLD}:a:0", "helpfulness", "ben", True)])  # ben changed his mind
    assert len(store.labels()) == 5
    assert {(x.reviewer, x.passed) for x in store.labels() if x.run_id == f"{OLD}:a:0"} == {
        ("ann", True), ("ben", True)}  # fmt: skip
    assert store.labels()[0].labelled_at == T0  # a time zone-aware UTC time, as given
    write_table("metric_scores", to_frame(MetricScore, [
        score(OLD, "a", "helpfulness", 0.9, True), score(OLD, "a", "bias", 0.1, True),
        score(NEW, "a", "helpfulness", 0.2, False),
    ]))  # fmt: skip
    assert store.scored([f"{OLD}:a:0", f"{NEW}:a:0", f"{NEW}:zz:0"]) == {
        (f"{OLD}:a:0", "helpfulness"): OLD, (f"{OLD}:a:0", "bias"): OLD,
        (f"{NEW}:a:0", "helpfulness"): NEW,
    }  # fmt: skip
    write_table("online_scores", to_frame(OnlineScore, [online("execution:7", 0.3)]))
    judged = {(x.run_id.replace("1" * 63, "").replace("2" * 63, ""), x.reviewer): x
              for x in store.judged()}  # fmt: skip
    assert set(judged) == {("1:a:0", "ann"), ("1:a:0", "ben"), ("2:a:0", "ann"),
                           ("execution:7", "ann")}  # fmt: skip
    old = judged[("1:a:0", "ann")]
    assert (old.score, old.judge_passed, old.rating, old.kind, old.cluster) == (
        0.9, True, 4, "benchmark", "a")  # fmt: skip
    assert old.judge_agreement == 0.5 and old.case_id == f"{OLD}:a"
    production = judged[("execution:7", "ann")]
    assert (production.kind, production.direction, production.judge_passed) == (
        "online", "lower_is_better", True)  # fmt: skip
    assert store.scored(["execution:7"]) == {("execution:7", "bias"): NEW}
    # an undo: ann's label of the new version taken back, her earlier one restored
    store.take_back(
        [(f"{NEW}:a:0", "helpfulness", "ann")], [label(f"{NEW}:a:0", "helpfulness", "ann", False)]
    )
    store.take_back([(f"{OLD}:a:0", "helpfulness", "ben")], [])
    assert len(store.labels()) == 4
    assert [x.passed for x in store.labels() if x.run_id == f"{NEW}:a:0"] == [False]
    # a red team's played attack, labelled as red_team.review names it
    write_table("red_team_results", to_frame(RedTeamResult, [played(1, breached=True)]))
    attack = f"{NOW}:a1:0"
    store.upsert([label(attack, "red_team:Excessive Agency", "ann", False)])
    assert store.scored([attack]) == {(attack, "red_team:Excessive Agency"): NOW}
    (checked,) = [x for x in store.judged() if x.kind == "red_team"]
    assert (checked.judge_passed, checked.passed, checked.score, checked.cluster) == (
        False, False, 0.0, "a1")  # fmt: skip
