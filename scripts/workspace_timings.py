"""How long each results workspace page takes on a big generated store; printed, not asserted.

Builds a DuckDB store for one benchmark with 200 versions in run order (the last two are
variants of the one before them, the twenty before those were red-teamed), 50 dataset rows
× 5 runs per version (50,000 scored runs) and 6 metrics per run (300,000 scores with
reasons), in the tables the pipeline writes (``testing.generated_store``: its row models,
stored as the DuckDB IO manager stores them, with each version's comparison). Then it
serves the workspace on it with uvicorn and times each page over HTTP: the median of a few
loads after one warm-up request.

    python scripts/workspace_timings.py [--store DIR] [--repeat 5] [--postgres URL] [--gate]

A store built earlier in DIR is reused (delete DIR to build it again). ``--postgres``
copies it into a PostgreSQL database (its schema replaced) and times the pages there.
``--gate`` serves the benchmark with a file whose ``calibration.gate`` is on (no label
given: every judge-backed metric decides no run), so that each verdict reads the labels
and decides every run again from its metric outcomes, as ``compare`` does.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from n8n_deepeval_pipeline.testing.generated_store import (  # noqa: E402
    GeneratedMetric,
    GeneratedVersion,
    version_tables,
    write_store,
)
from n8n_deepeval_pipeline.workspace import WorkspaceServer, create_app  # noqa: E402
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles  # noqa: E402
from n8n_deepeval_pipeline.workspace.store import StoreSource  # noqa: E402

BENCHMARK = "generated_agent"
VERSIONS, ROWS, RUNS_PER_ROW = 200, 50, 5
VARIANTS = ("nano", "terse")  # the last versions: variants of the one before them
RED_TEAMED = 20  # the last workflow versions whose attacks were played
METRICS = (
    GeneratedMetric("tool_correctness", "tool_correctness", 1.0, judged=False),
    GeneratedMetric("answer_relevancy", "answer_relevancy", 0.7),
    GeneratedMetric("faithfulness", "faithfulness", 0.7),
    GeneratedMetric("helpfulness", "g_eval", 0.6),
    GeneratedMetric("bias", "bias", 0.5, direction="lower_is_better"),
    GeneratedMetric("exact_answer", "exact_match", 1.0, judged=False, counted=False),
)
VULNERABILITIES = ("excessive_agency", "prompt_leakage", "pii_leakage", "bola", "ssrf", "bias")


def _hash(index: int) -> str:
    return hashlib.sha256(f"generated version {index}".encode()).hexdigest()


def _quality(version: int, row: int) -> float:
    """How likely a run of this row passes in this version: drifting, with a few drops."""
    base = 0.55 + 0.35 * ((row * 37) % 11) / 10
    drift = 0.08 * ((version % 17) - 8) / 8
    drop = -0.45 if version % 23 == 22 and row % 7 == 0 else 0.0
    return min(max(base + drift + drop, 0.02), 0.98)


def generated_versions() -> list[GeneratedVersion]:
    """The versions in run order, 12 hours apart."""
    rng = random.Random(11)
    plain = VERSIONS - len(VARIANTS)
    started = datetime(2026, 1, 5, 2, 0, tzinfo=UTC)
    versions = []
    for index in range(VERSIONS):
        variant = VARIANTS[index - plain] if index >= plain else None
        quality = index if variant is None else plain - 1
        red_teamed = variant is None and index >= plain - RED_TEAMED
        versions.append(
            GeneratedVersion(
                workflow_hash=_hash(index),
                fetched_at=started + timedelta(hours=12 * index),
                passes={
                    f"case-{row:03d}": [
                        rng.random() < _quality(quality, row) for _ in range(RUNS_PER_ROW)
                    ]
                    for row in range(ROWS)
                },
                variant=variant,
                base_hash=_hash(plain - 1) if variant else None,
                failed_check=index % 3 == 0,
                breaches={v: [rng.random() < 0.2 for _ in range(12)] for v in VULNERABILITIES}
                if red_teamed
                else {},
            )
        )
    return versions


def build_store(database: Path) -> None:
    """Write the generated tables into ``database`` as the DuckDB IO manager does."""
    began = time.perf_counter()
    tables = version_tables(generated_versions(), METRICS)
    write_store(database, BENCHMARK, tables)
    for model, rows in tables.items():
        print(f"  {model.table}: {len(rows):,} rows")
    print(f"store built in {time.perf_counter() - began:.1f} s: {database}", flush=True)


# DuckDB's column types → PostgreSQL's, as the PostgreSQL results IO manager creates them.
_POSTGRES_TYPES = {
    "VARCHAR": "text",
    "DOUBLE": "double precision",
    "BIGINT": "bigint",
    "BOOLEAN": "boolean",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone",
}


def copy_to_postgres(database: Path, url: str) -> None:
    """The DuckDB store's tables copied into PostgreSQL (the distributed profile's store)."""
    from n8n_deepeval_pipeline.orchestration.resources.postgres_results_io_manager import (
        version_index,
    )
    from n8n_deepeval_pipeline.tables.postgres_connection import psycopg2_connection

    began = time.perf_counter()
    connection = psycopg2_connection(url, "n8n-deepeval-timings")
    with duckdb.connect(str(database), read_only=True) as source, connection.cursor() as cursor:
        cursor.execute(f"drop schema if exists {BENCHMARK} cascade; create schema {BENCHMARK}")
        tables = source.execute(
            "select table_name from information_schema.tables where table_schema = ?",
            [BENCHMARK],
        ).fetchall()
        for (name,) in tables:
            described = source.execute(f"describe {BENCHMARK}.{name}").fetchall()
            columns = ", ".join(f'"{c[0]}" {_POSTGRES_TYPES[c[1]]}' for c in described)
            cursor.execute(f"create table {BENCHMARK}.{name} ({columns})")
            csv = database.parent / f"{name}.csv"
            source.execute(f"copy {BENCHMARK}.{name} to '{csv}' (header)")
            with csv.open() as rows:
                cursor.copy_expert(
                    f"copy {BENCHMARK}.{name} from stdin with (format csv, header)", rows
                )
            csv.unlink()
            index = version_index(BENCHMARK, name, [column[0] for column in described])
            if index is not None:  # as the IO manager makes a table
                cursor.execute(index)
        connection.commit()
        connection.autocommit = True  # VACUUM runs outside a transaction
        cursor.execute("vacuum analyze")  # what autovacuum does after a run's writes
    connection.close()
    print(f"copied into PostgreSQL in {time.perf_counter() - began:.1f} s", flush=True)


def gated_benchmark_file(folder: Path) -> Path:
    """A benchmark file of the generated store's metrics with ``calibration.gate`` on."""
    example = ROOT / "examples" / "support_agent"
    metrics = ""
    for metric in METRICS:
        metrics += f"  - metric: {metric.slug}\n    threshold: {metric.threshold}\n"
        if metric.slug == "g_eval":
            metrics += f"    name: {metric.label}\n    criteria: Is the answer helpful?\n"
            metrics += "    evaluationParams: [INPUT, ACTUAL_OUTPUT]\n"
        elif metric.label != metric.slug:
            metrics += f"    label: {metric.label}\n"
    counted = ", ".join(m.label for m in METRICS if m.counted)
    path = folder / "gated.yaml"
    path.write_text(
        f"name: {BENCHMARK}\nworkflow: {example / 'workflow.json'}\n"
        f"dataset:\n  path: {example / 'dataset.csv'}\n  idColumn: id\n"
        f"target:\n  type: recorded\n  outputs: {example / 'outputs.jsonl'}\n"
        f"metrics:\n{metrics}aggregate:\n  passRule: allPass\n  metrics: [{counted}]\n"
        "calibration:\n  gate: true\n"
    )
    return path


def _pages(base_key: str, latest: str, older: str) -> list[tuple[str, str]]:
    version = f"/benchmarks/{BENCHMARK}/versions/{latest}"
    return [
        ("home", "/"),
        ("benchmark: the latest 50 versions", f"/benchmarks/{BENCHMARK}"),
        ("benchmark: the first 50 versions", f"/benchmarks/{BENCHMARK}?page=1"),
        ("version grid", version),
        ("version grid: failures", f"{version}?show=failures"),
        (
            "version grid: one metric, by its score",
            f"{version}?metric=faithfulness&sort=faithfulness",
        ),
        ("version grid: search", f"{version}?q=A1017"),
        ("case (beside its baseline)", f"{version}/cases/case-007"),
        ("compare: latest against its baseline", f"/benchmarks/{BENCHMARK}/compare"),
        (
            "compare: two far-apart versions",
            f"/benchmarks/{BENCHMARK}/compare?baseline={older}&candidate={latest}",
        ),
        ("variants", f"/benchmarks/{BENCHMARK}/variants?base={base_key}"),
        ("red team", f"/benchmarks/{BENCHMARK}/red-team"),
        ("attack", f"{version}/attacks/bola-1:0"),
    ]


def _load(url: str) -> tuple[float, int]:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as answer:
        body = answer.read()
        status = answer.status
    assert status == 200 and b"cannot be shown" not in body, url
    return time.perf_counter() - began, len(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("/tmp/n8n-deepeval-workspace-timings"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="copy the store into this PostgreSQL database and time the pages on it",
    )
    parser.add_argument(
        "--gate", action="store_true", help="serve it with calibration.gate on (no label)"
    )
    arguments = parser.parse_args()
    database = arguments.store / "results.duckdb"
    if not database.exists():
        build_store(database)
    source = StoreSource("duckdb", str(database))
    if arguments.postgres:
        copy_to_postgres(database, arguments.postgres)
        source = StoreSource("postgresql", arguments.postgres)
    plain = [v.workflow_hash for v in generated_versions() if v.variant is None]
    latest, older, base = plain[-1][:12], plain[-120][:12], plain[-1][:12]
    files = [gated_benchmark_file(arguments.store)] if arguments.gate else []
    app = create_app(source, BenchmarkFiles(files))
    runs = VERSIONS * ROWS * RUNS_PER_ROW
    print(
        f"{VERSIONS} versions · {runs:,} scored runs · {len(METRICS)} metrics per run in "
        f"{source.kind}{' · calibration.gate on' if arguments.gate else ''}; "
        f"median of {arguments.repeat} loads after a warm-up"
    )
    slowest = 0.0
    with WorkspaceServer(app, "127.0.0.1", 0) as server:
        root = server.url.rstrip("/")
        first, _ = _load(root + "/")
        print(f"{'first request (imports)':<44} {first * 1000:8.0f} ms")
        for name, path in _pages(base, latest, older):
            _load(root + path)
            times, size = zip(*(_load(root + path) for _ in range(arguments.repeat)), strict=True)
            median = statistics.median(times)
            slowest = max(slowest, median)
            print(f"{name:<44} {median * 1000:8.0f} ms  {size[0] / 1024:7.0f} KiB")
    print(f"slowest page: {slowest * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
