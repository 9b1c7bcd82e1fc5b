"""Storage that failed under a command, a full disk or a corrupt database, in one line.

The errors come from DuckDB, SQLite (the Dagster instance, the judge state) and plain
file writes, wrapped by Dagster and sometimes only as text (a failed step's error), so
they are recognised by the words each library uses.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

_NO_SPACE = ("no space left on device", "database or disk is full", "disk quota exceeded")
# DuckDB's words for a damaged file: a bad block checksum, a header not its own, a block
# past the end of a truncated file.
_CORRUPT = (
    "corrupt database file",
    "not a valid duckdb database file",
    "could not read enough bytes from file",
)
# SQLite's words when its WAL or shared memory cannot grow: a full disk, most often.
_DISK_IO = "disk i/o error"
_FULL_BELOW_BYTES = 1 << 20


def error_messages(error: BaseException) -> list[str]:
    """An exception and the ones it came from, each as ``Type: message``.

    A context raised ``from None`` is not followed: the code that hid it said it is not
    what went wrong.
    """
    messages: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        messages.append(f"{type(current).__name__}: {current}")
        hidden = current.__suppress_context__
        current = current.__cause__ or (None if hidden else current.__context__)
    return messages


def storage_fault(messages: Iterable[str], database: Path, folders: Sequence[Path]) -> str | None:
    """The one line for the fault these error messages describe; None for other errors.

    ``database`` is the DuckDB file; ``folders`` are where the command writes, the one
    to name first first (a full disk is named by the first of them that is full).
    """
    text = "\n".join(messages).lower()
    if any(sign in text for sign in _CORRUPT):
        return (
            f"{database}: the database is corrupt or truncated: move it aside (its rows "
            "cannot be read) and run again, or point N8N_DEEPEVAL_DUCKDB at another file"
        )
    no_space = any(sign in text for sign in _NO_SPACE)
    if not no_space and _DISK_IO not in text:
        return None  # the disks are looked at only for an error that may be theirs
    full = next((folder for folder in folders if _is_full(folder)), None)
    if not no_space and full is None:
        return None
    return (
        f"no space left under {full or folders[0]}: free some space and run again "
        "(the rows stored before are kept)"
    )


def database_damage(database: Path) -> list[str]:
    """What DuckDB says opening ``database`` read-only, when it cannot (nothing written).

    Empty when it opens, is not there, or another process holds it (the run waits for
    that one): a look that takes milliseconds, where a run meets a damaged file only
    after its start-up.
    """
    import duckdb  # only the commands that store results look

    if not database.is_file():
        return []
    try:
        duckdb.connect(str(database), read_only=True).close()
    except duckdb.Error as error:
        text = f"{type(error).__name__}: {error}"
        return [] if "could not set lock on file" in text.lower() else [text]
    return []


def _is_full(folder: Path) -> bool:
    existing = next(path for path in (folder, *folder.parents) if path.exists())
    return shutil.disk_usage(existing).free < _FULL_BELOW_BYTES
