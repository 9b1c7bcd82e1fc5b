"""A dataset drawn from a workflow's production executions (``dataset from-executions``).

One row per execution, or per chat session for a chat-triggered agent (its messages in
the order they were sent, in column ``messages``, which a target's ``messagesColumn``
sends one by one). A row's columns are the fields of the trigger's item that the start
node reads (``anatomy``): the user's message in ``input``, the others by name. The
outputs and tool calls go to ``expectedOutput`` and ``expectedTools`` only on request:
a dataset whose expectations are the workflow's own answers measures self-consistency,
not correctness. A row's id is a hash of its input, so the same input is one row and a
second read adds only rows never seen; ``redact`` takes credentials (by their shape, or by
their field's name), e-mail addresses and phone numbers out of every value before the id
is computed. A whole object read (a Webhook's body) is kept without its session fields, so
the same request is one row and a replay never joins a real user's memory session.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from n8n_deepeval_pipeline.config.errors import FileRole
from n8n_deepeval_pipeline.n8n_api.client import (
    EXECUTION_PAGE_SIZE,
    DataTableColumn,
    N8nApiError,
    N8nClient,
)
from n8n_deepeval_pipeline.n8n_api.executions import execution_steps, last_node, node_item
from n8n_deepeval_pipeline.n8n_api.own_traffic import from_pipeline
from n8n_deepeval_pipeline.n8n_data.agent_steps import StepsShapeError, called_tool_names
from n8n_deepeval_pipeline.n8n_data.expressions import as_text, resolve_path
from n8n_deepeval_pipeline.n8n_data.responses import normalise_response
from n8n_deepeval_pipeline.redaction import REDACTED, redact_personal
from n8n_deepeval_pipeline.tables.data_files import (
    NotAJsonObjectError,
    json_object,
    numbered_lines,
    read_bytes,
    utf8_text,
)
from n8n_deepeval_pipeline.workflow.anatomy import SESSION_FIELDS, Anatomy, anatomy
from n8n_deepeval_pipeline.workflow.checks import is_secret_name
from n8n_deepeval_pipeline.workflow.hashing import extract_workflow

ID_COLUMN = "rowId"
MESSAGES_COLUMN = "messages"
_OUT = FileRole("dataset", "--out")
Progress = Callable[[int], None]
_SPAN = re.compile(r"(?P<amount>\d+)\s*(?P<unit>[mhd])")
_SPAN_UNITS = {"m": "minutes", "h": "hours", "d": "days"}
ExecutionStatus = Literal["success", "error", "canceled", "all"]


class ExecutionQuery(BaseModel):
    """Which executions to read: the newest ``limit`` of one workflow, with a status."""

    workflow_id: str = Field(min_length=1)
    since: datetime | None = None
    limit: int = Field(default=100, ge=1)
    status: ExecutionStatus = "success"
    include_manual: bool = Field(
        default=False, description="Also the runs started by hand in the editor."
    )

    def wanted(self, execution: dict[str, Any]) -> bool:
        """Whether it is production traffic (manual runs only when asked).

        Never n8n's own evaluation runs, nor the pipeline's own calls (benchmark runs,
        simulated users, attacks): their inputs came from a dataset already.
        """
        mode = execution.get("mode")
        return (
            mode != "evaluation"
            and (self.include_manual or mode != "manual")
            and not from_pipeline(execution)
        )


class DatasetDraft(BaseModel):
    """The rows made from the executions read, and what was left out."""

    rows: list[dict[str, Any]]
    executions: int
    duplicates: int
    without_input: int  # the trigger did not run, or did not carry the message


@dataclass(frozen=True)
class Written:
    """What a dataset destination took: rows new there, rows already there redacted."""

    new: int
    redacted: int = 0


def draw_dataset(
    client: N8nClient,
    query: ExecutionQuery,
    destination: Path | str,
    expected_from_output: bool = False,
    redact: bool = False,
    progress: Progress | None = None,
) -> tuple[DatasetDraft, Written]:
    """Rows from the workflow's executions, added to a JSONL file or a Data Table.

    ``destination`` is the file's Path or the table's name; returns the draft and what
    the destination took. No row, nothing written: an empty file or a Data Table without
    columns is no dataset. ``redact`` holds the rows already there to it too.
    """
    workflow = dict(extract_workflow(client.workflow(query.workflow_id)))
    executions = read_executions(client, query, progress)
    draft = rows_from_executions(executions, workflow, expected_from_output, redact)
    if not draft.rows:
        return draft, Written(0)
    if isinstance(destination, Path):
        return draft, append_to_file(destination, draft.rows, redact)
    return draft, Written(append_to_data_table(client, destination, draft.rows, redact))


def read_executions(
    client: N8nClient, query: ExecutionQuery, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """The newest executions that match, page by page to n8n's last page or the limit."""
    status = None if query.status == "all" else query.status
    pages = client.execution_pages(
        query.workflow_id, status, query.since, page_size=min(query.limit, EXECUTION_PAGE_SIZE)
    )
    read: list[dict[str, Any]] = []
    for page in pages:
        # n8n lists newest first: one older than --since ends the read (an n8n that
        # ignored startedAfter is held to it too).
        fresh = [execution for execution in page if not _before(execution, query.since)]
        read += [execution for execution in fresh if query.wanted(execution)][
            : query.limit - len(read)
        ]
        if progress is not None:
            progress(len(read))
        if len(read) >= query.limit or len(fresh) < len(page):
            break
    return read


def since_from(text: str, now: datetime) -> datetime:
    """``--since``: a span back from ``now`` (``30m``, ``24h``, ``7d``) or an ISO date.

    A date or time without an offset is UTC.
    """
    span = _SPAN.fullmatch(text.strip())
    if span is not None:
        return now - timedelta(**{_SPAN_UNITS[span["unit"]]: int(span["amount"])})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a span (30m, 24h, 7d) nor an ISO date (2026-11-30T08:00)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _before(execution: dict[str, Any], since: datetime | None) -> bool:
    started = execution.get("startedAt")
    if since is None or not isinstance(started, str):
        return False
    return datetime.fromisoformat(started.replace("Z", "+00:00")) < since


@dataclass(frozen=True)
class Exchange:
    """One execution: the fields its trigger emitted, and what the workflow answered."""

    execution_id: str
    started_at: str
    session: str | None
    values: dict[str, Any]
    answer: str | None
    tools: list[str]


def rows_from_executions(
    executions: list[dict[str, Any]],
    workflow: dict[str, Any],
    expected_from_output: bool = False,
    redact: bool = False,
) -> DatasetDraft:
    """Rows from executions of ``workflow``, deduplicated by id, oldest first."""
    shape = anatomy(workflow)
    if shape.trigger is None:
        raise ValueError("the workflow has no trigger node, so its executions have no input")
    exchanges = [exchange_of(execution, shape, redact) for execution in executions]
    found = [exchange for exchange in exchanges if exchange is not None]
    groups = _sessions(found) if shape.is_chat else [[exchange] for exchange in found]
    rows = [_row(group, expected_from_output, shape.is_chat) for group in groups]
    unique: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=_first_sent):
        kept = unique.setdefault(row[ID_COLUMN], row)
        if kept is not row:  # the same input again: one row for every execution that sent it
            _merge(kept, row)
    return DatasetDraft(
        rows=list(unique.values()),
        executions=len(executions),
        duplicates=len(rows) - len(unique),
        without_input=len(exchanges) - len(found),
    )


def exchange_of(execution: dict[str, Any], shape: Anatomy, redact: bool = False) -> Exchange | None:
    """The execution's input and answer; None when it has no message to replay."""
    assert shape.trigger is not None
    item = node_item(execution, shape.trigger) or {}
    values = {
        read.column: _without_session(resolve_path(item, read.path)) for read in shape.columns
    }
    if values["input"] is None:
        return None
    if redact:  # before a whole body becomes the input's text: its fields go by their name
        values = _redacted(values)
    values["input"] = as_text(values["input"])
    answered = node_item(execution, shape.end) if shape.end else None
    if answered is None and (final := last_node(execution)) is not None:
        answered = node_item(execution, final)
    try:
        tools = called_tool_names(execution_steps(execution))
    except StepsShapeError:
        tools = []  # steps in a shape no agent writes: the row keeps its input
    session = resolve_path(item, shape.session) if shape.session else None  # as memory keys it
    answer = normalise_response(answered).output if answered is not None else None
    return Exchange(
        execution_id=str(execution.get("id", "")),
        started_at=str(execution.get("startedAt") or ""),
        session=None if session is None else str(session),
        values=values,
        answer=_redacted(answer) if redact else answer,
        tools=tools,  # the workflow's node names, not what users typed
    )


def _without_session(value: Any) -> Any:
    """An object read whole without the session fields of the user who sent it."""
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if key not in SESSION_FIELDS}
    return value


def _sessions(exchanges: list[Exchange]) -> list[list[Exchange]]:
    """Exchanges grouped by chat session, each in the order its messages were sent."""
    groups: dict[str, list[Exchange]] = {}
    for exchange in exchanges:
        key = exchange.session if exchange.session is not None else f"#{exchange.execution_id}"
        groups.setdefault(key, []).append(exchange)
    return [sorted(group, key=_sent_order) for group in groups.values()]


def _sent_order(exchange: Exchange) -> tuple[str, int]:
    number = exchange.execution_id
    return exchange.started_at, int(number) if number.isdigit() else 0


def _row(group: list[Exchange], expected_from_output: bool, chat: bool) -> dict[str, Any]:
    first, last = group[0], group[-1]
    given: dict[str, Any] = dict(first.values)
    if chat:
        given[MESSAGES_COLUMN] = [exchange.values["input"] for exchange in group]
    row = {ID_COLUMN: _row_id(given, chat), **given}
    if expected_from_output:
        tools = list(dict.fromkeys(name for exchange in group for name in exchange.tools))
        row.update({"expectedOutput": last.answer, "expectedTools": tools})
    row["executionIds"] = [exchange.execution_id for exchange in group]
    row["startedAt"] = first.started_at
    return row


def hashed_row_id(kind: str, given: dict[str, Any]) -> str:
    """A row's id: ``kind`` and a hash of what the row asks, so the same input is one row."""
    digest = hashlib.sha256(json.dumps(given, sort_keys=True, ensure_ascii=False).encode())
    return f"{kind}-{digest.hexdigest()[:16]}"


def _row_id(given: dict[str, Any], chat: bool) -> str:
    """An execution row's id: a hash of what it sends (its input and the other fields read)."""
    return hashed_row_id("chat" if chat else "ex", given)


def _first_sent(row: dict[str, Any]) -> tuple[str, int]:
    first = str(row["executionIds"][0]) if row["executionIds"] else ""
    return str(row["startedAt"]), int(first) if first.isdigit() else 0


def _merge(kept: dict[str, Any], newer: dict[str, Any]) -> None:
    """``newer`` (sent later, the same input) into ``kept``: its executions, its answer."""
    kept["executionIds"] = list(dict.fromkeys(kept["executionIds"] + newer["executionIds"]))
    kept.update({key: newer[key] for key in _EXPECTED_COLUMNS if key in newer})


# The columns a row keeps beside what it sends; never part of its id.
_EXPECTED_COLUMNS = ("expectedOutput", "expectedTools")
_META_COLUMNS = frozenset({ID_COLUMN, *_EXPECTED_COLUMNS, "executionIds", "startedAt"})


def _redacted(value: Any) -> Any:
    """``value`` without credentials and personal data; a credential's field is named for it."""
    if isinstance(value, str):
        return redact_personal(value)
    if isinstance(value, dict):
        return {
            key: REDACTED if is_secret_name(key) else _redacted(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


def append_to_file(path: Path, rows: list[dict[str, Any]], redact: bool = False) -> Written:
    """Append the rows whose id the JSONL file does not hold yet.

    ``redact``: the rows already there are redacted too. When one changes, the file is
    rewritten (atomically, keeping its mode); a row whose id is the hash of what it sent
    gets the id of what it sends now, so a redacted input is one row however it came.
    """
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        raise ValueError(f"{path}: a dataset is written as JSON lines (.jsonl)")
    there = list(_rows_in_file(path)) if path.exists() else []
    redacted = 0
    if redact:
        there, redacted = _redacted_rows(there)
    known = {str(row.get(ID_COLUMN)) for row in there}
    new = [row for row in rows if row[ID_COLUMN] not in known]
    if redacted:
        _rewrite(path, there + new)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.writelines(_line(row) for row in new)
    return Written(len(new), redacted)


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _rows_in_file(path: Path) -> Iterator[dict[str, Any]]:
    text = utf8_text(read_bytes(path, _OUT), path, _OUT)
    for number, line in numbered_lines(text):
        try:
            yield json_object(line)
        except NotAJsonObjectError as error:
            raise ValueError(f"{path}: line {number}: {error}") from None


def _rewrite(path: Path, rows: list[dict[str, Any]]) -> None:
    """Replace the file's rows at once: a crash leaves the old file or the new one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        os.fchmod(descriptor, stat.S_IMODE(path.stat().st_mode))
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.writelines(_line(row) for row in rows)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _redacted_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The rows redacted, merged where they then send the same; how many changed."""
    kept: dict[str, dict[str, Any]] = {}
    changed = 0
    for row in rows:
        clean = _redacted_row(row)
        changed += clean != row
        first = kept.setdefault(str(clean.get(ID_COLUMN)), clean)
        if first is not clean:
            _merge(first, clean)
    return list(kept.values()), changed


def _redacted_row(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row without personal data; an id that hashed what it sent follows it."""
    given = {key: value for key, value in row.items() if key not in _META_COLUMNS}
    clean = {key: _redacted_stored(key, value) for key, value in given.items()}
    identifier = row.get(ID_COLUMN)
    chat = str(identifier).startswith("chat-")
    if clean != given and identifier == _row_id(given, chat):
        identifier = _row_id(clean, chat)
    expected = {key: _redacted(row[key]) for key in _EXPECTED_COLUMNS if key in row}
    return {
        key: identifier if key == ID_COLUMN else clean.get(key, expected.get(key, value))
        for key, value in row.items()
    }


def _redacted_stored(name: str, value: Any) -> Any:
    """A stored column redacted as a draw would: a whole body, kept as JSON text, by field."""
    if is_secret_name(name):
        return REDACTED
    if isinstance(value, str) and value[:1] in "{[":
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict | list):
            return as_text(_redacted(parsed))
    return _redacted(value)


# Columns n8n gives every Data Table row.
_DATA_TABLE_OWN = frozenset({"id", "createdAt", "updatedAt"})


def append_to_data_table(
    client: N8nClient, name: str, rows: list[dict[str, Any]], redact: bool = False
) -> int:
    """Insert the rows whose id the Data Table does not hold yet (created when missing).

    Lists and objects are stored as their JSON text, which a dataset reads back.
    ``redact`` refuses a table holding rows it would change: a table cannot be rewritten
    at once, as a file is.
    """
    columns = list(dict.fromkeys(column for row in rows for column in row))
    table = client.find_data_table(name)
    if table is None:
        typed = [DataTableColumn(name=column, type="string") for column in columns]
        table = client.create_data_table(name, typed)
    missing = sorted(set(columns) - {column.name for column in table.columns})
    if missing:
        raise N8nApiError(f"Data Table {name!r} has no column(s) {', '.join(missing)}")
    there = client.rows(table.id)
    if redact:
        _refuse_unredacted(name, there)
    known = {str(row.get(ID_COLUMN)) for row in there}
    new = [row for row in rows if row[ID_COLUMN] not in known]
    client.insert_rows(table.id, [_as_cells(row) for row in new])
    return len(new)


def _refuse_unredacted(name: str, rows: list[dict[str, Any]]) -> None:
    found = [
        (row, column)
        for row in rows
        for column, value in row.items()
        if column not in _DATA_TABLE_OWN | _META_COLUMNS - set(_EXPECTED_COLUMNS)
        and value is not None
        and _redacted_stored(column, value) != value
    ]
    if found:
        row, column = found[0]
        raise ValueError(
            f"Data Table {name!r} holds {len({id(row) for row, _ in found})} row(s) --redact "
            f"would change (first: row {str(row.get(ID_COLUMN))!r}, column {column}): remove "
            "them or write to another table; nothing written"
        )


def _as_cells(row: dict[str, Any]) -> dict[str, Any]:
    return {key: None if value is None else as_text(value) for key, value in row.items()}
