"""Turn pydantic validation errors into messages that name the file and the field path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from pydantic import ValidationError

# Error types of a metric slug that is unknown or missing; they are raised before the union
# picks a member, so their location carries no slug tag.
UNKNOWN_METRIC = "unknown_metric"
MISSING_METRIC = "missing_metric"


class BenchmarkConfigError(ValueError):
    """A benchmark file (or a file it points to) is invalid; the message names file and field."""

    def __init__(self, source: Path | str, problems: list[str], what: str = "benchmark") -> None:
        self.source = str(source)
        self.problems = problems
        listing = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"{self.source}: invalid {what}\n{listing}")


class FileRole(NamedTuple):
    """What a file a benchmark points to holds, and the benchmark field that names it."""

    what: str
    field: str


class DataFileError(BenchmarkConfigError):
    """A file a benchmark points to (dataset, recorded outputs) is invalid.

    The code that reads the file does not know which benchmark named it; the caller that
    does adds it with ``pointed_to_by``, so that the message names both files.
    """

    def __init__(
        self,
        source: Path | str,
        problems: list[str],
        role: FileRole,
        benchmark: Path | str | None = None,
    ) -> None:
        self.role = role
        pointer = role.field if benchmark is None else f"{role.field} of {benchmark}"
        super().__init__(source, problems, what=f"{role.what} ({pointer})")


@contextmanager
def pointed_to_by(benchmark: Path) -> Iterator[None]:
    """Name ``benchmark`` in the errors about the files it points to."""
    try:
        yield
    except DataFileError as error:
        raise DataFileError(error.source, error.problems, error.role, benchmark) from None


def field_path(location: tuple[int | str, ...]) -> str:
    """Render a pydantic location as ``metrics[1].threshold``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "(top level)"


def describe_validation_error(error: ValidationError) -> list[str]:
    """One line per problem: field path, then what is wrong and what is allowed."""
    problems = []
    for detail in error.errors(include_url=False):
        message = detail["msg"]
        if detail["type"] == "extra_forbidden":
            message = "unknown field (check the spelling; fields are camelCase)"
        location = tuple(detail["loc"])
        where = field_path(location) if detail["type"] in (UNKNOWN_METRIC, MISSING_METRIC) else None
        problems.append(f"{where or _render_location(location)}: {message}")
    return problems


def _render_location(location: tuple[int | str, ...]) -> str:
    # A metric entry's location carries its slug (the union tag): metrics[1] (g_eval).criteria
    if len(location) >= 3 and location[0] == "metrics" and isinstance(location[1], int):
        head = f"metrics[{location[1]}] ({location[2]})"
        rest = field_path(location[3:])
        return head if not location[3:] else f"{head}.{rest}"
    return field_path(location)
