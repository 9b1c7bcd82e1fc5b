"""Which workflow version served a production execution."""

from __future__ import annotations

from n8n_deepeval_pipeline.online.scoring import served_by, version_id
from n8n_deepeval_pipeline.workflow.hashing import workflow_hash

WORKFLOW = {
    "nodes": [{"name": "A", "type": "n8n-nodes-base.set", "parameters": {}}],
    "connections": {},
    "active": True,
    "versionId": "draft",
    "activeVersionId": "v7",
}
# n8n stores the workflow it ran with every parameter's default filled in
AS_RUN = {**WORKFLOW, "nodes": [{**WORKFLOW["nodes"][0], "parameters": {"mode": "manual"}}]}


def test_an_execution_of_the_published_version_is_tagged_with_the_current_hash():
    current = workflow_hash(WORKFLOW)
    assert version_id(WORKFLOW) == "v7"  # the published version, not the draft
    execution = {"workflowVersionId": "v7", "workflowData": AS_RUN}
    assert served_by(execution, current, version_id(WORKFLOW)) == current
    assert workflow_hash(AS_RUN) != current


def test_an_execution_of_another_version_is_tagged_with_the_workflow_it_ran():
    current = workflow_hash(WORKFLOW)
    older = {"workflowVersionId": "v6", "workflowData": AS_RUN}
    assert served_by(older, current, "v7") == workflow_hash(AS_RUN)
    assert served_by({"workflowVersionId": "v6"}, current, "v7") == current  # n8n kept none
    assert version_id({**WORKFLOW, "active": False}) == "draft"
