"""The hub over streamable HTTP: many worlds, each at ``/worlds/<id>/mcp`` behind its own token.

- Agent surface: ``/worlds/<id>/mcp`` speaks MCP (direct or gateway, chosen when the world is
  created). It accepts only that world's bearer token, so an agent can reach neither another
  world nor any admin operation: the MCP surface has no admin tools at all.
- Admin surface: ``/admin/…`` JSON endpoints behind a separate admin token create, list,
  snapshot, restore, reset, hash, diff, score (against a rubric), fork and close worlds.

One low-level MCP server serves every world; its handlers find the world from the request path
(the transport's session id is never used: the 2026 protocol is stateless per request).
The server binds 127.0.0.1 unless told otherwise. As every server of :mod:`servers.serving`, it
pages its listings, takes input schemas from the registry (a call never builds a listing) and runs
calls off the event loop, one at a time per world, under a deadline: a slow world stalls only
itself. A ``tools/call`` whose ``arguments`` is not a JSON object gets the tool envelope (400), as
any other bad argument does, not a protocol error.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hub.core import Hub
from hub.surfaces import DIRECT_INSTRUCTIONS, GATEWAY_TOOLS, Surface, surface_call, surface_tools
from hub.world import World
from servers.framework import Envelope
from servers.serving import LIST_TTL_MS, CallFn, CallRunner, EnvelopeArguments, envelope_result, paged

GATEWAY_SCHEMAS = {t.name: t.input_schema for t in GATEWAY_TOOLS}


@dataclass
class WorldAccess:
    world: World
    token: str
    surface: Surface


def _bearer(headers: Any) -> str | None:
    value = headers.get("authorization", "")
    if value.lower().startswith("bearer "):
        return str(value[7:].strip())
    return None


def same_token(given: str, expected: str) -> bool:
    """Constant-time comparison that never raises (``compare_digest`` refuses non-ASCII ``str``)."""
    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


def _unauthorized(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": 'Bearer realm="compoworld"'})


def _forbidden(message: str) -> Response:
    challenge = 'Bearer realm="compoworld", error="invalid_token"'
    return JSONResponse({"error": message}, status_code=403, headers={"WWW-Authenticate": challenge})


class _ASGI:
    """Starlette treats a bound method as a request/response endpoint; this keeps it raw ASGI."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class HubHTTP:
    """The HTTP front of a hub: world registry with tokens, agent and admin surfaces."""

    def __init__(
        self,
        hub: Hub,
        admin_token: str | None = None,
        host: str = "127.0.0.1",
        call_timeout: float | None = None,
        instructions: str = DIRECT_INSTRUCTIONS,
    ) -> None:
        self.hub = hub
        self.admin_token = admin_token or secrets.token_urlsafe(24)
        self.host = host
        self.access: dict[str, WorldAccess] = {}
        self.runner = CallRunner(call_timeout)
        self.instructions = instructions
        self.server = self._mcp_server()
        local = host in ("127.0.0.1", "localhost", "::1")
        security = (
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
            if local
            else None
        )
        self.sessions = StreamableHTTPSessionManager(app=self.server, stateless=True, security_settings=security)
        self.mcp_asgi = EnvelopeArguments(StreamableHTTPASGIApp(self.sessions))

    # -- worlds ------------------------------------------------------------------------------

    def add_world(self, world: World, surface: Surface = "direct", token: str | None = None) -> WorldAccess:
        access = WorldAccess(world, token or secrets.token_urlsafe(24), surface)
        self.access[world.id] = access
        return access

    def describe(self, access: WorldAccess, base_url: str = "") -> dict[str, Any]:
        world = access.world
        return {
            "world_id": world.id,
            "token": access.token,
            "surface": access.surface,
            "services": world.services,
            "seed": world.seed,
            "url": f"{base_url}/worlds/{world.id}/mcp",
        }

    # -- MCP (agent surface) -----------------------------------------------------------------

    def _world_of(self, ctx: ServerRequestContext[Any]) -> WorldAccess:
        request = ctx.request
        world_id = request.path_params.get("world_id") if request is not None else None
        access = self.access.get(str(world_id))
        if access is None:  # the ASGI guard already checked; this is a defensive second look
            raise LookupError(f"world {world_id!r} is not open")
        return access

    def call_function(self, access: WorldAccess) -> CallFn:
        """How a call on ``access``'s surface is answered (a subclass may record it)."""
        return surface_call(access.world, access.surface)

    def input_schema(self, name: str) -> Any:
        """A tool's input schema by name, for any world: gateway meta-tools have fixed names, and
        direct tools are qualified ``<service>__<tool>`` names of the one registry."""
        found: Any = GATEWAY_SCHEMAS.get(name)
        if found is None:
            entry = self.hub.registry.tools.get(name)
            found = entry.input_schema if entry is not None else None
        return found

    def _mcp_server(self) -> Server[Any]:
        async def on_list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            access = self._world_of(ctx)
            return paged(surface_tools(access.world, access.surface)).page(params)

        async def on_call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            access = self._world_of(ctx)
            call = self.call_function(access)
            envelope: Envelope = await self.runner.run(access.world.id, call, params.name, dict(params.arguments or {}))
            return envelope_result(envelope)

        return Server(
            "compoworld-hub",
            version="1",
            instructions=self.instructions,
            cache_hints={"tools/list": CacheHint(ttl_ms=LIST_TTL_MS, scope="private")},
            get_tool_input_schema=self.input_schema,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )

    async def agent_endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/worlds/<id>/mcp``: only that world's token gets through to MCP."""
        request = Request(scope, receive)
        world_id = request.path_params["world_id"]
        access = self.access.get(world_id)
        token = _bearer(request.headers)
        if token is None:
            response: Response = _unauthorized("missing bearer token")
        elif access is None:
            response = JSONResponse({"error": f"world {world_id!r} is not open"}, status_code=404)
        elif not same_token(token, access.token):
            response = _forbidden(f"token not valid for world {world_id!r}")
        else:
            await self.mcp_asgi(scope, receive, send)
            return
        await response(scope, receive, send)

    # -- admin surface -----------------------------------------------------------------------

    def _admin_guard(self, request: Request) -> Response | None:
        token = _bearer(request.headers)
        if token is None:
            return _unauthorized("missing bearer token")
        if not same_token(token, self.admin_token):
            return _forbidden("admin token required")
        return None

    def _access(self, request: Request) -> WorldAccess | Response:
        world_id = request.path_params["world_id"]
        access = self.access.get(world_id)
        if access is None:
            return JSONResponse({"error": f"world {world_id!r} is not open"}, status_code=404)
        return access

    async def admin(self, request: Request) -> Response:
        denied = self._admin_guard(request)
        if denied is not None:
            return denied
        op = request.path_params.get("op", "")
        base = str(request.base_url).rstrip("/")
        try:
            body = await request.json() if request.method in ("POST", "PUT") else {}
        except ValueError:
            return JSONResponse({"error": "body must be JSON"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "body must be a JSON object"}, status_code=400)
        if "world_id" not in request.path_params:
            if request.method == "GET":
                return JSONResponse({"worlds": [self.describe(a, base) for a in self.access.values()]})
            try:
                world = self.hub.open_world(
                    services=body.get("services"), seed=body.get("seed", 0), snapshot=body.get("snapshot")
                )
            except (KeyError, ValueError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            surface = body.get("surface", "direct")
            if surface not in ("direct", "gateway"):
                return JSONResponse({"error": f"surface {surface!r} must be 'direct' or 'gateway'"}, status_code=400)
            return JSONResponse(self.describe(self.add_world(world, surface), base), status_code=201)
        found = self._access(request)
        if isinstance(found, Response):
            return found
        world = found.world
        if request.method == "DELETE":
            world.close()
            del self.access[world.id]
            self.runner.forget(world.id)
            return JSONResponse({"world_id": world.id, "closed": True})
        if op == "":
            return JSONResponse(self.describe(found, base))
        if op == "snapshot":
            return JSONResponse(world.snapshot())
        if op == "hash":
            return JSONResponse({"world_id": world.id, "hash": world.hash(), "services": world.service_hashes()})
        if op == "diff":
            changes = world.diff()
            return JSONResponse({k: [c.model_dump(mode="json") for c in v] for k, v in changes.items()})
        if op == "restore" and request.method == "POST":
            try:
                world.restore(body)
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            return JSONResponse({"world_id": world.id, "hash": world.hash()})
        if op == "reset" and request.method == "POST":
            world.reset()
            return JSONResponse({"world_id": world.id, "hash": world.hash()})
        if op == "score" and request.method == "POST":
            try:
                result = world.score(body.get("rubric", {}), body.get("report"))
            except ValueError as exc:  # pydantic's ValidationError included: a malformed rubric
                return JSONResponse({"error": f"invalid rubric: {exc}"}, status_code=400)
            return JSONResponse(result.model_dump(mode="json"))
        if op == "fork" and request.method == "POST":
            child = world.fork()
            return JSONResponse(self.describe(self.add_world(child, found.surface), base), status_code=201)
        return JSONResponse({"error": f"unknown admin operation {request.method} {op!r}"}, status_code=404)

    # -- the app -----------------------------------------------------------------------------

    def app(self) -> Starlette:
        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with self.sessions.run():
                yield

        methods = ["GET", "POST", "DELETE"]
        return Starlette(
            routes=[
                Route("/worlds/{world_id}/mcp", endpoint=_ASGI(self.agent_endpoint)),
                Route("/admin/worlds", endpoint=self.admin, methods=methods),
                Route("/admin/worlds/{world_id}", endpoint=self.admin, methods=methods),
                Route("/admin/worlds/{world_id}/{op}", endpoint=self.admin, methods=methods),
            ],
            lifespan=lifespan,
        )
