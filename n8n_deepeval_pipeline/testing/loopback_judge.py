"""A loopback judge that speaks each provider's HTTP API: a test and benchmark double, not a judge.

It answers after a fixed latency, in the API the request's path names: OpenAI's chat
completions (``…/chat/completions``: OpenAI, Azure's deployment paths, OpenRouter,
DeepSeek, any OpenAI-compatible client), Anthropic's Messages (``/v1/messages``),
Gemini's ``…:generateContent``, Ollama's ``/api/chat`` and Bedrock's Converse
(``/model/{id}/converse``). The answer is JSON
that fits the schema the request carries (``response_format``, ``output_config``,
``responseSchema``, ``format``), values drawn from a hash of the whole request, so
answers are deterministic and two requests that differ in any field get different
answers; a request without a schema (JSON mode, Bedrock) gets the one of ``schemas``
(candidate answer schemas) whose keys the prompt's example JSON names. Token usage is
reported in each API's form. A chat completion with ``logprobs: true`` and no schema
(G-Eval's raw call) gets ``{score, reason}`` with the log-probabilities of its tokens.
A fault plan makes it misbehave
the way real judges do, one fault per request, in order: ``429`` (``429:2`` adds
``Retry-After: 2``, as ``503:2`` does), ``400``, ``403``, ``500``, ``503``, ``529``
(Anthropic's "overloaded"), ``slow`` (answers after ``slow_s``), ``drop`` (closes the
connection without an answer), ``invalid_json``, ``schema_violation``, ``refuse_schema``
(a 400 about the schema, as a model without structured outputs answers) and
``401`` (refuses the key, quoting it and the URL with its query, as careless servers
do); with ``requests_per_minute`` / ``tokens_per_minute`` it is a rate-limited provider
(a bucket refilled continuously, taken from when a request arrives, at the tokens its
answer's usage reports; beyond it a 429 at once with Retry-After; OpenAI's
``x-ratelimit-*`` headers on every answer; with ``announce`` it says less, as many
judges do: ``retry-after`` only that header on a 429, ``nothing`` no header at all);
``ok`` answers normally, and so does every request after the plan runs out
(``fail_always`` makes every request a 500 instead, ``reject_key`` a 401). ``fixed`` pins
fields of every structured answer (``{"score": 5}``): judges of a panel that answer
differently. ``free_text`` answers a request that asks for no format at all (a
synthesizer's evolution) with a sentence drawn from the request, rather than the fixed
JSON, so that different prompts get different text. With ``distinct_text`` every free
text of a structured answer ends with a digest of its request, so that text the judge
writes (a red team's attacks) differs from request to request and shows where it went.
``POST /v1/embeddings`` answers each input with a unit vector drawn from a hash of its
text (``EMBEDDING_SIZE`` floats, or their base64 form when asked), for DeepEval's
document path.

It is a plain asyncio HTTP/1.1 server (keep-alive, Content-Length bodies), so a
dropped connection is really dropped. Run it in-process for tests
(``LoopbackJudge(...).start()``) or as a process for benchmarks:

    python -m n8n_deepeval_pipeline.testing.loopback_judge --port 8765 --latency-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import math
import re
import signal
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal, get_args

from n8n_deepeval_pipeline.judging.logprob_answers import raw_completion, rubric_answer
from n8n_deepeval_pipeline.judging.schema_filler import PLACEHOLDER, fill_schema

EMBEDDING_SIZE = 16
# What a rate-limited loopback judge tells of its budget: OpenAI's headers on every answer
# (and Retry-After on a 429), Retry-After on a 429 only, or nothing.
Announce = Literal["headers", "retry-after", "nothing"]
ANNOUNCE: tuple[str, ...] = get_args(Announce)
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error",
            503: "Service Unavailable", 529: "Overloaded"}  # fmt: skip
# The API a request's path speaks.
_ROUTES = (
    ("/chat/completions", "openai"),
    ("/v1/messages", "anthropic"),
    (":generateContent", "gemini"),
    ("/api/chat", "ollama"),
    ("/converse", "bedrock"),
)
_ERROR_CODES = ("400", "403", "429", "500", "503", "529")
_QUOTED_KEY = re.compile(r"[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']\s*:")


def request_seed(body: dict[str, Any]) -> bytes:
    """What every answer to a request is drawn from: a hash of the whole request."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()


def prompt_text(messages: list[dict[str, Any]]) -> str:
    """The text of a request's messages, whether each content is a string or a parts list."""

    def text(content: Any) -> str:
        if isinstance(content, list):
            return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        return str(content or "")

    return " ".join(text(message.get("content")) for message in messages)


def schema_named_by(prompt: str, schemas: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The schema among ``schemas`` whose answer the prompt's example JSON shows.

    DeepEval's prompts end with an example of the JSON they want: its first key must be
    one of the schema's properties and every required one must be named in it; of
    several, the one with most properties named.
    """
    start = prompt.rfind("Example JSON")
    example = prompt[start : start + 1500] if start != -1 else prompt[-1500:]
    first = _QUOTED_KEY.search(example)
    if first is None:
        return None
    named = set(_QUOTED_KEY.findall(example))
    fitting = [
        schema
        for schema in schemas
        if first.group(1) in schema.get("properties", {})
        and set(schema.get("required", [])) <= named
    ]
    return max(fitting, key=lambda s: len(named & set(s["properties"])), default=None)


def gemini_json_schema(schema: Any) -> Any:
    """Gemini's schema (``type: OBJECT``, ``nullable``) as a JSON schema."""
    if isinstance(schema, dict):
        converted = {key: gemini_json_schema(value) for key, value in schema.items()}
        if isinstance(converted.get("type"), str):
            converted["type"] = converted["type"].lower()
        return converted
    if isinstance(schema, list):
        return [gemini_json_schema(item) for item in schema]
    return schema


def answer_for(
    body: dict[str, Any], fixed: dict[str, Any] | None = None, distinct_text: bool = False
) -> str:
    """The assistant text for a chat completion request (``fixed`` fields pinned)."""
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get(
        "schema"
    )
    if not schema:
        return json.dumps({"reason": "loopback answer", "verdict": "yes", "score": 0.5})
    prompt = prompt_text(body.get("messages", []))
    answer = fill_schema(schema, request_seed(body), prompt)
    if distinct_text:
        answer = _tagged(answer, request_seed(body).hex()[:8])
    return json.dumps(_pinned(answer, fixed))


def _tagged(value: Any, tag: str) -> Any:
    """Every free text of ``value`` (not a choice such as yes/no) followed by ``tag``."""
    if isinstance(value, str) and value.startswith(PLACEHOLDER):
        return f"{value} {tag}"
    if isinstance(value, dict):
        return {key: _tagged(item, tag) for key, item in value.items()}
    if isinstance(value, list):
        return [_tagged(item, tag) for item in value]
    return value


def _pinned(answer: Any, fixed: dict[str, Any] | None) -> Any:
    """The answer with the fixed fields it has replaced by their pinned values."""
    if not fixed or not isinstance(answer, dict):
        return answer
    return {**answer, **{key: value for key, value in fixed.items() if key in answer}}


def _completion(
    body: dict[str, Any], text: str, logprobs: dict[str, Any] | None = None
) -> dict[str, Any]:
    prompt_tokens = len(prompt_text(body.get("messages", []))) // 4
    return raw_completion(text, logprobs, body.get("model", "loopback"), prompt_tokens)


class LoopbackJudge:
    """The server, its fault plan and what it saw."""

    def __init__(
        self,
        latency_s: float = 0.05,
        port: int = 0,
        faults: list[str] | None = None,
        slow_s: float = 5.0,
        fail_always: bool = False,
        reject_key: bool = False,
        fixed: dict[str, Any] | None = None,
        free_text: bool = False,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        burst_s: float = 60.0,
        announce: Announce = "headers",
        distinct_text: bool = False,
        schemas: list[dict[str, Any]] | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.announce = announce
        self.schemas = list(schemas or [])
        self.bucket = (
            RateBucket(requests_per_minute, tokens_per_minute, burst_s)
            if requests_per_minute or tokens_per_minute
            else None
        )
        self.rate_limited = 0  # requests refused with 429 by the bucket
        # (time.time(), tokens) of every request the bucket let in, for a run's profile
        self.admitted: list[tuple[float, int]] = []
        self.port = port
        self.faults = list(faults or [])
        self.slow_s = slow_s
        self.fail_always = fail_always
        self.reject_key = reject_key
        self.fixed = fixed
        self.free_text = free_text
        self.distinct_text = distinct_text
        self.requests = 0
        self.served = Counter[str]()
        self.in_flight = 0
        self.max_in_flight = 0
        self.headers_seen: list[dict[str, str]] = []
        self.urls_seen: list[str] = []
        self.bodies: list[dict[str, Any]] = []  # every request body, in arrival order
        self.raw_bodies: list[bytes] = []  # the same bodies, as the bytes that came
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of this server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _next_fault(self) -> str:
        with self._lock:
            if self.fail_always:
                return "500"
            if self.reject_key:
                return "401"
            return self.faults.pop(0) if self.faults else "ok"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                target, headers, body = request
                if not await self._respond(writer, target, headers, body):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _respond(
        self, writer: asyncio.StreamWriter, target: str, headers: dict[str, str], body: bytes
    ) -> bool:
        self.requests += 1
        self.headers_seen.append(headers)
        self.urls_seen.append(target)
        path = target.split("?")[0]
        if path.endswith("/embeddings"):
            await asyncio.sleep(self.latency_s)
            _write(writer, 200, _embeddings(json.loads(body or b"{}")))
            return True
        api = next((api for suffix, api in _ROUTES if path.endswith(suffix)), None)
        if api is None:
            _write(writer, 404, {"error": {"message": "not found"}})
            return True
        fault = self._next_fault()
        self.served[fault.split(":")[0]] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if fault in ("drop", "401"):
                await asyncio.sleep(self.latency_s)
                if fault == "drop":
                    writer.transport.abort()
                    return False
                _write(writer, 401, {"error": {"message": _refusal(headers, target)}})
                return True
            request = json.loads(body or b"{}")
            self.bodies.append(request)
            self.raw_bodies.append(body)
            status, payload, extra = self._answer(api, fault, request)
            if status == 200 and api == "openai" and self.bucket is not None:
                # On arrival, as a provider refuses: a 429 costs no latency.
                admitted, extra = self._admit(self.bucket, payload["usage"]["total_tokens"])
                if not admitted:
                    _write(writer, 429, {"error": {"message": "rate limit reached"}}, extra)
                    return True
            await asyncio.sleep(self.slow_s if fault == "slow" else self.latency_s)
            _write(writer, status, payload, extra)
            return True
        finally:
            self.in_flight -= 1

    def _admit(self, bucket: RateBucket, tokens: int) -> tuple[bool, dict[str, str]]:
        """Whether the bucket lets a call of ``tokens`` in now, and the headers to send."""
        with self._lock:
            admitted, headers = bucket.take(tokens, time.monotonic())
        if self.announce != "headers":
            told = ("retry-after",) if self.announce == "retry-after" else ()
            headers = {name: value for name, value in headers.items() if name in told}
        if admitted:
            self.admitted.append((time.time(), tokens))
        else:
            self.rate_limited += 1
        return admitted, headers

    def _answer(
        self, api: str, fault: str, request: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, body and headers of the answer to ``request`` in ``api``, under ``fault``."""
        code, _, retry_after = fault.partition(":")
        if code in _ERROR_CODES:
            extra = {"retry-after": retry_after} if retry_after else {}
            return int(code), _error(f"injected {code}", int(code)), extra
        if fault == "refuse_schema":
            message = "output_config.format: this model does not support the json_schema format"
            return 400, _error(message, 400), {}
        if api == "openai":
            text, logprobs = self._reply(request)
        else:
            text, logprobs = self._structured(request, *_SCHEMA_AND_PROMPT[api](request)), None
        if fault == "invalid_json":
            text = text[: len(text) // 2]
        elif fault == "schema_violation":
            text = json.dumps({"unexpected": True})
        return 200, _ANSWERS[api](request, text, logprobs), {}

    def _reply(self, request: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """The answer's text, and its log-probabilities for G-Eval's raw call."""
        if request.get("logprobs") and not request.get("response_format"):
            top = int(request.get("top_logprobs") or 0)
            return rubric_answer(request_seed(request), "loopback reason", top)
        if self.free_text and not request.get("response_format"):
            return f"Loopback text {request_seed(request).hex()[:12]}: how does it work?", None
        response_format = request.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get(
            "schema"
        )
        prompt = prompt_text(request.get("messages", []))
        return self._structured(request, schema, prompt), None

    def _structured(self, request: dict[str, Any], schema: Any, prompt: str) -> str:
        """JSON fitting ``schema``, or the schema the prompt names, drawn from the request."""
        schema = schema or schema_named_by(prompt, self.schemas)
        if not schema:
            return json.dumps({"reason": "loopback answer", "verdict": "yes", "score": 0.5})
        answer = fill_schema(schema, request_seed(request), prompt)
        if self.distinct_text:
            answer = _tagged(answer, request_seed(request).hex()[:8])
        return json.dumps(_pinned(answer, self.fixed))

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> LoopbackJudge:
        """Serve from a background thread; returns once it listens."""
        ready = threading.Event()
        thread = threading.Thread(
            target=lambda: asyncio.run(self._serve_quietly(ready)), daemon=True
        )
        thread.start()
        ready.wait(10)
        return self

    async def _serve_quietly(self, ready: threading.Event) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve(ready)

    def stop(self) -> None:
        """Stop serving."""
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)


class RateBucket:
    """Requests and tokens per minute as a provider refills them: continuously.

    The bucket holds ``burst_s`` seconds of refill (a provider's: the whole minute).
    """

    def __init__(
        self,
        requests_per_minute: int | None,
        tokens_per_minute: int | None,
        burst_s: float,
        now: float | None = None,
    ) -> None:
        self.limits = {"requests": requests_per_minute, "tokens": tokens_per_minute}
        self.capacity = {name: (limit or 0) * burst_s / 60 for name, limit in self.limits.items()}
        self.level = dict(self.capacity)  # full at the start
        self.at = time.monotonic() if now is None else now

    def take(self, tokens: int, now: float) -> tuple[bool, dict[str, str]]:
        """Whether a call of ``tokens`` fits now, and the OpenAI-style headers to send."""
        for name, limit in self.limits.items():
            if limit:
                refilled = self.level[name] + (now - self.at) * limit / 60
                self.level[name] = min(self.capacity[name], refilled)
        self.at = now
        cost = {"requests": 1.0, "tokens": float(tokens)}
        short = {
            name: (cost[name] - self.level[name]) * 60 / limit
            for name, limit in self.limits.items()
            if limit and self.level[name] < cost[name]
        }
        if not short:
            for name, limit in self.limits.items():
                if limit:
                    self.level[name] -= cost[name]
        headers: dict[str, str] = {}
        for name, limit in self.limits.items():
            if limit:
                headers[f"x-ratelimit-limit-{name}"] = str(limit)
                headers[f"x-ratelimit-remaining-{name}"] = str(int(self.level[name]))
                full_in = (self.capacity[name] - self.level[name]) * 60 / limit
                headers[f"x-ratelimit-reset-{name}"] = f"{full_in:.3f}s"
        if short:
            headers["retry-after"] = f"{max(short.values()):.3f}"
        return not short, headers


def embedding(text: str) -> list[float]:
    """A unit vector drawn from a hash of ``text``: the same text, the same vector."""
    digest = hashlib.sha256(text.encode()).digest()  # 32 bytes: two per component
    raw = [
        int.from_bytes(digest[2 * i : 2 * i + 2], "big") / 65535 - 0.5
        for i in range(EMBEDDING_SIZE)
    ]
    norm = math.sqrt(sum(value * value for value in raw)) or 1.0
    return [value / norm for value in raw]


def _embeddings(request: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI embeddings answer: one vector per input, as floats or base64 float32."""
    given = request.get("input")
    texts = [given] if isinstance(given, str) else [str(text) for text in given or []]
    packed = request.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = embedding(text)
        value: Any = vector
        if packed:
            value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": value})
    tokens = sum(len(text) // 4 for text in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data, "model": request.get("model"), "usage": usage}


def _error(message: str, status: int) -> dict[str, Any]:
    """An error body each SDK reads its message from (``error.message``, ``message``)."""
    return {"error": {"message": message, "code": status}, "message": message}


def _anthropic_request(request: dict[str, Any]) -> tuple[Any, str]:
    schema = ((request.get("output_config") or {}).get("format") or {}).get("schema")
    return schema, prompt_text(request.get("messages", []))


def _gemini_request(request: dict[str, Any]) -> tuple[Any, str]:
    config = request.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or gemini_json_schema(config.get("responseSchema"))
    parts = [part for content in request.get("contents", []) for part in content["parts"]]
    return schema, "".join(str(part.get("text", "")) for part in parts)


def _ollama_request(request: dict[str, Any]) -> tuple[Any, str]:
    schema = request.get("format") if isinstance(request.get("format"), dict) else None
    return schema, prompt_text(request.get("messages", []))


def _bedrock_request(request: dict[str, Any]) -> tuple[Any, str]:
    return None, prompt_text(request.get("messages", []))  # Converse takes no schema


_SCHEMA_AND_PROMPT = {
    "anthropic": _anthropic_request,
    "gemini": _gemini_request,
    "ollama": _ollama_request,
    "bedrock": _bedrock_request,
}


def _anthropic_answer(request: dict[str, Any], text: str, _: Any) -> dict[str, Any]:
    usage = {"input_tokens": len(_anthropic_request(request)[1]) // 4, "output_tokens": 20}
    content = [{"type": "text", "text": text}]
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "loopback"),
        "content": content,
        "stop_reason": "end_turn",
        "usage": usage,
    }


def _gemini_answer(request: dict[str, Any], text: str, _: Any) -> dict[str, Any]:
    prompt_tokens = len(_gemini_request(request)[1]) // 4
    return {
        "candidates": [
            {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 20,
            "totalTokenCount": prompt_tokens + 20,
        },
        "modelVersion": "loopback",
    }


def _ollama_answer(request: dict[str, Any], text: str, _: Any) -> dict[str, Any]:
    return {
        "model": request.get("model", "loopback"),
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": len(_ollama_request(request)[1]) // 4,
        "eval_count": 20,
    }


def _bedrock_answer(request: dict[str, Any], text: str, _: Any) -> dict[str, Any]:
    prompt_tokens = len(_bedrock_request(request)[1]) // 4
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": prompt_tokens,
            "outputTokens": 20,
            "totalTokens": prompt_tokens + 20,
        },
        "metrics": {"latencyMs": 1},
    }


# API → its answer holding a text (and, for chat completions, its log-probabilities).
_ANSWERS: dict[str, Callable[[dict[str, Any], str, dict[str, Any] | None], dict[str, Any]]] = {
    "openai": _completion,
    "anthropic": _anthropic_answer,
    "gemini": _gemini_answer,
    "ollama": _ollama_answer,
    "bedrock": _bedrock_answer,
}


def _refusal(headers: dict[str, str], target: str) -> str:
    """The key a request carried (any provider's header) and its URL, quoted back."""
    names = ("authorization", "x-api-key", "api-key")
    key = next((headers[name] for name in names if name in headers), "no key")
    return f"Invalid key: {key} (request {target})"


async def _read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, dict[str, str], bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    lines = head.decode("latin-1").split("\r\n")
    target = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines[1:] if line)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return target, headers, body


def _write(
    writer: asyncio.StreamWriter,
    status: int,
    payload: dict[str, Any],
    extra_headers: dict[str, str] | None = None,
) -> None:
    body = json.dumps(payload).encode()
    headers = {
        "content-type": "application/json",
        "content-length": str(len(body)),
        **(extra_headers or {}),
    }
    head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()
    )
    writer.write(head.encode("latin-1") + b"\r\n" + body)


def main() -> None:
    """Serve until SIGTERM or SIGINT, then print what it served (JSON) and exit.

    ``admitted``: when the bucket let each call in and the tokens it took.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rpm", type=int, help="requests per minute it allows")
    parser.add_argument("--tpm", type=int, help="tokens per minute it allows")
    parser.add_argument("--burst-s", type=float, default=60.0, help="seconds of refill it holds")
    parser.add_argument(
        "--announce", choices=ANNOUNCE, default="headers", help="what it tells of its budget"
    )
    options = parser.parse_args()
    judge = LoopbackJudge(
        latency_s=options.latency_ms / 1000,
        port=options.port,
        requests_per_minute=options.rpm,
        tokens_per_minute=options.tpm,
        burst_s=options.burst_s,
        announce=options.announce,
    ).start()
    serve_until_stopped(judge)


def serve_until_stopped(judge: LoopbackJudge) -> None:
    """Serve ``judge`` until SIGTERM or SIGINT, then print what it served (JSON)."""
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    stopped.wait()
    judge.stop()
    served = {"requests": judge.requests, "rate_limited": judge.rate_limited}
    profile = {"max_in_flight": judge.max_in_flight, "admitted": judge.admitted}
    print(json.dumps({**served, **profile}), flush=True)


if __name__ == "__main__":
    main()
