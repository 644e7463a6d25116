"""Serve tools over MCP: a low-level ``mcp`` server with a prebuilt tool list and dict dispatch.

The MCP layer is deliberately thin: the tool list is built once, ``tools/call`` looks the tool up
in a dict and hands the arguments to the envelope boundary, and the envelope comes back as
``structured_content`` (plus the same JSON as text content for clients that only read text;
``is_error`` is set for error envelopes). The hub builds its surfaces on :func:`build_server` too.

What every server here does, on every transport:

- **Listings are paged** (MCP cursor pagination, :class:`Pages`): no page is over
  :data:`PAGE_BYTES` of JSON, far below the 1 MiB a client's SSE reader accepts in one event.
  :func:`list_all_tools` is the client side: it follows the cursors.
- **Calls never wait for a listing**: the tool's input schema (which the HTTP transport checks
  ``Mcp-Param`` headers against) comes from a dict, not from building ``tools/list``.
- **Calls run off the event loop** (:class:`CallRunner`): each on a worker thread, one at a time
  per world (so a world still sees one mutation at a time, in arrival order), under a deadline
  (:data:`CALL_TIMEOUT_S`, env ``COMPOWORLD_CALL_TIMEOUT``). A slow or hung call holds only its
  own world; past the deadline its caller gets a 504 envelope.

We use the SDK's low-level ``Server`` rather than FastMCP's decorators because tool construction
there costs about 1 ms per tool and dispatch grows with the number of mounted providers
(measured in ../shared/API-NOTES.md); a flat dict keeps one call well under a millisecond.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from servers.framework import Envelope, Service, ServiceState, Tool, error

CallFn = Callable[[str, dict[str, Any]], Envelope]
LIST_TTL_MS = 3_600_000  # tool lists are fixed for a server's lifetime
PAGE_BYTES = 256 * 1024
"""The most JSON one ``tools/list`` page holds (a client's SSE reader takes at most 1 MiB)."""
CALL_TIMEOUT_S = 60.0
"""Default deadline of one tool call served over MCP (``COMPOWORLD_CALL_TIMEOUT`` overrides)."""
INVALID_PARAMS = -32602


class Pages:
    """A fixed tool list cut into pages of at most :data:`PAGE_BYTES` of JSON each."""

    def __init__(self, tools: Sequence[types.Tool], page_bytes: int = PAGE_BYTES) -> None:
        self.tools = tools  # kept alive: the cache below is keyed by its id
        pages: list[list[types.Tool]] = [[]]
        size = 0
        for tool in tools:
            length = len(tool.model_dump_json(by_alias=True, exclude_none=True))
            if pages[-1] and size + length > page_bytes:
                pages.append([])
                size = 0
            pages[-1].append(tool)
            size += length
        self.pages = pages

    def page(self, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """The page a request's cursor points at (the first without one)."""
        cursor = params.cursor if params is not None else None
        index = 0
        if cursor is not None:
            if not cursor.startswith("p") or not cursor[1:].isdigit() or int(cursor[1:]) >= len(self.pages):
                raise MCPError(INVALID_PARAMS, f"invalid cursor {cursor!r}; list without a cursor to start over")
            index = int(cursor[1:])
        following = f"p{index + 1}" if index + 1 < len(self.pages) else None
        return types.ListToolsResult(tools=self.pages[index], next_cursor=following)


_PAGES: dict[int, Pages] = {}
_PAGES_KEPT = 64


def paged(tools: Sequence[types.Tool]) -> Pages:
    """The pages of a listing, cut once per listing object (the hub's listings are prebuilt and
    reused, so every world over the same services shares one cut); the last few are kept."""
    found = _PAGES.get(id(tools))
    if found is None or found.tools is not tools:
        found = _PAGES[id(tools)] = Pages(tools)
        while len(_PAGES) > _PAGES_KEPT:  # oldest first: a server's own listing is held by the server
            del _PAGES[next(iter(_PAGES))]
    return found


async def list_all_tools(client: Any) -> list[types.Tool]:
    """Every tool of a server, following ``tools/list`` cursors (``client`` is an ``mcp.Client``
    or a ``ClientSession``)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    session = isinstance(client, ClientSession)  # takes params=; mcp.Client takes cursor=
    for _ in range(10_000):
        if cursor is None:
            page = await client.list_tools()
        elif session:
            page = await client.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        else:
            page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


class CallRunner:
    """Runs tool calls off the event loop: on worker threads, one at a time per key (a world), each
    under a deadline. A call that misses it answers 504; its thread is left to finish, and the
    next call of the same world waits for it (the world's own lock), never the other worlds."""

    def __init__(self, timeout: float | None = None, threads: int = 64) -> None:
        env = os.environ.get("COMPOWORLD_CALL_TIMEOUT")
        self.timeout = timeout if timeout is not None else float(env) if env else CALL_TIMEOUT_S
        self.threads = threads
        self._limiter: anyio.CapacityLimiter | None = None
        self._locks: dict[str, anyio.Lock] = {}

    async def run(self, key: str, call: CallFn, name: str, arguments: dict[str, Any]) -> Envelope:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.threads)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        try:
            with anyio.fail_after(self.timeout):
                async with lock:
                    return await anyio.to_thread.run_sync(
                        functools.partial(call, name, arguments), abandon_on_cancel=True, limiter=self._limiter
                    )
        except TimeoutError:
            return error(
                504,
                f"tool {name!r} did not answer within {self.timeout:g} s; it may still complete, "
                "so look the state up before calling it again",
            )

    def forget(self, key: str) -> None:
        self._locks.pop(key, None)


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
    runner: CallRunner | None = None,
) -> Server[Any]:
    """A low-level MCP server over a fixed tool list; ``call(name, args)`` returns an envelope.

    ``list_ttl_ms`` tells clients (MCP 2026 cache hints) how long they may reuse the tool list:
    the list never changes while the server lives, so clients need not fetch it again. Calls go
    through ``runner`` (a :class:`CallRunner` with the default deadline when not given), as one
    world: one at a time, in order.
    """
    pages = paged(tools if isinstance(tools, list) else list(tools))
    schemas: dict[str, Mapping[str, Any]] = {t.name: t.input_schema for t in tools}
    runner = runner or CallRunner()

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return pages.page(params)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return envelope_result(await runner.run("", call, params.name, dict(params.arguments or {})))

    hints = {"tools/list": CacheHint(ttl_ms=list_ttl_ms, scope="private")} if list_ttl_ms else None
    return Server(
        name,
        version=version,
        instructions=instructions,
        cache_hints=hints,  # type: ignore[arg-type]
        get_tool_input_schema=schemas.get,
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


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, rest: Any) -> Any:
    """``receive`` again, the body already read first, then what the client sends next."""
    sent = False

    async def receive() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await rest()

    return receive


def bad_arguments_answer(body: bytes | dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC answer to a ``tools/call`` (raw bytes or a parsed request) whose ``arguments``
    is not an object: the 400 envelope as the tool's result (the SDK would refuse the request
    with a protocol error before any tool sees it)."""
    request: Any = body
    if isinstance(body, bytes):
        try:
            request = json.loads(body)
        except ValueError:
            return None
    if not isinstance(request, dict) or request.get("method") != "tools/call" or "id" not in request:
        return None
    params = request.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if arguments is None or isinstance(arguments, dict):
        return None
    result = envelope_result(error(400, f"'arguments' must be a JSON object, not {type(arguments).__name__}"))
    return {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


class EnvelopeArguments:
    """ASGI wrapper of an MCP endpoint: a ``tools/call`` whose ``arguments`` is not a JSON object
    gets the tool's 400 envelope as its result, like any other bad argument (the SDK would answer
    with a protocol error before any tool sees it). Other requests pass through untouched."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST":
            body = await _body(receive)
            answer = bad_arguments_answer(body)
            if answer is not None:
                from starlette.responses import JSONResponse

                await JSONResponse(answer)(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)


async def run_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client disconnects; a
    ``tools/call`` whose ``arguments`` is not an object is answered with the 400 envelope here,
    as over HTTP (:class:`EnvelopeArguments`)."""
    async with stdio_server() as (read_stream, write_stream):
        forward, inbox = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with forward:
                async for item in read_stream:
                    message = getattr(item, "message", None)
                    if isinstance(message, types.JSONRPCRequest):
                        answer = bad_arguments_answer(message.model_dump(mode="json", by_alias=True))
                        if answer is not None:
                            reply = types.jsonrpc_message_adapter.validate_python(answer)
                            await write_stream.send(SessionMessage(reply))
                            continue
                    await forward.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            await server.run(inbox, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()


def serve_stdio(server: Server[Any]) -> None:
    anyio.run(run_stdio, server)


def http_app(server: Server[Any], path: str = "/mcp", host: str = "127.0.0.1") -> Any:
    """A Starlette app serving ``server`` over streamable HTTP at ``path``."""
    return EnvelopeArguments(server.streamable_http_app(streamable_http_path=path, host=host, stateless_http=True))


def serve_http(server: Server[Any], host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp") -> None:
    """Serve ``server`` over streamable HTTP (binds 127.0.0.1 unless told otherwise)."""
    import uvicorn

    uvicorn.run(http_app(server, path, host), host=host, port=port, log_level="warning")
