"""PostgreSQL, Redis and Celery workers on loopback for the distributed profile's tests.

Each server or worker is a process this module starts (in its own session, from Debian's
packages installed by scripts/install_services.sh) and stops by its own PID or process
group; nothing else on the machine is looked at. PostgreSQL refuses to run as root: as
root, its data folder belongs to the ``postgres`` user (created by Debian's package) and
the server runs as that user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from n8n_deepeval_pipeline.tables.postgres_connection import psycopg2_connection

POSTGRES_PASSWORD = "n8n-deepeval-test"  # a throwaway cluster on loopback
DATABASE = "n8n_deepeval"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_bin() -> Path | None:
    """The newest PostgreSQL server binaries of Debian's packages, if installed."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0,
    )
    return found[-1].parent if found else None


def missing_services() -> list[str]:
    missing = [] if postgres_bin() else ["postgresql"]
    return missing + ([] if shutil.which("redis-server") else ["redis-server"])


def _stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace_s: float = 20) -> None:
    """Stop a process this module started (and its process group), by its PID."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def _wait_for(check, what: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.2)
    raise TimeoutError(f"{what} not ready after {timeout_s} s:\n{log.read_text()[-3000:]}")


def run_sql(url: str, statement: str, parameters: list | None = None) -> list[tuple]:
    """Run one statement on ``url`` (SQLAlchemy's form or libpq's) and commit; its rows."""
    connection = psycopg2_connection(url, "n8n-deepeval-tests")
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement, parameters)
            rows = cursor.fetchall() if cursor.description else []
        connection.commit()
        return rows
    finally:
        connection.close()


@dataclass
class Postgres:
    url: str
    pid: int

    def sql(self, statement: str, parameters: list | None = None) -> list[tuple]:
        """Run one statement on the server's database and commit; its rows."""
        return run_sql(self.url, statement, parameters)


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A fresh cluster on a free loopback port with one database; removed afterwards."""
    import psycopg2

    binaries = postgres_bin()
    assert binaries is not None, "PostgreSQL is not installed: scripts/install_services.sh"
    # Under /tmp, not pytest's tmp folder (mode 700 for root): the postgres user must reach it.
    folder = Path(tempfile.mkdtemp(prefix="n8n-deepeval-pg-", dir="/tmp"))
    data, log = folder / "data", folder / "postgres.log"
    user = None
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    as_user = {"user": user.pw_uid, "group": user.pw_gid} if user else {}
    password = folder / "password"
    password.write_text(POSTGRES_PASSWORD)
    if user:
        os.chown(password, user.pw_uid, user.pw_gid)
    subprocess.run(
        [
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            "n8n",
            f"--pwfile={password}",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        cwd=folder,
        **as_user,  # type: ignore[arg-type]
    )
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-h",
                "127.0.0.1",
                "-k",
                str(folder),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=folder,
            start_new_session=True,
            **as_user,  # type: ignore[arg-type]
        )
    admin = f"postgresql://n8n:{POSTGRES_PASSWORD}@127.0.0.1:{port}/postgres"
    try:

        def ready() -> bool:
            psycopg2.connect(admin, connect_timeout=2).close()
            return True

        _wait_for(ready, "PostgreSQL", process, log, 60)
        connection = psycopg2.connect(admin)
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f"create database {DATABASE}")
        connection.close()
        yield Postgres(
            f"postgresql+psycopg2://n8n:{POSTGRES_PASSWORD}@127.0.0.1:{port}/{DATABASE}",
            process.pid,
        )
    finally:
        _stop(process, signal.SIGINT)  # SIGINT: PostgreSQL's fast shutdown
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Redis:
    url: str
    pid: int


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[Redis]:
    """redis-server on a free loopback port, nothing saved to disk."""
    import redis

    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = folder / "redis.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_for(lambda: redis.Redis.from_url(url).ping(), "Redis", process, log, 30)
        yield Redis(url, process.pid)
    finally:
        _stop(process)


@dataclass
class CeleryWorker:
    """One Celery worker (a stand-in for one machine) with its own working folder."""

    name: str
    folder: Path
    process: subprocess.Popen[bytes]

    @property
    def log(self) -> Path:
        return self.folder / "worker.log"

    def processes(self) -> set[int]:
        """The worker's live processes: its command, Celery's main process, its pool."""
        from tests.conftest import descendant_pids

        return {self.process.pid} | descendant_pids(self.process.pid)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        _stop(self.process, sig, grace_s=10)


def start_worker(name: str, folder: Path, env: dict[str, str], config_yaml: Path) -> CeleryWorker:
    """`dagster-celery worker start` in its own folder, one step at a time, named NAME@host."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "worker.log"
    # The venv's own commands (dagster-celery starts `celery` by name).
    bin_dir = Path(sys.executable).parent
    env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(bin_dir / "dagster-celery"),
                "worker",
                "start",
                "-A",
                "dagster_celery.app",
                "-y",
                str(config_yaml),
                "-n",
                name,
                "--",
                "--concurrency=1",
                "--without-gossip",
                "--without-mingle",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=folder,
            env=env,
            start_new_session=True,
        )
    worker = CeleryWorker(name, folder, process)
    try:
        _wait_for(lambda: " ready." in log.read_text(), f"worker {name}", process, log, 120)
    except BaseException:
        worker.kill()
        raise
    return worker
