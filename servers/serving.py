"""Serve tools over MCP: a low-level ``mcp`` server with a prebuilt tool list and dict dispatch.

The MCP layer is deliberately thin: the tool list is built once, ``tools/call`` looks the tool up
in a dict and hands the arguments to the envelope boundary, and the envelope comes back as
``structured_content`` (plus the same JSON as text content for clients that only read text;
``is_error`` is set for error envelopes). The hub builds its surfaces on :func:`build_server` too.

We use the SDK's low-level ``Server`` rather than FastMCP's decorators because tool construction
there costs about 1 ms per tool and dispatch grows with the number of mounted providers
(measured in ../shared/API-NOTES.md); a flat dict keeps one call well under a millisecond.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from servers.framework import Envelope, Service, ServiceState, Tool

CallFn = Callable[[str, dict[str, Any]], Envelope]
LIST_TTL_MS = 3_600_000  # tool lists are fixed for a server's lifetime


def mcp_tool(tool: Tool, name: str | None = None) -> types.Tool:
    """The MCP description of one tool (read tools are marked read-only)."""
    return types.Tool(
        name=name or tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.kind == "read",
            destructive_hint=tool.kind == "write",
            open_world_hint=False,
        ),
    )


def envelope_result(envelope: Envelope) -> types.CallToolResult:
    """An envelope as an MCP tool result: structured content plus the same JSON as text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(envelope, ensure_ascii=False))],
        structured_content=envelope,
        is_error=not envelope.get("success", False),
    )


def build_server(
    name: str,
    version: str,
    tools: Sequence[types.Tool],
    call: CallFn,
    instructions: str | None = None,
    list_ttl_ms: int = 0,
) -> Server[Any]:
    """A low-level MCP server over a fixed tool list; ``call(name, args)`` returns an envelope.

    ``list_ttl_ms`` tells clients (MCP 2026 cache hints) how long they may reuse the tool list:
    the list never changes while the server lives, so clients need not fetch it again.
    """
    listing = types.ListToolsResult(tools=list(tools))
    # Calls are serialised so that a world sees one mutation at a time even when a transport
    # runs handlers concurrently (the HTTP transport does).
    lock = threading.Lock()

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        with lock:
            envelope = call(params.name, dict(params.arguments or {}))
        return envelope_result(envelope)

    hints = {"tools/list": CacheHint(ttl_ms=list_ttl_ms, scope="private")} if list_ttl_ms else None
    return Server(
        name,
        version=version,
        instructions=instructions,
        cache_hints=hints,  # type: ignore[arg-type]
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


class ServiceRuntime:
    """One service with one live state: what ``compoworld services serve NAME`` runs."""

    def __init__(self, service: Service[Any], state: ServiceState) -> None:
        self.service = service
        self.state = state

    @classmethod
    def seeded(cls, service: Service[Any], seed: int = 0) -> ServiceRuntime:
        return cls(service, service.seed_state(seed))

    def call(self, tool: str, arguments: dict[str, Any]) -> Envelope:
        return self.service.call(self.state, tool, arguments)

    def server(self) -> Server[Any]:
        svc = self.service
        return build_server(
            f"compoworld-{svc.name}",
            str(svc.version),
            [mcp_tool(t) for t in svc.tools.values()],
            self.call,
            list_ttl_ms=LIST_TTL_MS,
            instructions=f"{svc.description} Every tool answers with an envelope: "
            '{"success": true, "data": ...} or {"success": false, "error": {"code": ..., "message": ...}}.',
        )


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client disconnects."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio(server: Server[Any]) -> None:
    anyio.run(run_stdio, server)


def http_app(server: Server[Any], path: str = "/mcp", host: str = "127.0.0.1") -> Any:
    """A Starlette app serving ``server`` over streamable HTTP at ``path``."""
    return server.streamable_http_app(streamable_http_path=path, host=host, stateless_http=True)


def serve_http(server: Server[Any], host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp") -> None:
    """Serve ``server`` over streamable HTTP (binds 127.0.0.1 unless told otherwise)."""
    import uvicorn

    uvicorn.run(http_app(server, path, host), host=host, port=port, log_level="warning")
