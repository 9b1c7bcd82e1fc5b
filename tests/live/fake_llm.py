"""A fake OpenAI chat-completions server on loopback, for n8n's OpenAI Chat Model node.

n8n's `lmChatOpenAi` node (1.3, `responsesApiEnabled: false`) calls `POST {url}/chat/completions`
with the `url` of its `openAiApi` credential as the base URL, so a credential whose `url` is
`FakeOpenAI.base_url` sends every model call of an AI Agent here::

    with FakeOpenAI() as llm:
        credential = {"name": "fake", "type": "openAiApi",
                      "data": {"apiKey": "sk-fake", "url": llm.base_url}}
        ...
        assert llm.requests[0]["messages"][-1]["content"] == "What is 6*7?"

The answers are deterministic:

- the last message is the user's, tools are offered and the text holds `6*7` or `40+2`:
  a call of the calculator tool (named after the tool node, read from the request's `tools`)
  with the arguments `{"input": "6*7"}`;
- the last message is the user's and its text names an offered tool (`Order_Lookup` as
  "order lookup"): a call of that tool with each of its parameters set to the first number
  of the text (`{"input": …}` for a tool without parameters), unless the system message
  forbids it: "never" then the tool's name in one sentence ("Never issue refunds" keeps
  `Refund` from being called; the answer is then `I cannot do that.`);
- the last message is a tool result: `The answer is <result>.` (n8n sends a tool node's
  result as its items, `[{"response": "42"}]`: the `response` values are used);
- otherwise `Echo: <user text>`, plus ` (turn N)` when earlier messages were replayed from
  memory (N = the number of user messages in the request).

A model in `GUESSING_MODELS` (`gpt-4.1-nano`) never calls a tool: it answers `Echo: …` at
once, so that variants of one agent that differ only in their model answer differently.
Every completion reports its token usage (about one token per four characters), and
`usages` keeps what was reported, by model.

`GET /v1/models` lists `MODELS`. `stream: true` is answered as server-sent chunks.
`POST /v1/images/generations` (OpenAI's image node) answers one PNG as `b64_json`, a
square whose colour is drawn from the prompt (`image_for(prompt)` gives its bytes).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.png_images import png

MODELS = ("gpt-4o-mini", "gpt-4o", "gpt-5-mini", "gpt-4.1-nano")
GUESSING_MODELS = frozenset({"gpt-4.1-nano"})
# Two numbers around one operator the calculator understands, e.g. "6*7", "40 + 2".
ARITHMETIC = re.compile(r"(\d+(?:\.\d+)?)\s*([*+\-/])\s*(\d+(?:\.\d+)?)")


class FakeOpenAI:
    """An OpenAI-compatible server in a background thread; a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, delay_s: float = 0.0) -> None:
        """Bind now (port 0 picks a free one); serving starts with `start()` or `with`.

        `delay_s` slows every chat completion, so that runs last long enough to overlap.
        """
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []  # every request body, in arrival order
        self.calls: list[tuple[str, str]] = []  # (method, path) of every request
        self.usages: list[tuple[str, int, int]] = []  # (model, prompt, completion) reported
        self.arrivals: list[tuple[float, str]] = []  # (time.monotonic(), model) per completion
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer((host, port), _handler_class(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The base URL for the credential, e.g. `http://127.0.0.1:PORT/v1`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> Self:
        """Serve in a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="fake-openai", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket. Idempotent."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        """Start serving for the `with` block."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop serving."""
        self.stop()

    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of the chat-completion requests so far."""
        with self._lock:
            return [body for body in self.requests if "messages" in body]

    # ---- answers ------------------------------------------------------------------------------

    def record(self, method: str, path: str, body: dict[str, Any] | None) -> None:
        """Remember one request (the handler calls this)."""
        with self._lock:
            self.calls.append((method, path))
            if body is not None:
                self.requests.append(body)

    def next_id(self) -> str:
        """A fresh id for a completion or a tool call."""
        return str(next(self._ids))

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for a chat-completion request: content or tool_calls."""
        messages: list[dict[str, Any]] = body.get("messages") or []
        last = messages[-1] if messages else {"role": "user", "content": ""}
        if last.get("role") == "tool":
            return {"role": "assistant", "content": f"The answer is {tool_result(last)}."}
        user_text = text_of(last) if last.get("role") == "user" else ""
        match = ARITHMETIC.search(user_text)
        offered = [] if body.get("model") in GUESSING_MODELS else body.get("tools") or []
        tool = calculator_name(offered)
        named = named_tool(offered, user_text)
        if last.get("role") == "user" and match and tool:
            return self.tool_call(tool, {"input": "".join(match.groups())})
        if last.get("role") == "user" and named is not None:
            if forbidden(messages, named[0]):
                return {"role": "assistant", "content": "I cannot do that."}
            return self.tool_call(named[0], named[1])
        answer = f"Echo: {user_text}"
        before = messages[:-1]
        if any(message.get("role") != "system" for message in before):  # memory was replayed
            turns = sum(1 for message in messages if message.get("role") == "user")
            answer += f" (turn {turns})"
        return {"role": "assistant", "content": answer}

    def tool_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """An assistant message that calls one tool."""
        call = {
            "id": f"call_{self.next_id()}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """A whole `chat.completion` object for a request."""
        message = self.reply(body)
        reported = usage(body, message)
        with self._lock:
            model = str(body.get("model") or MODELS[0])
            self.usages.append((model, reported["prompt_tokens"], reported["completion_tokens"]))
            self.arrivals.append((time.monotonic(), model))
        return {
            "id": f"chatcmpl-{self.next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or MODELS[0]),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": reported,
        }

    def chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The same answer as `chat.completion.chunk` objects (for `stream: true`)."""
        whole = self.completion(body)
        message = whole["choices"][0]["message"]
        base = {key: whole[key] for key in ("id", "created", "model", "system_fingerprint")}
        base["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**base, "choices": [choice]}

        out = [chunk({"role": "assistant", "content": "" if message["content"] else None})]
        if message.get("tool_calls"):
            for index, call in enumerate(message["tool_calls"]):
                head = {"name": call["function"]["name"], "arguments": ""}
                start = {"index": index, "id": call["id"], "type": "function", "function": head}
                out.append(chunk({"tool_calls": [start]}))
                rest = {"arguments": call["function"]["arguments"]}
                out.append(chunk({"tool_calls": [{"index": index, "function": rest}]}))
        else:
            text = message["content"]
            middle = len(text) // 2  # two pieces, so a client really has to join them
            out.extend(chunk({"content": piece}) for piece in (text[:middle], text[middle:]))
        out.append(chunk({}, whole["choices"][0]["finish_reason"]))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append({**base, "choices": [], "usage": whole["usage"]})
        return out


def image_for(prompt: str) -> bytes:
    """The PNG the fake generates for a prompt: a square of a colour drawn from it."""
    red, green, blue = hashlib.sha256(prompt.encode("utf-8")).digest()[:3]
    return png(16, 16, (255, 255, 255), (red, green, blue))


def image_generation(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's answer to an image generation: one image, base64."""
    data = base64.b64encode(image_for(str(body.get("prompt", "")))).decode("ascii")
    return {"created": int(time.time()), "data": [{"b64_json": data}]}


def text_of(message: dict[str, Any]) -> str:
    """A message's text: a string content, or the text parts of a list content."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def tool_result(message: dict[str, Any]) -> str:
    """A tool message's result; n8n 2.x sends the tool node's items, `[{"response": "42"}]`."""
    text = text_of(message)
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        return text
    items = items if isinstance(items, list) else [items]
    if items and all(isinstance(item, dict) and "response" in item for item in items):
        return ", ".join(str(item["response"]) for item in items)
    return text


def calculator_name(tools: list[dict[str, Any]]) -> str | None:
    """The function name of the calculator tool (n8n names it after the node), else None."""
    names = [str((tool.get("function") or {}).get("name", "")) for tool in tools]
    names = [name for name in names if name]
    return next((name for name in names if "calculator" in name.lower()), None)


def named_tool(tools: list[dict[str, Any]], text: str) -> tuple[str, dict[str, Any]] | None:
    """The offered tool the text names and the arguments to call it with, else None."""
    number = re.search(r"\d+", text)
    value = number[0] if number else text
    for tool in tools:
        function = tool.get("function") or {}
        name = str(function.get("name", ""))
        if name and name.lower().replace("_", " ") in text.lower():
            properties = (function.get("parameters") or {}).get("properties") or {}
            return name, {key: value for key in properties} or {"input": value}
    return None


def forbidden(messages: list[dict[str, Any]], tool: str) -> bool:
    """Whether a system message forbids the tool: "never" and its name in one sentence."""
    spaced = re.escape(tool.lower().replace("_", " "))
    system = " ".join(text_of(m) for m in messages if m.get("role") == "system").lower()
    return re.search(rf"\bnever\b[^.]*{spaced}", system) is not None


def usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    """Token counts: roughly one per four characters, never zero."""
    prompt = max(1, len(json.dumps(body.get("messages") or [])) // 4)
    completion = max(1, len(json.dumps(message)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _handler_class(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    """A request handler bound to one FakeOpenAI."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as n8n's HTTP client expects

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            fake.record("GET", path, None)
            if path in ("/v1/models", "/models"):
                created = int(time.time())
                data = [
                    {"id": name, "object": "model", "created": created, "owned_by": "fake"}
                    for name in MODELS
                ]
                self.send_json(200, {"object": "list", "data": data})
            else:
                self.send_error_json(404, f"no route GET {path}")

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                fake.record("POST", path, {"_raw": raw.decode("utf-8", "replace")})
                self.send_error_json(400, "the body is not JSON")
                return
            fake.record("POST", path, body)
            time.sleep(fake.delay_s)
            if path in ("/v1/images/generations", "/images/generations"):
                self.send_json(200, image_generation(body))
            elif path not in ("/v1/chat/completions", "/chat/completions"):
                self.send_error_json(404, f"no route POST {path}")
            elif body.get("stream"):
                self.send_events(fake.chunks(body))
            else:
                self.send_json(200, fake.completion(body))

        def send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def send_error_json(self, status: int, message: str) -> None:
            error = {"message": message, "type": "invalid_request_error", "code": None}
            self.send_json(status, {"error": error})

        def send_events(self, chunks: list[dict[str, Any]]) -> None:
            lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
            data = ("".join(lines) + "data: [DONE]\n\n").encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Stay quiet (pytest would show every request otherwise)."""

    return Handler
