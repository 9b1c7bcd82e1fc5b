"""What a page's view and a form's handler are given, and how the app knows them.

A view gets the request with an open, read-only store (``PageRequest``) and returns what
its template shows. A form a page posts (``Action``) gets the form with what it may write
through (``ActionRequest``): people's labels and review queues, never results; it answers
with where the browser goes next, or refuses (``ActionRefused``) in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from n8n_deepeval_pipeline.benchmark.config import Benchmark
from n8n_deepeval_pipeline.calibration.label_store import LabelStore
from n8n_deepeval_pipeline.tables.comparison import UnknownVersionError, resolve_version
from n8n_deepeval_pipeline.workspace.benchmark_files import BenchmarkFiles, BenchmarkSettings
from n8n_deepeval_pipeline.workspace.calibration_gate import not_deciding
from n8n_deepeval_pipeline.workspace.overview import benchmark_names
from n8n_deepeval_pipeline.workspace.store import Reader, StoreSource
from n8n_deepeval_pipeline.workspace.verdict import VersionVerdict, version_verdicts
from n8n_deepeval_pipeline.workspace.versions import (
    StoredVersion,
    baselines,
    find_version,
    scored_versions,
)

LabelStores = Callable[[Benchmark], LabelStore]
"""A benchmark's label store, where the profile keeps labels (given by the serving command)."""


class PageNotFound(Exception):
    """What a URL names is not in the store: the page says what is missing."""


@dataclass
class PageRequest:
    """A request with the store open for it, and what its path names, read once."""

    request: Request
    reader: Reader
    files: BenchmarkFiles
    source: StoreSource
    label_stores: LabelStores | None = None  # None: the review page writes no labels
    _verdicts: dict[str, VersionVerdict] = field(default_factory=dict)

    def query(self, name: str) -> str | None:
        """A query parameter, None when absent or blank."""
        value = self.request.query_params.get(name, "").strip()
        return value or None

    @cached_property
    def benchmark(self) -> BenchmarkSettings:
        """The benchmark the path names; PageNotFound when the store has no results of it."""
        name = str(self.request.path_params["benchmark"])
        found = self.files.settings_of(name)
        if name in benchmark_names(self.reader):
            return found
        if found.file is not None:
            raise PageNotFound(f"{name} has not been run yet: n8n-deepeval run {found.file}")
        raise PageNotFound(f"no results of a benchmark named {name!r} in {self.source.described}")

    @cached_property
    def versions(self) -> list[StoredVersion]:
        """The benchmark's scored versions, in the order they ran."""
        return scored_versions(self.reader, self.benchmark.name)

    @cached_property
    def not_deciding(self) -> frozenset[str]:
        """What ``calibration.gate`` keeps from deciding runs and regressions now."""
        return not_deciding(self.reader, self.files.benchmark(self.benchmark.name))

    @cached_property
    def baselines(self) -> dict[str, str | None]:
        """Each version's baseline (version keys)."""
        return baselines(self.reader, self.benchmark.name, self.versions, self.benchmark)

    def version(self, key: str | None = None) -> StoredVersion:
        """The version named (by key or prefix; default the path's); PageNotFound if unknown."""
        named = key or str(self.request.path_params["version"])
        try:
            full = resolve_version([v.key for v in self.versions], named)
        except UnknownVersionError as error:
            raise PageNotFound(f"{self.benchmark.name}: {error}") from None
        found = find_version(self.versions, full)
        assert found is not None  # resolved among these versions
        return found

    def verdicts(self, keys: list[str]) -> dict[str, VersionVerdict]:
        """The verdicts of these versions against their baselines (computed once a request)."""
        missing = {key: self.baselines[key] for key in keys if key not in self._verdicts}
        if missing:
            self._verdicts |= version_verdicts(
                self.reader,
                self.benchmark.name,
                self.benchmark,
                self.versions,
                missing,
                self.not_deciding,
            )
        return {key: self._verdicts[key] for key in keys}


View = Callable[[PageRequest], Mapping[str, Any]]


@dataclass(frozen=True)
class Page:
    """One page: its path (Starlette's syntax), route name, template and view."""

    path: str
    name: str
    template: str
    view: View
    nav: str | None = None  # its label in the top navigation
    tab: str | None = None  # its label among a benchmark's tabs (a path under a benchmark)


class ActionRefused(Exception):
    """A form the workspace cannot take: its status (400, 404, 409, 503) and why, in one line."""

    def __init__(self, status: int, said: str, back: str | None = None) -> None:
        super().__init__(said)
        self.status = status
        self.said = said
        self.back = back  # the page to go back to, if any


@dataclass
class ActionRequest:
    """A posted form, with the store it reads and the label stores it writes through."""

    request: Request
    form: FormData
    files: BenchmarkFiles
    source: StoreSource
    label_stores: LabelStores | None

    def field(self, name: str) -> str | None:
        """A text field of the form, stripped; None when absent or blank."""
        value = self.form.get(name)
        if not isinstance(value, str) or not value.strip():
            return None
        return value.strip()


Handler = Callable[[ActionRequest], Response]


@dataclass(frozen=True)
class Action:
    """A form a page posts: its path (Starlette's syntax), route name and handler."""

    path: str
    name: str
    handle: Handler
