"""What the MCP servers of a workflow's MCP Client Tool nodes offer, read through MCP.

Each server the benchmark does not describe (``target.mcpServers.<node>.tools``) is asked,
with the official ``mcp`` SDK, for its tools, resources and prompts: listing them calls
no tool. A server is asked as its node reaches it (its endpoint and transport); one
behind credentials only n8n holds, or whose endpoint is an expression, cannot be asked
from here: its tools must be written in the benchmark, and the error says so. The tools
kept are those the node gives the agent (its ``include`` option).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from n8n_deepeval_pipeline.benchmark.n8n_target import McpServerSettings
from n8n_deepeval_pipeline.n8n_data.mcp_calls import McpServer
from n8n_deepeval_pipeline.redaction import redact
from n8n_deepeval_pipeline.workflow.mcp_nodes import McpNode


class McpServerUnreadableError(RuntimeError):
    """A server that cannot be listed from here, and what to do about it."""


def _record_instead(node: McpNode, why: str) -> McpServerUnreadableError:
    return McpServerUnreadableError(
        f'MCP Client Tool "{node.name}": {why}: write what its server offers in '
        f'target.mcpServers["{node.name}"] (tools, and resources and prompts if any)'
    )


def _wire(primitives: list[Any]) -> list[dict[str, Any]]:
    """The SDK's objects in MCP's own JSON (camel case, unset fields left out)."""
    return [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in primitives]


async def _all_pages(list_page: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    found: list[Any] = []
    cursor: str | None = None
    while True:
        page = await list_page(cursor)
        found += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            return found


async def _listed(node: McpNode, timeout_s: float) -> McpServer:
    from mcp import Client
    from mcp.client.sse import sse_client

    transport: Any = sse_client(node.endpoint) if node.transport == "sse" else node.endpoint
    async with asyncio.timeout(timeout_s), Client(transport, mode="legacy") as client:
        capabilities = client.server_capabilities
        tools = await _all_pages(lambda c: client.list_tools(cursor=c), "tools")
        resources = (
            await _all_pages(lambda c: client.list_resources(cursor=c), "resources")
            if capabilities.resources is not None
            else []
        )
        prompts = (
            await _all_pages(lambda c: client.list_prompts(cursor=c), "prompts")
            if capabilities.prompts is not None
            else []
        )
    return McpServer(
        name=node.name,
        transport=node.transport,
        tools=_wire(tools),
        resources=_wire(resources),
        prompts=_wire(prompts),
    )


def read_server(node: McpNode, timeout_s: float = 30.0) -> McpServer:
    """What the node's server offers, listed from it (no tool is called)."""
    if node.authentication != "none":
        raise _record_instead(node, f"its server needs {node.authentication}, which n8n holds")
    if not node.endpoint or node.endpoint.startswith("="):
        raise _record_instead(node, "its endpoint is an expression n8n evaluates")
    try:
        return asyncio.run(_listed(node, timeout_s))
    except Exception as error:  # any failure of the SDK is this node's error
        raise _record_instead(
            node, f"its server at {node.endpoint} could not be listed ({_short(error)})"
        ) from None


def _short(error: BaseException) -> str:
    group = getattr(error, "exceptions", None)
    if group:  # anyio's task groups wrap the transport's error
        return _short(group[0])
    return redact(f"{type(error).__name__}: {error}")[:200]


def mcp_servers(
    nodes: list[McpNode], settings: Mapping[str, McpServerSettings]
) -> dict[str, McpServer]:
    """Node name → what its server offers: as the benchmark wrote it, else as listed."""
    servers = {}
    for node in nodes:
        given = settings.get(node.name)
        if given is not None and given.tools is not None:
            server = McpServer(
                name=node.name,
                transport=node.transport,
                tools=given.tools,
                resources=given.resources or [],
                prompts=given.prompts or [],
            )
        else:
            server = read_server(node)
        servers[node.name] = node.offered(server)
    return servers
