"""A loopback OpenAI-compatible judge: a test and benchmark double, not a judge.

It answers ``POST /v1/chat/completions`` after a fixed latency with JSON that fits the
request's ``response_format`` JSON schema (values drawn from a hash of the request, so
answers are deterministic), and reports token usage. Run it in-process for tests
(``LoopbackJudge(...).start()``) or as a process for benchmarks:

    python -m n8n_deepeval_pipeline.loopback_judge --port 8765 --latency-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class _SchemaFiller:
    """Schema-valid JSON values for a JSON schema, drawn from a seed."""

    def __init__(self, seed: bytes, definitions: dict[str, Any]) -> None:
        self._seed = seed
        self._draws = 0
        self._definitions = definitions

    def _unit(self) -> float:
        digest = hashlib.sha256(self._seed + self._draws.to_bytes(4, "big")).digest()
        self._draws += 1
        return int.from_bytes(digest[:8], "big") / 2**64

    def value(self, schema: dict[str, Any], name: str = "") -> Any:
        if "$ref" in schema:
            return self.value(self._definitions[schema["$ref"].rsplit("/", 1)[-1]], name)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [s for s in schema[key] if s.get("type") != "null"]
                return self.value(options[0], name)
        if "enum" in schema:
            options = sorted(schema["enum"], key=str)
            return options[int(self._unit() * len(options))]
        if "const" in schema:
            return schema["const"]
        return self._typed(schema, name)

    def _typed(self, schema: dict[str, Any], name: str) -> Any:
        kind = schema.get("type", "string")
        if kind == "object":
            properties = schema.get("properties", {})
            return {key: self.value(sub, key) for key, sub in properties.items()}
        if kind == "array":
            return [self.value(schema.get("items", {}), name) for _ in range(2)]
        if kind in ("number", "integer"):
            low = schema.get("minimum", 0)
            high = schema.get("maximum", 10 if "score" in name else 1)
            drawn = low + self._unit() * (high - low)
            return round(drawn) if kind == "integer" else round(drawn, 3)
        if kind == "boolean":
            return self._unit() < 0.5
        if name == "verdict" or name.endswith("_verdict") or name == "answers":
            return "yes" if self._unit() < 0.5 else "no"
        return f"loopback {name}"


def answer_for(body: dict[str, Any]) -> str:
    """The assistant text for a chat completion request."""
    seed = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get(
        "schema"
    )
    if not schema:
        return json.dumps({"reason": "loopback answer", "verdict": "yes", "score": 0.5})
    filler = _SchemaFiller(seed, schema.get("$defs", {}))
    return json.dumps(filler.value(schema))


class LoopbackJudge:
    """The server, with request counters."""

    def __init__(self, latency_s: float = 0.05, port: int = 0) -> None:
        self.latency_s = latency_s
        self.port = port
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(
            routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])]
        )

    async def _complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
            return JSONResponse(_completion(body, answer_for(body)))
        finally:
            self.in_flight -= 1

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of this server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _config(self) -> uvicorn.Config:
        return uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False
        )

    def start(self) -> LoopbackJudge:
        """Serve from a background thread (for tests); returns once it listens."""
        self._server = uvicorn.Server(self._config())
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    prompt_tokens = sum(len(str(m.get("content", ""))) // 4 for m in body.get("messages", []))
    completion_tokens = len(text) // 4
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "loopback"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def main() -> None:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    options = parser.parse_args()
    judge = LoopbackJudge(latency_s=options.latency_ms / 1000, port=options.port)
    uvicorn.Server(judge._config()).run()


if __name__ == "__main__":
    main()
