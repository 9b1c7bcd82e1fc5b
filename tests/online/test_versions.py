"""Which workflow version served a production execution: n8n's version id, matched to the
pipeline's own hash of the saved workflow, never the hash of the copy n8n ran."""

from __future__ import annotations

from datetime import UTC, datetime

from n8n_deepeval_pipeline.online.cursor import ScoreItem
from n8n_deepeval_pipeline.online.scoring import served_version
from n8n_deepeval_pipeline.online.versions import (
    MAX_KNOWN_VERSIONS,
    remember,
    resolve,
    stored_copy_hash,
    version_id,
)
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash

SAVED = {
    "nodes": [
        {"name": "Answer", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [0, 0],
         "parameters": {"assignments": {"assignments": []}, "options": {}}},
    ],
    "connections": {},
}  # fmt: skip
WORKFLOW = {**SAVED, "active": True, "versionId": "draft", "activeVersionId": "v7"}
# n8n 2.41.1 stores the workflow it ran with every parameter's default filled in
AS_RUN = {
    **SAVED,
    "nodes": [{**SAVED["nodes"][0], "id": "n1", "parameters": {
        "mode": "manual", "duplicateItem": False, "includeOtherFields": False,
        **SAVED["nodes"][0]["parameters"]}}],
}  # fmt: skip


def item(version: str | None = None, digest: str | None = None) -> ScoreItem:
    return ScoreItem(kind="execution", key="1", execution_ids=[1],
                     started_at=datetime(2026, 11, 30, tzinfo=UTC), n8n_version_id=version,
                     workflow_hash=digest)  # fmt: skip


def test_the_published_version_id_names_the_workflow_its_triggers_run():
    assert version_id(WORKFLOW) == "v7"  # the published version, not the draft
    assert version_id({**WORKFLOW, "active": False}) == "draft"
    assert version_id({"nodes": []}) is None


def test_a_version_is_named_by_its_saved_copy_s_hash_not_the_defaults_n8n_ran_with():
    history = {"v6": SAVED}
    asked: list[str] = []

    def saved(version: str):
        asked.append(version)
        return history.get(version)

    known: dict[str, str] = {}
    assert resolve("v6", known, saved) == workflow_hash(SAVED)
    assert workflow_hash(AS_RUN) != workflow_hash(SAVED)  # why the copy cannot name it
    assert resolve("v6", known, saved) == workflow_hash(SAVED) and asked == ["v6"]  # kept
    assert known == {"v6": workflow_hash(SAVED)}
    assert resolve("v5", known, saved) is None  # pruned from n8n's history
    assert resolve(None, known, saved) is None


def test_the_known_versions_keep_the_newest_pairs_only():
    known: dict[str, str] = {}
    for number in range(MAX_KNOWN_VERSIONS + 3):
        remember(known, f"v{number}", f"h{number}")
    remember(known, "v5", "h5")  # seen again: the newest now
    assert len(known) == MAX_KNOWN_VERSIONS
    assert "v0" not in known and list(known)[-1] == "v5"


def test_an_item_s_rows_carry_the_version_the_sensor_named_else_the_stored_copy():
    execution = {"id": "1", "workflowVersionId": "v6", "workflowData": AS_RUN}
    named = served_version(item("v6", workflow_hash(SAVED)), [execution], "current")
    assert (named.workflow_hash, named.n8n_version_id, named.version_match) == (
        workflow_hash(SAVED), "v6", "version_id")  # fmt: skip
    unnamed = served_version(item("v5"), [execution], "current")
    assert (unnamed.workflow_hash, unnamed.version_match) == (workflow_hash(AS_RUN), "stored_copy")
    assert stored_copy_hash(execution) == workflow_hash(AS_RUN)
    nothing = served_version(item(), [], "current")  # n8n deleted the execution since
    assert (nothing.workflow_hash, nothing.n8n_version_id) == ("current", None)
