"""The code location the UI loads, so that runs the CLI starts carry its origin.

The UI lists a job's runs by the repository label of their origin
(``__repository__@<location>``): a run without one is in the runs list but on no job,
partition or asset page.
"""

from __future__ import annotations

import os

from dagster._core.definitions.repository_definition.valid_definitions import (
    SINGLETON_REPOSITORY_NAME,
)
from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.workspace.load_target import ModuleTarget

# What `n8n-deepeval ui` passes to `dagster dev -m`; its location is named after it.
DEFINITIONS_MODULE = "n8n_deepeval_pipeline.orchestration.definitions"


def ui_job_origin(job_name: str) -> RemoteJobOrigin:
    """The origin the UI's workspace gives ``job_name`` (``dagster dev -m`` from here)."""
    target = ModuleTarget(
        module_name=DEFINITIONS_MODULE,
        attribute=None,
        working_directory=os.getcwd(),
        location_name=None,
    )
    (location,) = target.create_origins()
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME), job_name)
