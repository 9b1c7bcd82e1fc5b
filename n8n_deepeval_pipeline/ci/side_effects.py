"""Whether a benchmark's run can act on the world: a CI job runs only those that cannot.

A pull request's job runs unreviewed changes on every push, so it runs a benchmark only
when its workflow calls are side-effect free: recorded outputs, or the harness copy with
every node that acts on a real service mocked (``mocks: services``). A webhook target
calls the workflow as production does, e-mails, tickets and payments included.
"""

from __future__ import annotations

from n8n_deepeval_pipeline.benchmark.config import Benchmark, RecordedTarget
from n8n_deepeval_pipeline.benchmark.n8n_target import WorkflowTarget


def acts_on_the_world(benchmark: Benchmark) -> str | None:
    """Why the benchmark's run could act on real services, or None when it cannot."""
    target = benchmark.target
    if isinstance(target, RecordedTarget):
        return None
    if isinstance(target, WorkflowTarget):
        if target.mocks.services:
            return None
        return (
            "its n8n_workflow target runs the harness copy with its service nodes acting "
            "(set `mocks: services` on the target to mock every node that acts on a real "
            "service)"
        )
    return (
        f"its {target.type} target calls the workflow as production does, side effects "
        "included (use an n8n_workflow target with `mocks: services`, or recorded outputs)"
    )
