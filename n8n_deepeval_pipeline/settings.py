"""Where things live on disk: the working folder, the DuckDB file, the benchmarks.

Defaults sit under ``.n8n-deepeval/`` in the current directory; each can be moved with
an environment variable so the CLI, the UI and the daemon share one instance and one
database.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from n8n_deepeval_pipeline import environment_variables

HOME_ENV = "N8N_DEEPEVAL_HOME"
DATABASE_ENV = "N8N_DEEPEVAL_DUCKDB"
BENCHMARKS_ENV = "N8N_DEEPEVAL_BENCHMARKS"
REPORTS_PORT_ENV = "N8N_DEEPEVAL_REPORTS_PORT"
REPORTS_HOST = "127.0.0.1"
WORKSPACE_URL_ENV = "N8N_DEEPEVAL_WORKSPACE_URL"
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
# What a command (and every process it starts: workers, Dagster's) creates: its owner's only.
PRIVATE_UMASK = 0o077
_users_umask: list[int] = []  # the umask the command was started with, for what it asked


def keep_files_private() -> int:
    """Make every file and folder this process and its children create private; the old umask.

    Dagster, DuckDB (its WAL too) and SQLite create their files with the process's umask:
    set here, nothing under the home is left readable by others, however it was made.
    """
    previous = os.umask(PRIVATE_UMASK)
    _users_umask.append(previous)
    return previous


def restore_umask(previous: int) -> None:
    """Put back the umask ``keep_files_private`` replaced (a command run in-process ended)."""
    os.umask(previous)
    if _users_umask:
        _users_umask.pop()


@contextlib.contextmanager
def made_for_the_user(folder: Path) -> Iterator[None]:
    """What the block makes in ``folder`` (the folder too) at the user's request, elsewhere.

    It gets the mode the user's umask gives (a report to share, a benchmark file to commit),
    not the private one of the command's own files. Entries that were there keep theirs,
    and so does anything under the home.
    """
    missing = [path for path in (folder, *folder.parents) if not path.exists()]
    before = set(folder.iterdir()) if folder.is_dir() else set()
    try:
        yield
    finally:
        made = [path for path in missing if path.exists()]
        made += [path for path in folder.iterdir() if path not in before] if folder.is_dir() else []
        for path in made:
            _users_mode(path)


def _users_mode(path: Path) -> None:
    if not _users_umask or path.resolve().is_relative_to(home()):
        return
    everyone = 0o777 if path.is_dir() else 0o666
    path.chmod(everyone & ~_users_umask[-1])


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
    return Path(environment_variables.setting(HOME_ENV)).resolve()


def dagster_home() -> Path:
    """The local Dagster instance the CLI and the UI share (``$DAGSTER_HOME`` if set)."""
    configured = environment_variables.value("DAGSTER_HOME")
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
    return environment_variables.setting(LOCAL_EXECUTOR_ENV).strip()


def steps_run_in_this_process() -> bool:
    """Whether a run started here runs its steps in this process (the local default)."""
    with contextlib.suppress(ValueError):  # a bad profile is refused where it is used
        return profile() == "local" and local_executor() == "in_process"
    return False


def database_path() -> Path:
    """The DuckDB file that holds every benchmark's tables."""
    configured = environment_variables.value(DATABASE_ENV)
    return Path(configured).resolve() if configured else home() / "results.duckdb"


def reports_dir() -> Path:
    """Where each version's report is written (``<benchmark>/<hash prefix>/``)."""
    return home() / "reports"


def reports_port() -> int:
    """Where `n8n-deepeval ui` serves the workspace and reports (``$N8N_DEEPEVAL_REPORTS_PORT``)."""
    configured = environment_variables.setting(REPORTS_PORT_ENV).strip()
    if not configured.isdigit() or not 0 < int(configured) < 65536:
        raise ValueError(f"{REPORTS_PORT_ENV}={configured!r}: give a port from 1 to 65535")
    return int(configured)


def workspace_url(*segments: str) -> str:
    """The address of a results workspace page, its path given segment by segment.

    ``$N8N_DEEPEVAL_WORKSPACE_URL`` when the workspace is served for a team, else the
    loopback address `n8n-deepeval ui` serves it at. Known before the UI starts, so that a
    run from the CLI records the same link.
    """
    base = environment_variables.value(WORKSPACE_URL_ENV) or (
        f"http://{REPORTS_HOST}:{reports_port()}"
    )
    return base.rstrip("/") + "/" + "/".join(quote(segment, safe="") for segment in segments)


def report_url(page: Path) -> str | None:
    """Where the results workspace serves a report file; None for one outside the reports folder."""
    try:
        relative = page.resolve().relative_to(reports_dir())
    except ValueError:
        return None
    return workspace_url("reports", *relative.parts)


def postgres_url() -> str | None:
    """The PostgreSQL of the distributed profiles: the instance and the results (None: unset)."""
    return environment_variables.value(POSTGRES_URL_ENV)


def judge_state_dir() -> Path:
    """Where the judge cache, rate window, circuit breaker and slot locks live."""
    configured = environment_variables.value(JUDGE_STATE_ENV)
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
    chosen = environment_variables.setting(PROFILE_ENV).strip().lower()
    if chosen not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={chosen!r}: choose one of {', '.join(PROFILES)}")
    return chosen


def benchmark_paths() -> list[Path]:
    """Where the UI's benchmarks are: benchmark files, or folders searched for them.

    ``$N8N_DEEPEVAL_BENCHMARKS`` (os.pathsep separated; ``n8n-deepeval ui FILE…`` sets it
    to the files it is given), else ``./benchmarks`` and the bundled ``examples``.
    """
    configured = environment_variables.value(BENCHMARKS_ENV)
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
