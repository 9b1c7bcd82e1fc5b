"""A typed client of n8n's public API (``/api/v1``): workflows, Data Tables, executions.

Every call has a fixed timeout. Reads are retried on 429 and 5xx, honouring
``Retry-After``; writes are not (n8n may already have applied them). The API key goes
in a header and never into a message: errors name the method, the path and the status.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from itertools import islice
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2
from pydantic import BaseModel, ConfigDict

from n8n_deepeval_pipeline import environment_variables
from n8n_deepeval_pipeline.n8n_api.retries import send
from n8n_deepeval_pipeline.redaction import redact

_PAGE_SIZE = 250
# Executions come with every node's data: smaller pages keep each answer small.
EXECUTION_PAGE_SIZE = 50
API_URL_ENV = "N8N_API_URL"
API_KEY_ENV = "N8N_API_KEY"
TIMEOUT_ENV = "N8N_DEEPEVAL_N8N_TIMEOUT_S"
_KEY_HEADER = "X-N8N-API-KEY"


class N8nApiError(RuntimeError):
    """n8n refused or failed a call; the message is safe to store (no key, no token)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class N8nUnreachable(N8nApiError):
    """n8n did not answer at all: the message names where it was looked for, and why."""


UNREACHABLE_HINT = "is it running, and does N8N_API_URL name it?"


def origin_of(url: str) -> str:
    """Where a URL points: scheme, host and port, without credentials, path or query."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


class DataTableColumn(BaseModel):
    """A typed column of a Data Table."""

    model_config = ConfigDict(extra="ignore")

    name: str
    type: str = "string"


class DataTable(BaseModel):
    """A Data Table as the API lists it."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    columns: list[DataTableColumn] = []


def equals_filter(values: dict[str, Any]) -> dict[str, Any] | None:
    """n8n's row filter for ``column == value`` on every given column (None: no filter)."""
    if not values:
        return None
    return {
        "type": "and",
        "filters": [
            {"columnName": column, "condition": "eq", "value": value}
            for column, value in values.items()
        ],
    }


def timeout_from(environ: Mapping[str, str]) -> float:
    """The API calls' timeout in seconds (``$N8N_DEEPEVAL_N8N_TIMEOUT_S``, default 30)."""
    return float(environment_variables.setting(TIMEOUT_ENV, environ))


def client_from_environment(environ: Mapping[str, str] = os.environ) -> N8nClient | None:
    """A client of the n8n the environment names (URL and key), or None without both."""
    url, key = environ.get(API_URL_ENV), environ.get(API_KEY_ENV)
    return N8nClient(url, key, timeout_from(environ)) if url and key else None


class N8nClient:
    """One n8n instance, reached with an API key."""

    def __init__(
        self, base_url: str, api_key: str, timeout_s: float = 30.0, max_attempts: int = 4
    ) -> None:
        self._http = httpx2.Client(
            base_url=base_url.rstrip("/") + "/api/v1",
            headers={_KEY_HEADER: api_key, "Accept": "application/json"},
            timeout=httpx2.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        )
        self._max_attempts = max_attempts
        self._origin = origin_of(base_url)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> N8nClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(
        self, method: str, path: str, params: dict[str, str] | None = None, **kwargs: Any
    ) -> Any:
        attempts = self._max_attempts if method == "GET" else 1
        try:
            # A refused connection is not retried: nothing listens there, and saying so
            # at once beats a quarter of a minute of backing off.
            response = send(
                self._http, method, path + _query(params), attempts, retry_connect=False, **kwargs
            )
        except httpx2.TransportError as error:
            reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            raise N8nUnreachable(
                f"n8n at {self._origin} cannot be reached ({reason.rstrip(': ')}): "
                + UNREACHABLE_HINT
            ) from None
        return _json_or_raise(method, path, response)

    def check_answers(self) -> None:
        """Raise ``N8nUnreachable`` if n8n does not answer: one cheap call, before a run.

        Any answer will do, a refusal too: the run that needs n8n says what is refused.
        """
        try:
            self._request("GET", "/workflows", params={"limit": "1"})
        except N8nUnreachable:
            raise
        except N8nApiError:
            return

    # Workflows -------------------------------------------------------------------------

    def workflow(self, workflow_id: str) -> dict[str, Any]:
        """The workflow as its triggers run it: the published version when there is one.

        n8n 2.x keeps a draft beside the published ``activeVersion``; a webhook serves
        the published one, so that is the version a benchmark of the live workflow sees.
        """
        found: dict[str, Any] = self._request("GET", f"/workflows/{workflow_id}")
        published = found.get("activeVersion")
        if found.get("active") and isinstance(published, dict) and "nodes" in published:
            return {
                **found,
                "nodes": published["nodes"],
                "connections": published.get("connections", {}),
            }
        return found

    def workflow_version(self, workflow_id: str, version_id: str) -> dict[str, Any] | None:
        """One saved version from the workflow's history: its nodes and connections as saved.

        None when n8n no longer keeps it (history is pruned) or has none.
        """
        try:
            found: dict[str, Any] = self._request(
                "GET", f"/workflows/{workflow_id}/versions/{version_id}"
            )
        except N8nApiError as error:
            if error.status == 404:
                return None
            raise
        return found

    def workflows(self) -> list[dict[str, Any]]:
        """Every workflow of the instance (ids, names, active flags; all pages)."""
        return list(self._pages("/workflows", {"excludePinnedData": "true"}))

    def create_workflow(self, workflow: dict[str, Any]) -> str:
        """Create a workflow (name, nodes, connections, settings); its id."""
        created = self._request("POST", "/workflows", json=workflow)
        return str(created["id"])

    def publish_workflow(self, workflow_id: str) -> None:
        """Publish (activate) the workflow, so its webhooks answer."""
        self._request("POST", f"/workflows/{workflow_id}/publish")

    def unpublish_workflow(self, workflow_id: str) -> None:
        """Unpublish (deactivate) the workflow: its webhooks stop answering, it stays."""
        self._request("POST", f"/workflows/{workflow_id}/unpublish")

    def remove_workflow(self, workflow_id: str, timeout_s: float = 30.0) -> None:
        """Unpublish, archive and delete a workflow; one already gone is not an error."""
        deadline = time.monotonic() + timeout_s
        for method, step in (("POST", "/unpublish"), ("POST", "/archive"), ("DELETE", "")):
            while True:
                try:
                    self._request(method, f"/workflows/{workflow_id}{step}")
                    break
                except N8nApiError as error:
                    if error.status == 404:
                        return
                    # DELETE answers 409 until the unpublish has finished in the background.
                    if error.status != 409 or time.monotonic() > deadline:
                        raise
                    time.sleep(0.25)

    # Data Tables -----------------------------------------------------------------------

    def data_tables(self) -> list[DataTable]:
        """Every Data Table of the instance."""
        return [DataTable.model_validate(item) for item in self._pages("/data-tables", {})]

    def find_data_table(self, id_or_name: str) -> DataTable | None:
        """The Data Table with this id, else with this name (None when there is none)."""
        tables = self.data_tables()
        by_id = [table for table in tables if table.id == id_or_name]
        by_name = [table for table in tables if table.name == id_or_name]
        return next(iter(by_id + by_name), None)

    def create_data_table(self, name: str, columns: list[DataTableColumn]) -> DataTable:
        """A new Data Table with typed columns."""
        body = {"name": name, "columns": [column.model_dump() for column in columns]}
        return DataTable.model_validate(self._request("POST", "/data-tables", json=body))

    def rows(self, table_id: str, filter_: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every row of a Data Table (all pages), optionally filtered."""
        params = {"filter": json.dumps(filter_)} if filter_ else {}
        return list(self._pages(f"/data-tables/{table_id}/rows", params))

    def insert_rows(self, table_id: str, rows: list[dict[str, Any]]) -> None:
        """Append rows."""
        if rows:
            body = {"data": rows, "returnType": "count"}
            self._request("POST", f"/data-tables/{table_id}/rows", json=body)

    def upsert_row(self, table_id: str, keys: dict[str, Any], row: dict[str, Any]) -> None:
        """Update the rows matching ``keys``, or insert ``row`` when none does."""
        body = {"filter": equals_filter(keys), "data": row}
        self._request("POST", f"/data-tables/{table_id}/rows/upsert", json=body)

    # Executions ------------------------------------------------------------------------

    def executions(self, workflow_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The workflow's latest ``limit`` executions with their data, newest first."""
        params = {"workflowId": workflow_id, "includeData": "true"}
        return list(islice(self._pages("/executions", params), limit))

    def execution(self, execution_id: int | str) -> dict[str, Any]:
        """One execution with its data."""
        return dict(
            self._request("GET", f"/executions/{execution_id}", params={"includeData": "true"})
        )

    def execution_pages(
        self,
        workflow_id: str,
        status: str | None = None,
        started_after: datetime | None = None,
        page_size: int = EXECUTION_PAGE_SIZE,
    ) -> Iterator[list[dict[str, Any]]]:
        """The workflow's executions with their data, newest first, a page at a time.

        Every page up to the last one (n8n's ``nextCursor``); ``status`` and
        ``started_after`` are n8n's own filters.
        """
        params = {"workflowId": workflow_id, "includeData": "true"}
        if status is not None:
            params["status"] = status
        if started_after is not None:
            params["startedAfter"] = started_after.astimezone(UTC).isoformat()
        return self._page_lists("/executions", params, page_size)

    def _pages(self, path: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        for page in self._page_lists(path, params, _PAGE_SIZE):
            yield from page

    def _page_lists(
        self, path: str, params: dict[str, str], page_size: int
    ) -> Iterator[list[dict[str, Any]]]:
        cursor: str | None = None
        while True:
            query = {**params, "limit": str(page_size), **({"cursor": cursor} if cursor else {})}
            page = self._request("GET", path, params=query)
            yield list(page.get("data", []))
            cursor = page.get("nextCursor")
            if not cursor:
                return


def _query(params: dict[str, str] | None) -> str:
    """A query string with every reserved character percent-encoded.

    n8n rejects a JSON filter holding a raw one, and a space must not become ``+``.
    """
    if not params:
        return ""
    return "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in params.items())


def _json_or_raise(method: str, path: str, response: httpx2.Response) -> Any:
    if response.status_code >= 400:
        reason = _short_reason(response)
        raise N8nApiError(
            f"{method} {path}: HTTP {response.status_code}{reason}", response.status_code
        )
    if not response.content:
        return {}
    try:
        return response.json()
    except ValueError:
        raise N8nApiError(f"{method} {path}: the answer is not JSON") from None


def _short_reason(response: httpx2.Response) -> str:
    """n8n's message, without the key it was sent (n8n may quote it), cut short after."""
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        message = None
    sent = [response.request.headers.get(_KEY_HEADER, "")]
    return f" ({redact(str(message), sent)[:200]})" if message else ""
