"""External MCP servers mounted in the hub: a stdio command or a streamable-HTTP URL.

Declared in the hub config (TOML)::

    [[external]]
    name = "weather"                       # service name; tools become weather__<tool>
    command = ["python", "weather.py"]     # or: url = "http://127.0.0.1:9000/mcp"
    timeout_s = 10                         # per call
    env = { API_MODE = "offline" }

Each external server runs behind one client connection on a background event loop. A server
that fails to start, dies mid-episode or hangs costs only the call in flight: that call gets an
error envelope (503, or 504 after the timeout), the connection is torn down, and the next call
starts the server again. Nothing an external server does can take the hub down. External
servers hold their own state, so it is not part of world snapshots.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters

from hub.registry import ServiceEntry, ToolEntry, qualify
from servers.framework import Envelope, error

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

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ValueError(f"external server {self.name!r} needs exactly one of 'command' or 'url'")


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
        return list((await client.list_tools()).tools)

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

    # -- public API --------------------------------------------------------------------------

    def list_tools(self) -> list[types.Tool]:
        with self._lock:
            return list(self._run(self._list(), self.config.startup_timeout_s + self.config.timeout_s))

    def call(self, world: Any, tool: str, arguments: dict[str, Any]) -> Envelope:
        """Call ``tool``; any failure becomes an error envelope and a restart."""
        name = self.config.name
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
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.restart()
                return error(
                    503,
                    f"external server {name!r} failed on {tool!r} ({type(exc).__name__}: {exc}); "
                    "it has been restarted, retry the call",
                )
        return to_envelope(result)

    def close(self) -> None:
        self.restart()


def to_envelope(result: types.CallToolResult) -> Envelope:
    """An external tool result as an envelope (results that already are envelopes pass through)."""
    structured = result.structured_content
    if isinstance(structured, dict) and isinstance(structured.get("success"), bool):
        return structured
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    if result.is_error:
        return error(502, text or "the external tool reported an error")
    if structured is not None:
        return {"success": True, "data": structured}
    try:
        return {"success": True, "data": json.loads(text)}
    except ValueError:
        return {"success": True, "data": text}


def external_entry(config: ExternalConfig) -> ServiceEntry:
    """Start the server once to list its tools; a server that cannot start is mounted with none."""
    server = ExternalServer(config)
    try:
        tools = server.list_tools()
    except Exception as exc:
        server.last_error = f"{type(exc).__name__}: {exc}"
        log.warning("external server %r did not start: %s", config.name, server.last_error)
        server.restart()
        tools = []
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
