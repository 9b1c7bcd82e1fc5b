"""Where things live on disk: the working folder, the DuckDB file, the benchmarks.

Defaults sit under ``.n8n-deepeval/`` in the current directory; each can be moved with
an environment variable so the CLI, the UI and the daemon share one instance and one
database.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import quote

HOME_ENV = "N8N_DEEPEVAL_HOME"
DATABASE_ENV = "N8N_DEEPEVAL_DUCKDB"
BENCHMARKS_ENV = "N8N_DEEPEVAL_BENCHMARKS"
REPORTS_PORT_ENV = "N8N_DEEPEVAL_REPORTS_PORT"
REPORTS_HOST = "127.0.0.1"
_REPORTS_PORT = 3001  # beside the UI's 3000, which `n8n-deepeval ui` then does not take
JUDGE_STATE_ENV = "N8N_DEEPEVAL_JUDGE_STATE"
PROFILE_ENV = "N8N_DEEPEVAL_PROFILE"
POSTGRES_URL_ENV = "N8N_DEEPEVAL_POSTGRES_URL"
REDIS_URL_ENV = "N8N_DEEPEVAL_REDIS_URL"
LOCAL_EXECUTOR_ENV = "N8N_DEEPEVAL_LOCAL_EXECUTOR"
PROFILES = ("local", "distributed", "kubernetes")
_REPO_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BENCHMARK_FILE_PATTERNS = ("benchmark.yaml", "benchmark.yml", "*.benchmark.yaml", "*.benchmark.yml")


PRIVATE_DIR_MODE = 0o700  # the results and the judge state hold every prompt and answer
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents readable by this user only.

    A folder that exists keeps its mode: one shared on purpose stays shared.
    """
    for folder in reversed([path, *path.parents]):
        if not folder.exists():
            folder.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """Create an empty ``path`` readable by this user only, unless it exists."""
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
    return path


def home() -> Path:
    """The project's working folder (default ``./.n8n-deepeval``)."""
    return Path(os.environ.get(HOME_ENV, ".n8n-deepeval")).resolve()


def dagster_home() -> Path:
    """The local Dagster instance the CLI and the UI share (``$DAGSTER_HOME`` if set)."""
    configured = os.environ.get("DAGSTER_HOME")
    return Path(configured).resolve() if configured else home() / "dagster"


def point_at_homes() -> Path:
    """Export ``DAGSTER_HOME`` and the working folder as absolute paths; the Dagster home.

    Every process started after (the UI's code servers, the worker pool) then finds the
    same instance and database whatever its working directory. Nothing is created: a
    command refused before it opens the instance leaves no folder behind.
    """
    dagster = dagster_home()
    os.environ["DAGSTER_HOME"] = str(dagster)
    os.environ[HOME_ENV] = str(home())
    return dagster


def local_executor() -> str:
    """How the ``local`` profile runs steps: ``in_process`` (default) or ``multiprocess``."""
    return os.environ.get(LOCAL_EXECUTOR_ENV, "in_process").strip() or "in_process"


def steps_run_in_this_process() -> bool:
    """Whether a run started here runs its steps in this process (the local default)."""
    with contextlib.suppress(ValueError):  # a bad profile is refused where it is used
        return profile() == "local" and local_executor() == "in_process"
    return False


def database_path() -> Path:
    """The DuckDB file that holds every benchmark's tables."""
    configured = os.environ.get(DATABASE_ENV)
    return Path(configured).resolve() if configured else home() / "results.duckdb"


def reports_dir() -> Path:
    """Where each version's report is written (``<benchmark>/<hash prefix>/``)."""
    return home() / "reports"


def reports_port() -> int:
    """The port `n8n-deepeval ui` serves the reports folder on (``$N8N_DEEPEVAL_REPORTS_PORT``)."""
    configured = os.environ.get(REPORTS_PORT_ENV, "").strip()
    if not configured:
        return _REPORTS_PORT
    if not configured.isdigit() or not 0 < int(configured) < 65536:
        raise ValueError(f"{REPORTS_PORT_ENV}={configured!r}: give a port from 1 to 65535")
    return int(configured)


def report_url(page: Path) -> str | None:
    """Where `n8n-deepeval ui` serves a report file; None for one outside the reports folder.

    Known before the UI starts, so that a run from the CLI records the same link.
    """
    try:
        relative = page.resolve().relative_to(reports_dir())
    except ValueError:
        return None
    return f"http://{REPORTS_HOST}:{reports_port()}/{quote(relative.as_posix())}"


def judge_state_dir() -> Path:
    """Where the judge cache, rate window, circuit breaker and slot locks live."""
    configured = os.environ.get(JUDGE_STATE_ENV)
    return Path(configured).resolve() if configured else home() / "judge"


def trial_dir(benchmark: str) -> Path:
    """Where a trial of a few rows (``run --filter``) keeps its own instance and results."""
    return home() / "trials" / benchmark


def profile() -> str:
    """The deployment profile (``$N8N_DEEPEVAL_PROFILE``, default ``local``).

    ``local``: a SQLite-backed Dagster instance and DuckDB results on this machine.
    ``distributed``: the instance and the results in PostgreSQL, steps run by Celery workers.
    ``kubernetes``: as ``distributed``, each step in its own Kubernetes job (Helm chart).
    """
    chosen = os.environ.get(PROFILE_ENV, "").strip().lower() or "local"
    if chosen not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={chosen!r}: choose one of {', '.join(PROFILES)}")
    return chosen


def benchmark_paths() -> list[Path]:
    """Where the UI's benchmarks are: benchmark files, or folders searched for them.

    ``$N8N_DEEPEVAL_BENCHMARKS`` (os.pathsep separated; ``n8n-deepeval ui FILE…`` sets it
    to the files it is given), else ``./benchmarks`` and the bundled ``examples``.
    """
    configured = os.environ.get(BENCHMARKS_ENV)
    if configured:
        return [Path(part).resolve() for part in configured.split(os.pathsep) if part]
    return [Path("benchmarks").resolve(), _REPO_EXAMPLES]


def discover_benchmark_files(paths: list[Path]) -> list[Path]:
    """Each benchmark file named, and those under each folder named, sorted.

    Under a folder: ``benchmark.yaml`` or ``*.benchmark.yaml`` (BENCHMARK_FILE_PATTERNS).
    """
    found = {path.resolve() for path in paths if path.is_file()}
    found |= {
        path.resolve()
        for folder in paths
        if folder.is_dir()
        for pattern in BENCHMARK_FILE_PATTERNS
        for path in folder.rglob(pattern)
    }
    return sorted(found)
