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
import re
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

        Never n8n's own evaluation runs: their inputs came from a dataset already.
        """
        mode = execution.get("mode")
        return mode != "evaluation" and (self.include_manual or mode != "manual")


class DatasetDraft(BaseModel):
    """The rows made from the executions read, and what was left out."""

    rows: list[dict[str, Any]]
    executions: int
    duplicates: int
    without_input: int  # the trigger did not run, or did not carry the message


def draw_dataset(
    client: N8nClient,
    query: ExecutionQuery,
    destination: Path | str,
    expected_from_output: bool = False,
    redact: bool = False,
    progress: Progress | None = None,
) -> tuple[DatasetDraft, int]:
    """Rows from the workflow's executions, added to a JSONL file or a Data Table.

    ``destination`` is the file's Path or the table's name; returns the draft and how
    many of its rows were new there. No row, nothing written: an empty file or a Data
    Table without columns is no dataset.
    """
    workflow = dict(extract_workflow(client.workflow(query.workflow_id)))
    executions = read_executions(client, query, progress)
    draft = rows_from_executions(executions, workflow, expected_from_output, redact)
    if not draft.rows:
        return draft, 0
    if isinstance(destination, Path):
        return draft, append_to_file(destination, draft.rows)
    return draft, append_to_data_table(client, destination, draft.rows)


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
    unique = list({row[ID_COLUMN]: row for row in reversed(rows)}.values())  # newest kept
    unique.sort(key=lambda row: str(row["startedAt"]))
    return DatasetDraft(
        rows=unique,
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
    session = item.get("sessionId")
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
    row = {ID_COLUMN: hashed_row_id("chat" if chat else "ex", given), **given}
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


def append_to_file(path: Path, rows: list[dict[str, Any]]) -> int:
    """Append the rows whose id the JSONL file does not hold yet; how many were new."""
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        raise ValueError(f"{path}: a dataset is written as JSON lines (.jsonl)")
    known = set(_ids_in_file(path)) if path.exists() else set()
    new = [row for row in rows if row[ID_COLUMN] not in known]
    with path.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in new)
    return len(new)


def _ids_in_file(path: Path) -> Iterator[str]:
    text = utf8_text(read_bytes(path, _OUT), path, _OUT)
    for number, line in numbered_lines(text):
        try:
            yield str(json_object(line).get(ID_COLUMN))
        except NotAJsonObjectError as error:
            raise ValueError(f"{path}: line {number}: {error}") from None


def append_to_data_table(client: N8nClient, name: str, rows: list[dict[str, Any]]) -> int:
    """Insert the rows whose id the Data Table does not hold yet (created when missing).

    Lists and objects are stored as their JSON text, which a dataset reads back.
    """
    columns = list(dict.fromkeys(column for row in rows for column in row))
    table = client.find_data_table(name)
    if table is None:
        typed = [DataTableColumn(name=column, type="string") for column in columns]
        table = client.create_data_table(name, typed)
    missing = sorted(set(columns) - {column.name for column in table.columns})
    if missing:
        raise N8nApiError(f"Data Table {name!r} has no column(s) {', '.join(missing)}")
    known = {str(row.get(ID_COLUMN)) for row in client.rows(table.id)}
    new = [row for row in rows if row[ID_COLUMN] not in known]
    client.insert_rows(table.id, [_as_cells(row) for row in new])
    return len(new)


def _as_cells(row: dict[str, Any]) -> dict[str, Any]:
    return {key: None if value is None else as_text(value) for key, value in row.items()}
