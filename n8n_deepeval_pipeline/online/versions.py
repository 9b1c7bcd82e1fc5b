"""The workflow version that served a production execution, named by the pipeline's own hash.

n8n keeps with each execution the id of the version it ran (``workflowVersionId``) and a
copy of the workflow (``workflowData``). The copy is the workflow as n8n ran it, with every
parameter's default filled in (n8n 2.41.1 adds ``mode``, ``duplicateItem`` and
``includeOtherFields`` to a Set node, ``authentication`` and ``responseData`` to a
Webhook), so its hash is none of the versions the benchmark hashed from the saved
workflow. The version id is matched instead, in this order:

1. the versions the online sensor saw as the current workflow, each hashed as the benchmark
   hashes it (the sensor reads the workflow every tick and keeps the id → hash pairs in its
   cursor);
2. n8n's workflow history (``GET /workflows/{id}/versions/{versionId}``: the nodes and
   connections as saved), hashed the same way; n8n prunes it (versions older than 24 hours
   on the community edition, apart from the current and the published one), hence 1;
3. only when n8n gave no version id, or has neither kept nor shown that version, the hash
   of the stored copy stands in: a version apart from the others, but none the benchmark
   can register.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from n8n_deepeval_pipeline.workflow.hashing import WorkflowShapeError, workflow_hash

VersionMatch = Literal["version_id", "stored_copy"]
"""How an online score's version was named: by n8n's version id, or by the stored copy."""
MAX_KNOWN_VERSIONS = 500
"""Version id → hash pairs a cursor keeps (the newest): a workflow edited 500 times."""

SavedVersion = Callable[[str], Mapping[str, Any] | None]
"""n8n's saved version by its id (nodes and connections), or None when n8n has none."""


def version_id(workflow: Mapping[str, Any]) -> str | None:
    """n8n's id of the version its triggers run: the published one, else the only one."""
    found = workflow.get("activeVersionId") if workflow.get("active") else None
    found = found or workflow.get("versionId")
    return None if found is None else str(found)


def execution_version_id(execution: Mapping[str, Any]) -> str | None:
    """The id of the version that ran an execution (None: n8n stored none)."""
    found = execution.get("workflowVersionId")
    return None if found is None else str(found)


def remember(known: dict[str, str], version: str, digest: str) -> None:
    """Keep ``version`` → ``digest`` as the newest pair of ``known`` (the oldest go past a cap)."""
    known.pop(version, None)
    known[version] = digest
    for oldest in list(known)[:-MAX_KNOWN_VERSIONS]:
        del known[oldest]


def resolve(version: str | None, known: dict[str, str], saved: SavedVersion) -> str | None:
    """The hash of n8n's version ``version``: a known one, else its saved copy's.

    A hash read from n8n's history is kept in ``known``. None when there is no id, or n8n
    no longer has that version.
    """
    if version is None:
        return None
    if version in known:
        return known[version]
    found = saved(version)
    if found is None:
        return None
    try:
        digest = workflow_hash(found)
    except WorkflowShapeError:
        return None
    remember(known, version, digest)
    return digest


def stored_copy_hash(execution: Mapping[str, Any]) -> str | None:
    """The hash of the workflow copy n8n stored with an execution (defaults filled in)."""
    try:
        return workflow_hash(execution["workflowData"])
    except (KeyError, TypeError, WorkflowShapeError):
        return None
