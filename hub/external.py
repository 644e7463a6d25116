"""External MCP servers mounted in the hub: a stdio command or a streamable-HTTP URL.

Declared in the hub config (TOML)::

    [[external]]
    name = "weather"                       # service name; tools become weather__<tool>
    command = ["python", "weather.py"]     # or: url = "http://127.0.0.1:9000/mcp"
                                           # or: fastmcp = "my_tools:mcp" (in process: hub.fastmcp_mount)
    timeout_s = 10                         # per call
    env = { API_MODE = "offline" }
    retry_s = 1                            # first wait before retrying a server that did not start
    retry_max_s = 60                       # the wait doubles after each failure up to this

Each external server runs behind one client connection on a background event loop. A server
that fails to start, dies mid-episode or hangs costs only the call in flight: that call gets an
error envelope (503, or 504 after the timeout), the connection is torn down, and the next call
starts the server again. Nothing an external server does can take the hub down. External
servers hold their own state, so it is not part of world snapshots.

**A server that cannot start when the hub starts** is mounted with no tools yet and retried with
backoff (``retry_s``, doubling up to ``retry_max_s``): in the background for every hub that has
opened a world over it, and on the next call of one of its tools (``<name>__<tool>``) once the
wait is over. Until it answers, such a call gets a 503 envelope naming the server, its last
error and when it is retried next. When it answers, its tools are mounted: the hub gets a new
registry with them (the registry itself stays immutable), so listings, ``describe_tool`` and calls
see them. This needs :func:`external_middleware` on the hub (``Hub(..., middleware=[...,
external_middleware])``): a middleware is how the hub lets this module see calls to tools it does
not know yet. Listings read from ``hub.registry`` (the gateway, the HTTP surfaces) show the new
tools at once; an MCP server built with a fixed tool list before they were mounted (the direct
surface over stdio) keeps listing what the registry held then.

**Arguments** are checked before anything is sent: they must be a JSON object of JSON values —
text that is valid Unicode (a lone surrogate such as ``"\\ud800"`` cannot be encoded and would
break the connection), finite numbers, string keys. Anything else is a 400 envelope naming the
field, and the connection stays up.

**Results** become envelopes (:func:`to_envelope`), and every envelope the hub returns is valid:
an external result that is itself an envelope is normalised — ``{"success": true}`` without
``data`` gets ``"data": null`` (the tool succeeded and returned nothing), keys other than
``success`` / ``data`` / ``error`` are dropped, and ``{"success": false}`` without a proper
``error`` (an integer code 400–599 and a string message), or a success that the MCP result flags
as an error, becomes a 502 envelope quoting what came back. Text that is not valid Unicode in a
result is replaced by U+FFFD, so it cannot break the transport to the agent either.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import math
import threading
import time
import tomllib
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import Client, StdioServerParameters

from hub.registry import SEPARATOR, Registry, RegistryError, ServiceEntry, ToolEntry, qualify
from hub.world import CallContext, Handler, Middleware, World
from servers.framework import Envelope, error
from servers.values import encodable

if TYPE_CHECKING:
    from hub.core import Hub

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExternalConfig:
    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    startup_timeout_s: float = 30.0
    category: str = "external"
    description: str = ""
    retry_s: float = 1.0
    retry_max_s: float = 60.0
    fastmcp: str | None = None
    """``module:attribute`` of a FastMCP server mounted in process (:mod:`hub.fastmcp_mount`)."""
    state: str | None = None
    """``module:attribute`` of the per-world state hook of a ``fastmcp`` server."""

    def __post_init__(self) -> None:
        if sum((bool(self.command), bool(self.url), bool(self.fastmcp))) != 1:
            raise ValueError(
                f"external server {self.name!r} needs exactly one of 'command' or 'url' "
                "(a subprocess or HTTP MCP server) or 'fastmcp' (a FastMCP server mounted in process)"
            )
        if self.state is not None and not self.fastmcp:
            raise ValueError(f"external server {self.name!r}: 'state' is only for a 'fastmcp' server")
        if not 0 <= self.retry_s <= self.retry_max_s:
            raise ValueError(f"external server {self.name!r} needs 0 <= retry_s <= retry_max_s")

    def backoff(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed starts in a row before the next try."""
        return float(min(self.retry_max_s, self.retry_s * 2 ** max(0, min(failures - 1, 30))))


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a hub config file: ``{"services": [...] | None, "external": [ExternalConfig, ...], "worldmodel": {...}}``.

    ``[worldmodel]`` mounts simulated services: ``specs`` (a directory), ``backend`` (rules | llm),
    ``model``, ``base_url`` and ``cache`` for the llm backend.
    """
    data = tomllib.loads(Path(path).read_text())
    hub = data.get("hub", {})
    externals = []
    for raw in data.get("external", []):
        unknown = set(raw) - {
            "name",
            "command",
            "url",
            "env",
            "timeout_s",
            "startup_timeout_s",
            "category",
            "description",
            "retry_s",
            "retry_max_s",
            "fastmcp",
            "state",
        }
        if unknown:
            raise ValueError(f"{path}: unknown key(s) {sorted(unknown)} in external server {raw.get('name')!r}")
        externals.append(ExternalConfig(**{**raw, "command": tuple(raw.get("command", ()))}))
    worldmodel = data.get("worldmodel")
    if worldmodel is not None:
        unknown = set(worldmodel) - {"specs", "backend", "model", "base_url", "cache"}
        if unknown:
            raise ValueError(f"{path}: unknown key(s) {sorted(unknown)} in [worldmodel]")
    return {"services": hub.get("services"), "external": externals, "worldmodel": worldmodel}


class _Loop:
    """One background event loop shared by every external connection of the process."""

    _instance: _Loop | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="compoworld-external", daemon=True).start()

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._guard:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance.loop


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's background event loop for MCP servers the hub talks to (started on first use)."""
    return _Loop.get()


class ExternalUnavailable(Exception):
    """An external server that never started is not available (yet); the message names it."""


class ExternalServer:
    """A client connection to one external MCP server, restarted whenever it fails."""

    def __init__(self, config: ExternalConfig) -> None:
        self.config = config
        self.loop = _Loop.get()
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Future[None] | None = None
        self._lock = threading.Lock()
        self.starts = 0
        self.last_error: str | None = None
        # Discovery: the tools the server listed (None until it first did), the failed starts in
        # a row, when it may be tried again, and the hubs to mount its tools in when it answers.
        self.tools: list[types.Tool] | None = None
        self.failures = 0
        self.retry_at = 0.0
        self._discovering = threading.Lock()
        self._hubs: weakref.WeakSet[Hub] = weakref.WeakSet()
        self._retrier: threading.Thread | None = None
        self._closed = threading.Event()

    # -- connection lifecycle (runs on the background loop) ---------------------------------

    def _target(self) -> Any:
        cfg = self.config
        if cfg.url:
            return cfg.url
        return StdioServerParameters(command=cfg.command[0], args=list(cfg.command[1:]), env=cfg.env or None)

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        # The client context is entered and left by this one task, as anyio requires.
        stop = asyncio.Event()
        self._stop = stop
        try:
            async with Client(self._target()) as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("external server %r connection ended: %s", self.config.name, exc)

    async def _connect(self) -> Client:
        if self._client is not None:
            return self._client
        ready: asyncio.Future[Client] = self.loop.create_future()
        self._task = asyncio.ensure_future(self._hold(ready))
        self.starts += 1
        self._client = await asyncio.wait_for(ready, self.config.startup_timeout_s)
        return self._client

    async def _teardown(self) -> None:
        self._client = None
        task, self._task = self._task, None
        if self._stop is not None:
            self._stop.set()
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except (TimeoutError, Exception):
                task.cancel()

    async def _list(self) -> list[types.Tool]:
        client = await self._connect()
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(10_000):  # a paginated listing, followed to its end
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        client = await self._connect()
        return await client.call_tool(tool, arguments)

    def _run(self, coro: Any, timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    def restart(self) -> None:
        """Tear the connection down; the next call starts the server again."""
        try:
            self._run(self._teardown(), 10)
        except Exception as exc:  # a stuck teardown must not block the hub
            log.warning("external server %r teardown failed: %s", self.config.name, exc)
            self._client = None

    # -- discovery: a server that did not start is retried with backoff ----------------------

    @property
    def pending(self) -> bool:
        """True while the server has never listed its tools (it did not start yet)."""
        return self.tools is None

    def unavailable(self) -> str:
        """Why the server's tools cannot be called yet, and when it is tried again."""
        wait = self.retry_at - time.monotonic()
        when = "it is being started again now" if wait <= 0 else f"the hub tries again in {math.ceil(wait)}s"
        return (
            f"external server {self.config.name!r} is not available: it did not start "
            f"({self.last_error or 'no answer'}); {when}, retry the call later"
        )

    def discover(self, wait: bool = True) -> list[types.Tool]:
        """The server's tools, listing them now if it never did.

        Raises :class:`ExternalUnavailable` while the backoff after a failed start lasts, when
        this start fails too, or (``wait=False``) while another thread is starting it.
        """
        tools = self.tools
        if tools is not None:
            return tools
        if not self._discovering.acquire(blocking=wait):
            raise ExternalUnavailable(self.unavailable())
        try:
            if self.tools is not None:
                return self.tools
            if time.monotonic() < self.retry_at:
                raise ExternalUnavailable(self.unavailable())
            with self._lock:
                try:
                    listed = list(self._run(self._list(), self.config.startup_timeout_s + self.config.timeout_s))
                except Exception as exc:
                    self.failures += 1
                    self.last_error = _describe(exc)
                    self.retry_at = time.monotonic() + self.config.backoff(self.failures)
                    log.warning(
                        "external server %r did not start (%d in a row): %s",
                        self.config.name,
                        self.failures,
                        self.last_error,
                    )
                    self.restart()
                    raise ExternalUnavailable(self.unavailable()) from None
            self.failures, self.retry_at, self.last_error = 0, 0.0, None
            self.tools = listed
        finally:
            self._discovering.release()
        with _RETRIERS:
            hubs = list(self._hubs)
        for hub in hubs:
            mount(hub, self)
        return listed

    def attach(self, hub: Hub) -> None:
        """Mount this server's tools in ``hub`` as soon as it answers (retrying in the background)."""
        if self.tools is not None:
            mount(hub, self)
            return
        with _RETRIERS:
            self._hubs.add(hub)
            if self._retrier is None or not self._retrier.is_alive():
                self._retrier = threading.Thread(
                    target=self._retry_loop, name=f"compoworld-external-retry-{self.config.name}", daemon=True
                )
                self._retrier.start()
        if self.tools is not None:  # it started while the hub was being added
            mount(hub, self)

    def _retry_loop(self) -> None:
        """Retry a server that did not start, with backoff, while a hub waits for it."""
        while self.tools is None and not self._closed.is_set() and len(self._hubs):
            wait = self.retry_at - time.monotonic()
            if wait > 0:
                self._closed.wait(min(wait, 1.0))
                continue
            try:
                self.discover()
            except ExternalUnavailable:
                pass
            except Exception as exc:  # never let the retry thread die with an unexpected error
                log.warning("external server %r retry failed: %s", self.config.name, exc)
                self._closed.wait(1.0)

    # -- public API --------------------------------------------------------------------------

    def list_tools(self) -> list[types.Tool]:
        """The server's tools (starting it if it never started); raises if it cannot start."""
        return list(self.discover())

    def call(self, world: Any, tool: str, arguments: dict[str, Any]) -> Envelope:
        """Call ``tool``; bad arguments are a 400 (nothing sent), any failure an error envelope and a restart."""
        name = self.config.name
        arguments = {} if arguments is None else arguments
        problem = argument_problem(arguments)
        if problem is not None:
            return error(400, f"invalid arguments for {tool!r} of external server {name!r}: {problem}")
        if self.tools is None:
            try:
                self.discover(wait=False)
            except ExternalUnavailable as exc:
                return error(503, str(exc))
        with self._lock:
            try:
                result: types.CallToolResult = self._run(
                    self._call(tool, arguments),
                    self.config.timeout_s + (0 if self._client else self.config.startup_timeout_s),
                )
            except TimeoutError:
                self.last_error = f"timeout after {self.config.timeout_s}s"
                self.restart()
                return error(
                    504,
                    f"external server {name!r} did not answer {tool!r} within "
                    f"{self.config.timeout_s:g}s; it has been restarted, retry the call",
                )
            except Exception as exc:
                self.last_error = _describe(exc)
                self.restart()
                return error(
                    503,
                    f"external server {name!r} failed on {tool!r} ({self.last_error}); "
                    "it has been restarted, retry the call",
                )
        return to_envelope(result)

    def close(self) -> None:
        self._closed.set()
        self.restart()


def _describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, looking inside exception groups (anyio task groups)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_describe(e) for e in exc.exceptions))[:500]
    text = clean(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_RETRIERS = threading.Lock()
_MOUNTING = threading.Lock()


# -- arguments ---------------------------------------------------------------------------------


MAX_DEPTH = 64
"""How deeply arguments sent to an external server may nest."""


def argument_problem(arguments: Any) -> str | None:
    """Why ``arguments`` cannot be sent to an MCP server as they are (None when they can).

    They must be a JSON object of JSON values: valid Unicode text (a lone surrogate cannot be
    encoded as UTF-8 and would break a stdio connection), finite numbers, string keys, at most
    :data:`MAX_DEPTH` levels deep. Walked without recursion, so no input makes the check fail.
    """
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    stack: list[tuple[Any, str, int]] = [(arguments, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if value is None or isinstance(value, bool | int):
            continue
        if isinstance(value, str):
            if not encodable(value):
                return f"argument {where!r} is not valid Unicode text (it holds a lone surrogate such as \\ud800)"
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                return f"argument {where!r} is {value!r}, which JSON cannot carry"
            continue
        if not isinstance(value, dict | list | tuple):
            return f"argument {where!r} is a {type(value).__name__}, not a JSON value"
        if depth >= MAX_DEPTH:
            return f"argument {where.split('.')[0]!r} nests deeper than {MAX_DEPTH} levels"
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"argument {where or 'names'!r} has a key that is not a string ({key!r})"
                if not encodable(key):
                    return f"argument name {key!a} is not valid Unicode text (it holds a lone surrogate)"
                stack.append((item, f"{where}.{key}" if where else key, depth + 1))
        else:
            stack.extend((item, f"{where}.{index}", depth + 1) for index, item in enumerate(value))
    return None


# -- results -----------------------------------------------------------------------------------


def clean(value: Any) -> Any:
    """``value`` with text that is not valid Unicode (lone surrogates) replaced by U+FFFD."""
    if isinstance(value, str):
        return value if encodable(value) else value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    return value


def _malformed(what: str, value: Any) -> Envelope:
    try:
        shown = json.dumps(clean(value), ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        shown = repr(value)
    return error(502, f"the external tool answered {what}: {shown[:300]}")


def normalise(structured: dict[str, Any], is_error: bool = False) -> Envelope:
    """An envelope a tool answered (``structured["success"]`` is a bool), made valid: exactly the
    keys an envelope has (see the module doc)."""
    if structured["success"] is True:
        if is_error:
            return _malformed("success in a result flagged as an error", structured)
        return {"success": True, "data": clean(structured.get("data"))}
    problem = structured.get("error")
    if isinstance(problem, dict):
        code, message = problem.get("code"), problem.get("message")
        if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599 and isinstance(message, str):
            return error(code, clean(message))
    return _malformed("an error envelope without an error code (400-599) and message", structured)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def to_envelope(result: types.CallToolResult) -> Envelope:
    """An external tool result as a valid envelope (envelopes are normalised; see the module doc)."""
    try:
        return _to_envelope(result)
    except RecursionError:
        return error(502, "the external tool answered a result nested too deeply to pass on")


def _to_envelope(result: types.CallToolResult) -> Envelope:
    structured = result.structured_content
    if isinstance(structured, dict) and isinstance(structured.get("success"), bool):
        return normalise(structured, bool(result.is_error))
    text = clean("\n".join(c.text for c in result.content if isinstance(c, types.TextContent)))
    if result.is_error:
        return error(502, text or "the external tool reported an error")
    if structured is not None:
        return {"success": True, "data": clean(structured)}
    try:
        return {"success": True, "data": json.loads(text, parse_constant=_no_constants)}
    except ValueError:
        return {"success": True, "data": text}


# -- mounting ----------------------------------------------------------------------------------


def _service_entry(config: ExternalConfig, server: ExternalServer, tools: list[types.Tool]) -> ServiceEntry:
    entries = []
    for tool in tools:
        qualified = qualify(config.name, tool.name)
        read_only = bool(tool.annotations and tool.annotations.read_only_hint)
        entries.append(
            ToolEntry(
                qualified=qualified,
                service=config.name,
                name=tool.name,
                kind="read" if read_only else "write",
                description=tool.description or "",
                input_schema=tool.input_schema,
                output_schema=None,
                external=tool.model_copy(update={"name": qualified, "output_schema": None}),
            )
        )
    origin = f"external:{config.url or ' '.join(config.command)}"
    return ServiceEntry(
        name=config.name,
        source="external",
        category=config.category,
        description=config.description or f"External MCP server ({origin}).",
        version="external",
        tools=tuple(entries),
        origin=origin,
        backend=server,
    )


def external_entry(config: ExternalConfig) -> ServiceEntry:
    """Start the server once to list its tools; a server that cannot start is mounted with none
    for now, and retried later (see the module doc and :func:`external_middleware`).

    A ``fastmcp`` config is mounted in process by :func:`hub.fastmcp_mount.config_entry` instead."""
    if config.fastmcp:
        raise ValueError(
            f"external server {config.name!r} is an in-process FastMCP server: "
            "mount it with hub.fastmcp_mount.config_entry"
        )
    server = ExternalServer(config)
    try:
        tools = server.discover()
    except ExternalUnavailable:  # logged by discover; retried later
        tools = []
    return _service_entry(config, server, tools)


def mount(hub: Hub, server: ExternalServer) -> Registry:
    """Give ``hub`` a registry with ``server``'s tools, if it holds the server without them.

    The registry stays immutable: the hub gets a new one with the service's entry replaced (worlds
    look tools up in ``hub.registry`` on every call). Tools that cannot be mounted (a name
    collision, an invalid name) leave the registry as it was; the reason is the server's last error.
    """
    with _MOUNTING:
        registry = hub.registry
        current = registry.services.get(server.config.name)
        if not server.tools or current is None or current.backend is not server or current.tools:
            return registry
        fresh = _service_entry(server.config, server, server.tools)
        try:
            rebuilt = Registry.build([fresh if e.name == fresh.name else e for e in registry.services.values()])
        except RegistryError as exc:
            server.last_error = f"its tools cannot be mounted: {exc}"
            log.warning("external server %r: %s", server.config.name, server.last_error)
            return registry
        hub.registry = rebuilt  # open worlds see the tools at once: the backend they hold is the same
        log.info("external server %r started: %d tools mounted", server.config.name, len(fresh.tools))
        return rebuilt


def _pending_server(world: World, service: str) -> ExternalServer | None:
    entry = world.hub.registry.services.get(service)
    if entry is None or service not in world.services or not isinstance(entry.backend, ExternalServer):
        return None
    return entry.backend if not entry.tools else None


def external_middleware(world: World) -> Middleware:
    """Hub middleware factory: external servers that did not start are retried and mounted.

    ``Hub(registry, middleware=[..., external_middleware])`` (or ``Hub.native(...,
    middleware=[...])``). Opening a world attaches the hub to every pending external server it
    mounts (they are retried in the background, with backoff, and mounted when they answer); a
    call of ``<name>__<tool>`` for such a server retries it at once when the backoff is over, and
    answers a 503 naming the server while it is down.
    """
    for service in world.services:
        server = _pending_server(world, service)
        if server is not None:
            server.attach(world.hub)

    def middleware(ctx: CallContext, call_next: Handler) -> Envelope:
        if ctx.entry is not None or not isinstance(ctx.tool, str):
            return call_next(ctx)
        service, sep, _ = ctx.tool.partition(SEPARATOR)
        server = _pending_server(ctx.world, service) if sep else None
        if server is None:
            return call_next(ctx)
        try:
            server.discover(wait=False)
        except ExternalUnavailable as exc:
            return error(503, str(exc))
        registry = mount(ctx.world.hub, server)
        ctx.entry = registry.tools.get(ctx.tool)
        if ctx.entry is None and server.tools and not registry.services[service].tools:
            return error(502, f"external server {service!r} started, but {server.last_error}")
        return call_next(ctx)

    return middleware
