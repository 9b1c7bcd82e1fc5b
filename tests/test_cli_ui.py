"""`n8n-deepeval ui` started from a script: a free port, and a SIGTERM to its group stops it."""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import descendant_pids

pytestmark = pytest.mark.slow


def as_a_background_job() -> None:
    """What a shell gives a job it starts in the background: a new group, SIGINT ignored."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def process_groups() -> dict[int, int]:
    """Live process → its process group."""
    groups = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            groups[int(stat.parent.name)] = int(fields[2])
    return groups


def members(groups: set[int]) -> set[int]:
    """Live processes of these process groups (the ones this test's `ui` started)."""
    return {pid for pid, group in process_groups().items() if group in groups}


def wait_for_url(log: Path, deadline: float) -> str:
    while time.monotonic() < deadline:
        found = re.search(r"Dagster UI at (http://\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError(log.read_text())


def wait_until_served(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} never answered")


def test_ui_takes_the_next_free_port_and_stops_on_a_sigterm_to_its_group(tmp_path):
    groups = set()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    (tmp_path / "benchmarks").mkdir()  # no benchmark: no sensor starts a run
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
        "N8N_DEEPEVAL_BENCHMARKS": str(tmp_path / "benchmarks"),
    }
    env.pop("DAGSTER_HOME", None)
    log = tmp_path / "ui.log"
    with log.open("w") as output:
        ui = subprocess.Popen(
            [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "ui", "--port", str(port)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=as_a_background_job,
        )
    try:
        deadline = time.monotonic() + 180
        url = wait_for_url(log, deadline)
        chosen = int(url.rsplit(":", 1)[1])
        assert url == f"http://127.0.0.1:{chosen}" and chosen > port
        assert f"({port} is taken)" in log.read_text()
        wait_until_served(url, deadline)
        started = process_groups()
        groups = {ui.pid} | {started[pid] for pid in descendant_pids(ui.pid) if pid in started}
        assert len(members(groups)) >= 4  # dagster dev, its webserver, daemon, code server
        os.killpg(ui.pid, signal.SIGTERM)
        stopped = time.monotonic()
        while members(groups) and time.monotonic() - stopped < 10:
            time.sleep(0.1)
        assert members(groups) == set(), "still running 10 s after SIGTERM"
        assert ui.wait(timeout=1) == 0
    finally:
        taken.close()
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        ui.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["data"]


_JOBS = "{ repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } } }"
_REPORT_URL = """{ assetOrError(assetKey: {path: ["walk_through", "benchmark_report"]}) {
  ... on Asset { assetMaterializations(limit: 1) {
    metadataEntries { label ... on UrlMetadataEntry { url } } } } } }"""


def test_ui_loads_the_benchmark_it_is_named_and_serves_the_reports_its_links_name(
    tmp_path, example_copy
):
    """The README's walk-through on a copy: `ui COPY` shows the copy, not the bundled example;
    its report link opens the report; Dagster's "use dg dev" warning is not printed."""
    document = yaml.safe_load(example_copy.read_text())
    document["name"] = "walk_through"  # the bundled example is support_agent: told apart
    example_copy.write_text(yaml.safe_dump(document))
    env = {
        **os.environ,
        "N8N_DEEPEVAL_HOME": str(tmp_path / "home"),
        "N8N_DEEPEVAL_REPORTS_PORT": str(_free_port()),
    }
    for name in ("DAGSTER_HOME", "N8N_DEEPEVAL_BENCHMARKS"):
        env.pop(name, None)
    cli = [sys.executable, "-m", "n8n_deepeval_pipeline.cli"]
    ran = subprocess.run(
        [*cli, "run", str(example_copy)], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    log, groups = tmp_path / "ui.log", set()
    with log.open("w") as output:
        ui = subprocess.Popen(
            [*cli, "ui", str(example_copy), "--port", str(_free_port())],
            env=env,
            cwd=tmp_path,  # no ./benchmarks: without FILE it would load the bundled example
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=as_a_background_job,
        )
    try:
        deadline = time.monotonic() + 180
        url = wait_for_url(log, deadline)
        wait_until_served(url, deadline)
        started = process_groups()
        groups = {ui.pid} | {started[pid] for pid in descendant_pids(ui.pid) if pid in started}
        said = log.read_text()
        assert f"benchmarks: {example_copy.resolve()}" in said
        jobs = {
            job["name"]
            for location in graphql(url, _JOBS)["repositoriesOrError"]["nodes"]
            for job in location["jobs"]
        }
        assert {"walk_through__benchmark", "walk_through__rescore"} <= jobs
        assert not any(job.startswith("support_agent") for job in jobs)
        (materialised,) = graphql(url, _REPORT_URL)["assetOrError"]["assetMaterializations"]
        entries = {entry["label"]: entry for entry in materialised["metadataEntries"]}
        report_url = entries["report_url"]["url"]
        assert report_url.startswith(f"http://127.0.0.1:{env['N8N_DEEPEVAL_REPORTS_PORT']}/")
        with urllib.request.urlopen(report_url, timeout=10) as answer:
            assert answer.status == 200
            assert "<title>walk_through · " in answer.read().decode()
        # the results workspace answers where those links point: the version's page, and a
        # root that lists the benchmarks (the reports' server answered 404 there)
        workspace = f"http://127.0.0.1:{env['N8N_DEEPEVAL_REPORTS_PORT']}"
        version = entries["workspace_url"]["url"]
        assert version.startswith(f"{workspace}/benchmarks/walk_through/versions/")
        with urllib.request.urlopen(version, timeout=30) as answer:
            assert answer.status == 200 and "88.9%" in answer.read().decode()
        with urllib.request.urlopen(workspace + "/", timeout=30) as answer:
            assert 'data-benchmark="walk_through"' in answer.read().decode()
        said = log.read_text()
        assert f"results workspace at {workspace}/" in said
        assert "dg dev" not in said and "SupersessionWarning" not in said
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        try:
            ui.wait(timeout=15)
        finally:
            for group in groups | {ui.pid}:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)


def wait_for_workspace(log: Path, process: subprocess.Popen, deadline: float) -> str:
    while time.monotonic() < deadline and process.poll() is None:
        found = re.search(r"results workspace at (http://\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise AssertionError(log.read_text())


def test_ui_results_only_serves_the_workspace_alone_and_stops_on_sigterm(tmp_path):
    from n8n_deepeval_pipeline.testing.generated_store import (
        GeneratedVersion,
        version_tables,
        write_store,
    )
    from tests.workspace.conftest import METRICS, PASSES_V1, T0, V1

    home = tmp_path / "home"
    write_store(home / "results.duckdb", "orders", version_tables(
        [GeneratedVersion(V1, T0, PASSES_V1)], METRICS
    ))  # fmt: skip
    port = _free_port()
    env = {**os.environ, "N8N_DEEPEVAL_HOME": str(home), "N8N_DEEPEVAL_REPORTS_PORT": str(port)}
    env.pop("N8N_DEEPEVAL_BENCHMARKS", None)
    cli = [sys.executable, "-m", "n8n_deepeval_pipeline.cli", "ui", "--results-only"]
    log = tmp_path / "ui.log"
    with log.open("w") as output:
        ui = subprocess.Popen(
            cli, env=env, cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT,
            preexec_fn=as_a_background_job,
        )  # fmt: skip
    try:
        url = wait_for_workspace(log, ui, time.monotonic() + 120)
        assert url == f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(url, timeout=30) as answer:
            page = answer.read().decode()
        assert 'data-benchmark="orders"' in page and "88.9%" in page
        assert descendant_pids(ui.pid) == set()  # no Dagster: the workspace alone
        # a second one finds the port taken, and says so in one line
        taken = subprocess.run(cli, env=env, cwd=tmp_path, capture_output=True, text=True)
        assert taken.returncode == 1
        assert f"the results workspace is not served: 127.0.0.1:{port}:" in taken.stderr
        assert "N8N_DEEPEVAL_REPORTS_PORT moves them" in taken.stderr
        ui.send_signal(signal.SIGTERM)
        assert ui.wait(timeout=15) == 0
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()
