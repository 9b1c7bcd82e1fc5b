"""A version's family seen from one of its members, for the head-to-head metrics.

A head-to-head metric (Arena G-Eval) sets a run beside the same row's run, same run
index, of another member of the family: the workflow itself (``base``) or one of its
variants. Members are found in the stored snapshots (a variant's names its base's hash),
their runs in the stored outputs. Positions swap on odd run indexes, so that a judge's
preference for the first (or second) answer cancels over a case's runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from n8n_deepeval_pipeline.evaluation import HeadToHead
from n8n_deepeval_pipeline.tables.ids import row_of_run, run_index_of
from n8n_deepeval_pipeline.tables.rows import AgentOutput, ExpandedRun, WorkflowSnapshot
from n8n_deepeval_pipeline.workflow.hashing import version_key
from n8n_deepeval_pipeline.workflow.variants import BASE

RunKey = tuple[str, int]  # (row id, run index)


@dataclass(frozen=True)
class Family:
    """One version's name in its family, and every member's stored runs by name."""

    own: str
    outputs: dict[str, dict[RunKey, AgentOutput]]

    def opponent(self, run: ExpandedRun, against: str) -> HeadToHead | str:
        """The other side of ``run`` against member ``against``, or why there is none."""
        theirs = self.outputs.get(against)
        if theirs is None:
            return (
                f"no stored outputs of {against} for this workflow: run it, then score this "
                "version again"
            )
        output = theirs.get((run.row_id, run.run_index))
        if output is None:
            return f"{against} has no run {run.run_index} of row {run.row_id!r}"
        if output.error is not None:
            return f"{against}'s run {run.run_index} of row {run.row_id!r} failed: {output.error}"
        return HeadToHead(
            name=self.own,
            opponent=against,
            opponent_output=output.actual_output,
            opponent_steps=output.intermediate_steps,
            opponent_first=run.run_index % 2 == 1,
        )


def family_of(
    version: str, snapshots: list[WorkflowSnapshot], outputs: list[AgentOutput]
) -> Family:
    """The family of ``version`` (a key or hash) from every stored version's rows.

    A name that more than one stored version had (variants defined otherwise over time)
    is the one read last.
    """
    key = version_key(version)
    by_key = {version_key(snapshot.workflow_hash): snapshot for snapshot in snapshots}
    own = by_key.get(key)
    base = (own.base_hash or own.workflow_hash) if own is not None else None
    members: dict[str, str] = {}  # name → version key
    for snapshot in sorted(by_key.values(), key=lambda row: row.fetched_at):
        if snapshot.workflow_hash == base or (base and snapshot.base_hash == base):
            members[snapshot.variant or BASE] = version_key(snapshot.workflow_hash)
    runs: dict[str, dict[RunKey, AgentOutput]] = {}  # only members with stored outputs
    names = {member: name for name, member in members.items()}
    for output in outputs:
        name = names.get(version_key(output.workflow_hash))
        if name is not None:
            run: RunKey = (row_of_run(output.run_id), run_index_of(output.run_id))
            runs.setdefault(name, {})[run] = output
    own_name = (own.variant or BASE) if own is not None else BASE
    return Family(own_name, runs)
