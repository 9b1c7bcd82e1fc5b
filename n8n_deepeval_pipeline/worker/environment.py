"""The environment the zygote is started with, and so every worker: no credential in it.

A process's start-up environment stays readable in ``/proc/<pid>/environ`` for its whole
life (a fork inherits it), so credentials are left out before exec, not removed inside.
Workers need none: the judge's key reaches them inside its spec, with each task.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from n8n_deepeval_pipeline.redaction import is_secret_variable, redact

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]

# Settings DeepEval reads at import: no telemetry, no dotenv, no key file, no writes.
_WORKER_ENV = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    "PYTHONUNBUFFERED": "1",
}
# Removed so DeepEval cannot find a judge on its own: the judge comes only from model=.
_DROPPED_ENV = ("DEEPEVAL_UPDATE_WARNING_OPT_IN", "AZURE_OPENAI_ENDPOINT")


def _carries_credential(name: str, value: str, secrets: Iterable[str]) -> bool:
    """Whether a variable holds a credential, by its name or by its value.

    By value: one of ``secrets`` (whatever the variable is called, e.g. a benchmark's
    ``apiKeyEnv``), or anything redaction would change (a URL's ``?token=``, user-info).
    """
    if name in _DROPPED_ENV or is_secret_variable(name):
        return True
    # A secret too short to redact by value still is one when it is the whole value.
    return redact(value, secrets) != value or value in secrets


def worker_environment(secrets: Iterable[str] = ()) -> dict[str, str]:
    """The environment of this process without credentials, plus DeepEval's quiet settings."""
    known = set(secrets)  # read once per variable
    env = {
        name: value
        for name, value in os.environ.items()
        if not _carries_credential(name, value, known)
    }
    env.update(_WORKER_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env
