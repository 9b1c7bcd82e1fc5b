"""The environment the zygote is started with, and so every worker: no credential in it.

A process's start-up environment stays readable in ``/proc/<pid>/environ`` for its whole
life (a fork inherits it), so credentials are left out before exec, not removed inside.
Workers need none: the judge's key reaches them inside its spec, with each task.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from n8n_deepeval_pipeline.redaction import redact

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
# Names that hold a credential: every provider's key variable (OPENAI_API_KEY,
# ANTHROPIC_API_KEY, N8N_API_KEY, a benchmark's MY_ANTHROPIC_KEY, …), tokens, passwords.
_CREDENTIAL_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(_|$)", re.IGNORECASE
)


def _carries_credential(name: str, value: str, secrets: Iterable[str]) -> bool:
    """Whether a variable holds a credential, by its name or by its value.

    By value: one of ``secrets`` (whatever the variable is called, e.g. a benchmark's
    ``apiKeyEnv``), or anything redaction would change (a URL's ``?token=``, user-info).
    """
    if name in _DROPPED_ENV or _CREDENTIAL_NAME.search(name):
        return True
    return redact(value, secrets) != value


def worker_environment(secrets: Iterable[str] = ()) -> dict[str, str]:
    """The environment of this process without credentials, plus DeepEval's quiet settings."""
    known = list(secrets)  # read once per variable
    env = {
        name: value
        for name, value in os.environ.items()
        if not _carries_credential(name, value, known)
    }
    env.update(_WORKER_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env
