"""What the workspace reads from each benchmark's file: the gate's settings, the metric order.

The results store names a benchmark by its schema; its file is found among the benchmark
files the UI loads (``$N8N_DEEPEVAL_BENCHMARKS``, as `ui FILE…` sets it). A benchmark
whose file is not among them is shown with the file's defaults (and says so); a file that
does not load is named with its error. Files are read again when they change.
"""

from __future__ import annotations

from pathlib import Path
from threading import Lock

from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline import settings
from n8n_deepeval_pipeline.benchmark.config import (
    Benchmark,
    ChecksConfig,
    CompareConfig,
    load_benchmark,
)
from n8n_deepeval_pipeline.config.errors import BenchmarkConfigError
from n8n_deepeval_pipeline.statistics.gates import GateVerdict


class BenchmarkSettings(BaseModel):
    """A benchmark's settings the pages need, from its file or the file's defaults."""

    model_config = ConfigDict(frozen=True)

    name: str
    file: Path | None  # None: no file of this name among the benchmark files
    description: str | None = None
    fail_on: GateVerdict = CompareConfig().fail_on
    pinned_baseline: str | None = None  # compare.baseline
    max_error_rate: float = ChecksConfig().max_error_rate
    metric_order: tuple[str, ...] = ()  # the file's order; others follow by name
    head_to_head: dict[str, str] = {}

    @classmethod
    def of(cls, benchmark: Benchmark, file: Path) -> BenchmarkSettings:
        """The settings of a loaded benchmark file."""
        return cls(
            name=benchmark.name,
            file=file,
            description=benchmark.description,
            fail_on=benchmark.compare.fail_on,
            pinned_baseline=benchmark.compare.baseline,
            max_error_rate=benchmark.checks.max_error_rate,
            metric_order=tuple(benchmark.metric_labels),
            head_to_head=benchmark.head_to_head,
        )


class BenchmarkFiles:
    """The benchmark files found, loaded and kept until they change on disk."""

    def __init__(self, paths: list[Path] | None = None) -> None:
        self._paths = paths
        self._loaded: dict[Path, tuple[float, Benchmark | str]] = {}
        self._lock = Lock()

    def load(self, path: Path) -> Benchmark | str:
        """The file's benchmark, or why it does not load (its first problem)."""
        try:
            modified = path.stat().st_mtime
        except OSError as error:
            return f"{path}: {error.strerror}"
        with self._lock:
            kept = self._loaded.get(path)
        if kept is not None and kept[0] == modified:
            return kept[1]
        try:
            loaded: Benchmark | str = load_benchmark(path)
        except BenchmarkConfigError as error:
            loaded = str(error).splitlines()[0]
        with self._lock:
            self._loaded[path] = (modified, loaded)
        return loaded

    def _benchmarks(self) -> tuple[dict[str, tuple[Path, Benchmark]], list[str]]:
        paths = self._paths if self._paths is not None else settings.benchmark_paths()
        by_name: dict[str, tuple[Path, Benchmark]] = {}
        problems = []
        for path in settings.discover_benchmark_files(paths):
            loaded = self.load(path)
            if isinstance(loaded, str):
                problems.append(loaded)
            else:
                by_name.setdefault(loaded.name, (path, loaded))
        return by_name, problems

    def found(self) -> tuple[dict[str, BenchmarkSettings], list[str]]:
        """Every benchmark file by its benchmark's name, and the files that do not load."""
        by_name, problems = self._benchmarks()
        found = {
            name: BenchmarkSettings.of(loaded, path) for name, (path, loaded) in by_name.items()
        }
        return found, problems

    def settings_of(self, name: str) -> BenchmarkSettings:
        """The named benchmark's settings; its file's defaults when no file is found."""
        return self.found()[0].get(name) or BenchmarkSettings(name=name, file=None)

    def benchmark(self, name: str, also: Path | None = None) -> Benchmark | None:
        """The named benchmark loaded from its file, among the files or ``also`` (None: none)."""
        found = self._benchmarks()[0].get(name)
        if found is not None:
            return found[1]
        loaded = self.load(also) if also is not None else None
        return loaded if isinstance(loaded, Benchmark) and loaded.name == name else None
