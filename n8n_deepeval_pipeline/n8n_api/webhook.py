"""Call a workflow over its webhook, once per run (or once per message of a multi-turn run).

``WebhookCaller`` calls it for the runs of a partition; ``SessionCaller`` once per message
of simulated conversations, asynchronously, on the simulator's event loop.

Runs go out concurrently up to ``maxConcurrency``, each with a timeout. A failed call (a
non-2xx status, a timeout, an unparsable answer, a non-empty ``error`` in a 2xx answer)
becomes that run's ``target_error`` with the status and a short reason; the other runs
go on. POST and PATCH are never retried: the workflow may already have acted. The URL
and the headers can carry tokens, so no message, row or log line ever contains them:
the target is named by ``webhook_identity``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote_plus, urlencode, urlsplit, urlunsplit

import httpx2

from n8n_deepeval_pipeline.benchmark.n8n_target import DEFAULT_BODY, UNSAFE_TO_RETRY, WebhookTarget
from n8n_deepeval_pipeline.data_limits import loads_json
from n8n_deepeval_pipeline.n8n_api.own_traffic import mark_request
from n8n_deepeval_pipeline.n8n_api.retries import a_send, send
from n8n_deepeval_pipeline.n8n_data.json_fields import structured
from n8n_deepeval_pipeline.n8n_data.responses import (
    NormalisedResponse,
    ResponseShapeError,
    image_answer,
    normalise_response,
    parse_body,
)
from n8n_deepeval_pipeline.n8n_data.templates import (
    TemplateRenderError,
    env_names,
    render,
    render_url,
)
from n8n_deepeval_pipeline.redaction import redact, url_secrets
from n8n_deepeval_pipeline.tables.rows import AgentOutput, DatasetRow, ExpandedRun
from n8n_deepeval_pipeline.tables.run_items import eval_context
from n8n_deepeval_pipeline.tables.steps import expanded_runs

Progress = Callable[[int, int], None]


class TargetError(ValueError):
    """One call failed; the message is safe to store (no URL, no header)."""


def webhook_identity(url: str) -> str:
    """What tables and logs name the target by: never the URL, which may hold a token."""
    return f"n8n:webhook:{hashlib.sha256(url.encode('utf-8')).hexdigest()[:12]}"


def template_context(
    row: DatasetRow, run: ExpandedRun, session_id: str, env: Mapping[str, str]
) -> dict[str, Any]:
    """What body, header and URL templates may use, with the seed's field names."""
    fields = {
        "input": row.input,
        "expectedOutput": row.expected_output,
        "context": row.context,
        "retrievalContext": row.retrieval_context,
        "expectedTools": row.expected_tools,
        "label": row.label,
        "turns": row.turns,
        "chatbotRole": row.chatbot_role,
        "expectedOutcome": row.expected_outcome,
        "scenario": row.scenario,
        "userDescription": row.user_description,
        "inputImages": row.input_images,
    }
    return {**fields, "row": row.raw, "evalContext": eval_context(run), "sessionId": session_id,
            "env": env}  # fmt: skip


def request_problems(
    target: WebhookTarget, row: DatasetRow, environ: Mapping[str, str], body_field: str = "body"
) -> list[str]:
    """What in the target's request templates fails for ``row``, each named by its field.

    The templates are rendered as a run renders them (the same sandbox and context) and
    the body as it would be sent; a variable of ``target.env`` that is not set is given
    a stand-in, so that the templates' own faults are found (``unset_env`` says it).
    ``body_field``: the body's name in the file (a harness target's is ``input``).
    """
    (run,) = expanded_runs([row], 1, "validate")
    env = {name: environ.get(name, f"<{name}>") for name in target.env}
    context = template_context(row, run, run.run_id, env)
    problems = []
    try:
        messages = message_list(target, row)
    except TargetError as error:
        problems.append(f"target.messagesColumn: {error}")
        messages = [None]
    if messages[0] is not None:
        context["input"] = messages[0]
    fields: list[tuple[str, Any]] = [(f"target.headers.{k}", v) for k, v in target.headers.items()]
    fields += _leaves(f"target.{body_field}", target.body)
    if target.url is not None:
        try:
            render_url(target.url, context)
        except TemplateRenderError as error:
            problems.append(f"target.url: {error}")
    for field, template in fields:
        try:
            render(template, context)
        except TemplateRenderError as error:
            problems.append(f"{field}: {error}")
    if not problems:
        body = render(target.body, context) if target.body is not None else default_body(context)
        try:
            json.dumps(body if target.method != "GET" else _query(body), ensure_ascii=False)
        except (TypeError, ValueError) as error:
            problems.append(f"target.{body_field}: the rendered body is not JSON ({error})")
    return [f"{problem} (with row {row.row_id!r})" for problem in problems]


def unset_env(target: WebhookTarget, environ: Mapping[str, str]) -> list[str]:
    """The variables the templates read that are not set here: each fails every call."""
    read = env_names([target.url, target.body, *target.headers.values()])
    return [
        f"target.env: {name} is not set here: a template that reads it fails on every call"
        for name in target.env
        if name in read and name not in environ
    ]


def _leaves(field: str, template: Any) -> list[tuple[str, Any]]:
    """Each string of a template object with its path (``target.body.q[1]``)."""
    if isinstance(template, dict):
        return [
            pair for key, value in template.items() for pair in _leaves(f"{field}.{key}", value)
        ]
    if isinstance(template, list):
        return [
            pair for i, value in enumerate(template) for pair in _leaves(f"{field}[{i}]", value)
        ]
    return [(field, template)] if template is not None else []


def default_body(context: dict[str, Any]) -> dict[str, Any]:
    """``DEFAULT_BODY`` for one run, without the fields the row leaves unset."""
    return {key: value for key, value in render(DEFAULT_BODY, context).items() if value is not None}


def message_list(target: WebhookTarget, row: DatasetRow) -> list[str | None]:
    """The messages a run of ``row`` sends one by one; ``[None]``: one call with its input."""
    column = target.messages_column
    if column is None:
        return [None]
    value = structured(row.raw.get(column), f"column {column!r}", TargetError)
    if not isinstance(value, list) or not value:
        raise TargetError(f"column {column!r} of row {row.row_id!r} holds no list of messages")
    return [str(message) for message in value]


class WebhookCaller:
    """Calls one webhook for the runs of one partition."""

    def __init__(self, target: WebhookTarget, url: str, env: Mapping[str, str]) -> None:
        self.target = target
        # Only the variables the benchmark lists, as they were when the run began.
        self.env = {name: env[name] for name in target.env if name in env}
        self.identity = webhook_identity(url)
        self._url = url
        self._http = httpx2.Client(
            timeout=httpx2.Timeout(target.timeout_s, connect=min(target.timeout_s, 10.0)),
            limits=httpx2.Limits(max_connections=target.max_concurrency),
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def outputs(
        self,
        runs: list[ExpandedRun],
        rows: dict[str, DatasetRow],
        progress: Progress | None = None,
    ) -> list[AgentOutput]:
        """One output per run, in the runs' order; failures are error rows, not gaps."""
        with ThreadPoolExecutor(max_workers=self.target.max_concurrency) as pool:
            futures = {
                pool.submit(self._run, run, rows[run.row_id]): index
                for index, run in enumerate(runs)
            }
            finished: dict[int, AgentOutput] = {}
            for done, future in enumerate(as_completed(futures), start=1):
                finished[futures[future]] = future.result()
                if progress is not None:
                    progress(done, len(runs))
        return [finished[index] for index in range(len(runs))]

    def _run(self, run: ExpandedRun, row: DatasetRow) -> AgentOutput:
        session_id = run.run_id  # one session per run: repeated runs never share memory
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        turns: list[dict[str, Any]] = []
        steps: list[Any] | None = None  # None: no answer carried steps (n8n may have them)
        answer = NormalisedResponse()
        try:
            for message in message_list(self.target, row):
                answer = self.answer(row, run, session_id, message)
                session_id = answer.session_id or session_id
                if answer.intermediate_steps is not None:
                    steps = (steps or []) + answer.intermediate_steps
                turns += [
                    {"role": "user", "content": (row.input if message is None else message) or ""},
                    {"role": "assistant", "content": answer.output or ""},
                ]
        except TargetError as error:
            failed = _failed(run, str(error), time.perf_counter() - started, session_id)
            return failed.model_copy(update={"started_at": started_at})
        return AgentOutput(
            workflow_hash=run.workflow_hash,
            run_id=run.run_id,
            actual_output=answer.output,
            intermediate_steps=steps,
            turns=turns if self.target.messages_column else None,
            session_id=session_id,
            latency_s=round(time.perf_counter() - started, 4),
            started_at=started_at,
        )

    def answer(
        self, row: DatasetRow, run: ExpandedRun, session_id: str, message: str | None = None
    ) -> NormalisedResponse:
        """One call in the run's session; ``message`` is sent as the input instead of the row's.

        A failed call raises ``TargetError``.
        """
        context = template_context(row, run, session_id, self.env)
        if message is not None:
            context["input"] = message
        return self._call(context)

    def _call(self, context: dict[str, Any]) -> NormalisedResponse:
        url, headers, body = prepared_request(self.target, self._url, context)
        return read_answer(self.target, self._send(url, headers, body))

    def _send(self, url: str, headers: dict[str, str], body: Any) -> httpx2.Response:
        method = self.target.method
        attempts = 1 if method in UNSAFE_TO_RETRY else self.target.retries + 1
        try:
            sent_to, request = _request(method, url, headers, body)
            response = send(self._http, method, sent_to, attempts, **request)
        except httpx2.TimeoutException:
            raise TargetError(f"timeout after {self.target.timeout_s:g} s") from None
        except httpx2.TransportError as error:
            raise TargetError(f"connection failed ({type(error).__name__})") from None
        return refuse_failure(response, url)


class SessionCaller:
    """Calls one webhook once per message, asynchronously: the simulated users' turns.

    Each message goes out in the session its conversation names (``sessionId`` of the
    templates, the body's session field, the session header), at most ``maxConcurrency``
    at a time over all conversations. A failed call raises ``TargetError``.
    """

    def __init__(self, target: WebhookTarget, url: str, env: Mapping[str, str]) -> None:
        self.target = target
        self.env = {name: env[name] for name in target.env if name in env}
        self._url = url
        self._http: httpx2.AsyncClient | None = None  # made on the loop that uses it
        self._slots: asyncio.Semaphore | None = None

    async def message(
        self, row: DatasetRow, run: ExpandedRun, session_id: str, text: str
    ) -> tuple[NormalisedResponse, float]:
        """The workflow's answer to ``text`` in session ``session_id``, and its latency (s)."""
        if self._http is None or self._slots is None:
            target = self.target
            self._http = httpx2.AsyncClient(
                timeout=httpx2.Timeout(target.timeout_s, connect=min(target.timeout_s, 10.0)),
                limits=httpx2.Limits(max_connections=target.max_concurrency),
            )
            self._slots = asyncio.Semaphore(target.max_concurrency)
        context = template_context(row, run, session_id, self.env)
        context["input"] = text
        url, headers, body = prepared_request(self.target, self._url, context)
        async with self._slots:
            started = time.perf_counter()
            response = await self._send(self._http, url, headers, body)
            latency_s = time.perf_counter() - started
        return read_answer(self.target, response), latency_s

    async def _send(
        self, http: httpx2.AsyncClient, url: str, headers: dict[str, str], body: Any
    ) -> httpx2.Response:
        method = self.target.method
        attempts = 1 if method in UNSAFE_TO_RETRY else self.target.retries + 1
        try:
            sent_to, request = _request(method, url, headers, body)
            response = await a_send(http, method, sent_to, attempts, **request)
        except httpx2.TimeoutException:
            raise TargetError(f"timeout after {self.target.timeout_s:g} s") from None
        except httpx2.TransportError as error:
            raise TargetError(f"connection failed ({type(error).__name__})") from None
        return refuse_failure(response, url)

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._http is not None:
            await self._http.aclose()


def prepared_request(
    target: WebhookTarget, url_template: str, context: dict[str, Any]
) -> tuple[str, dict[str, str], Any]:
    """The URL, headers and body of one call, rendered for ``context`` with its session.

    Every call carries the pipeline's mark (``own_traffic``), so that no reader of the
    workflow's executions takes it for a user's.
    """
    try:
        url = render_url(url_template, context)
        headers = {name: str(render(value, context)) for name, value in target.headers.items()}
        body = render(target.body, context) if target.body is not None else None
    except TemplateRenderError as error:
        raise TargetError(str(error)) from None
    body = default_body(context) if body is None else body
    if isinstance(body, dict) and target.session_field:
        body.setdefault(target.session_field, context["sessionId"])
    if target.session_header:
        headers[target.session_header] = context["sessionId"]
    # A GET's body becomes its query string: the header alone marks it.
    mark_request(headers, body if target.method != "GET" else None, context["evalContext"])
    return url, headers, body


def _request(
    method: str, url: str, headers: dict[str, str], body: Any
) -> tuple[str, dict[str, Any]]:
    """The URL to send to and the client's keyword arguments.

    GET adds the body's fields to the URL's own query string.
    """
    request: dict[str, Any] = {"headers": headers}
    if method == "GET":
        url = with_query(url, _query(body))
    elif isinstance(body, str):
        request["content"] = body.encode("utf-8")
    else:
        request["json"] = body
    return url, request


def refuse_failure(response: httpx2.Response, url: str) -> httpx2.Response:
    """The response, unless its status is a failure (``TargetError``, the URL's secrets out)."""
    if response.status_code >= 300:
        reason = redact(_reason(response), _webhook_secrets(url))[:200]
        raise TargetError(f"HTTP {response.status_code}: {reason}")
    return response


def read_answer(target: WebhookTarget, response: httpx2.Response) -> NormalisedResponse:
    """The workflow's answer normalised; a shape it cannot read or an error is a TargetError.

    An answer that is an image (a Respond to Webhook node answering binary data) is that
    image as the output.
    """
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind.startswith("image/"):
        return NormalisedResponse(output=image_answer(response.content, kind))
    try:
        answer = normalise_response(
            parse_body(response.text), target.response_path, target.session_parser
        )
    except ResponseShapeError as error:
        raise TargetError(f"HTTP {response.status_code}: {error}") from None
    if answer.error:
        raise TargetError(f"HTTP {response.status_code}: error in the answer: {answer.error}")
    return answer


def with_query(url: str, fields: dict[str, str]) -> str:
    """``url`` with ``fields`` added to its own query string, which is kept as it is.

    A field the URL's query already names is left out: the template's own value wins.
    """
    parts = urlsplit(url)
    named = {unquote_plus(pair.partition("=")[0]) for pair in parts.query.split("&") if pair}
    added = urlencode({k: v for k, v in fields.items() if k not in named}, quote_via=quote)
    query = "&".join(part for part in (parts.query, added) if part)
    return urlunsplit(parts._replace(query=query))


def _query(body: Any) -> dict[str, str]:
    """GET sends the body's fields as query parameters (structures as JSON text)."""
    if not isinstance(body, dict):
        return {}
    return {
        key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for key, value in body.items()
        if value is not None
    }


def _reason(response: httpx2.Response) -> str:
    try:
        body = loads_json(response.text)
    except ValueError:  # not JSON, or too deep (DataLimitError)
        return response.reason_phrase or "no reason given"
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or response.reason_phrase)
    return response.reason_phrase or "no reason given"


# n8n's own path prefixes: never a secret, and words its errors need.
_N8N_PREFIXES = frozenset({"webhook", "webhook-test", "webhook-waiting", "form", "form-test"})


def _webhook_secrets(url: str) -> list[str]:
    """n8n quotes the webhook path in some errors; the path may be the secret."""
    segments = [s for s in urlsplit(url).path.split("/") if s and s not in _N8N_PREFIXES]
    return segments + url_secrets(url)


def _failed(run: ExpandedRun, reason: str, latency_s: float, session_id: str) -> AgentOutput:
    return AgentOutput(
        workflow_hash=run.workflow_hash,
        run_id=run.run_id,
        session_id=session_id,
        latency_s=round(latency_s, 4),
        error=f"target_error: {reason}",
        error_kind="target_error",
    )
