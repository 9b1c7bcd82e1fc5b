"""A loopback MCP server for the live tests: the official mcp SDK's own, counting what it is asked.

It serves Streamable HTTP at ``url`` (``http://127.0.0.1:PORT/mcp``) from a thread, with two
tools, a resource and a prompt. ``tool_calls`` holds every tool call it ran (name and
arguments) and ``listings`` every listing it answered, so a test can tell a server that
was only listed from one that was called::

    with weather_mcp_server() as server:
        ...  # an n8n MCP Client Tool whose endpointUrl is server.url
        assert server.tool_calls == [("get_weather", {"city": "75"})]
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import uvicorn
from mcp.server import MCPServer


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class WeatherMcpServer:
    """The server in a background thread (``weather_mcp_server`` starts and stops one)."""

    def __init__(self) -> None:
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []
        self.listings: list[str] = []
        self._lock = threading.Lock()
        server = MCPServer("weather")

        @server.tool()
        def get_weather(city: str) -> str:
            """Current weather for a city."""
            self._called("get_weather", {"city": city})
            return f"Sunny in {city}, 21C"

        @server.tool()
        def get_forecast(city: str, days: int) -> str:
            """The forecast for a city, day by day."""
            self._called("get_forecast", {"city": city, "days": days})
            return f"Sun in {city} for {days} days"

        @server.resource("weather://cities")
        def cities() -> str:
            """Cities it knows."""
            return "Paris, Lyon"

        @server.prompt()
        def trip_advice(city: str) -> str:
            """Advice for a trip."""
            return f"What should I pack for {city}?"

        self._counting_listings(server)
        self.port = _free_port()
        config = uvicorn.Config(
            server.streamable_http_app(), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def _called(self, name: str, arguments: dict[str, Any]) -> None:
        with self._lock:
            self.tool_calls.append((name, arguments))

    def _counting_listings(self, server: MCPServer) -> None:
        for method in ("list_tools", "list_resources", "list_prompts"):
            listed = getattr(server, method)

            async def counted(*args: Any, _listed: Any = listed, _name: str = method) -> Any:
                with self._lock:
                    self.listings.append(_name)
                return await _listed(*args)

            setattr(server, method, counted)

    @property
    def url(self) -> str:
        """The Streamable HTTP endpoint an MCP Client Tool node points at."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> Self:
        """Serve in a daemon thread; return once it accepts connections."""
        self._thread = threading.Thread(target=self._server.run, name="mcp-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


@contextmanager
def weather_mcp_server() -> Iterator[WeatherMcpServer]:
    """A started server, stopped after the block."""
    server = WeatherMcpServer().start()
    try:
        yield server
    finally:
        server.stop()
