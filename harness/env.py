"""How agents reach tools: one small interface, two paths that record identically.

- :class:`InProcessEnv` calls the world's surface directly (fast: RL rollouts, batch evaluation).
- :class:`MCPEnv` goes through the hub's in-memory MCP surface with the official client, so
  what is recorded is exactly what an MCP client sees.

Both expose the surface's tools as OpenAI function specs and record every call into the
trajectory: the name the agent used, the service and tool behind it, the arguments, the envelope,
the latency and, for writes, the state diff (one record a call, made by the recorder the
environment owns).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, cast

import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal

from harness.trajectory import ToolCall
from hub.middleware import Recorder
from hub.surfaces import GATEWAY_NAMES, Surface, surface_call, surface_tools, world_server
from hub.world import World
from servers.framework import Envelope
from servers.serving import list_all_tools


def function_spec(tool: types.Tool) -> dict[str, Any]:
    """An MCP tool as an OpenAI function spec."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema},
    }


class ToolEnv:
    """Base: the surface's tools and a recording ``call``.

    The environment owns the recorder of its world's calls (``recorder``, a fresh one unless given:
    a continued recording passes one that numbers on): it wraps it around the world and calls
    through it, so every call is recorded once, and ``calls`` are its records.
    """

    path = "inprocess"

    def __init__(self, world: World, surface: Surface = "direct", recorder: Recorder | None = None) -> None:
        self.world = world
        self.surface = surface
        self.recorder = recorder if recorder is not None else Recorder()
        world.use(self.recorder)
        self.calls: list[ToolCall] = self.recorder.records
        self._meta = GATEWAY_NAMES if surface == "gateway" else frozenset()

    def tools(self) -> list[dict[str, Any]]:
        return [function_spec(t) for t in surface_tools(self.world, self.surface)]

    def _raw(self, name: str, arguments: dict[str, Any]) -> Envelope:
        raise NotImplementedError

    def record(self, name: str, arguments: Any) -> ToolCall:
        """Call a tool of the surface and return its record (the envelope is ``.envelope``)."""
        sent = arguments if isinstance(arguments, dict) else {"__invalid__": arguments}
        return self.recorder.record(name, arguments, lambda: self._raw(name, sent), name in self._meta)

    def call(self, name: str, arguments: Any) -> Envelope:
        """Call a tool of the surface; always an envelope; recorded."""
        # The record keeps the envelope as a plain dict (the model does not re-validate it per call).
        return cast(Envelope, self.record(name, arguments).envelope)

    def call_tool(self, tool: str, arguments: dict[str, Any]) -> Envelope:
        """Call a qualified tool whatever the surface (through ``call_tool`` on the gateway)."""
        if self.surface == "gateway":
            return self.call("call_tool", {"tool_name": tool, "arguments": arguments})
        return self.call(tool, arguments)

    def close(self) -> None:
        pass


class InProcessEnv(ToolEnv):
    path = "inprocess"

    def __init__(self, world: World, surface: Surface = "direct", recorder: Recorder | None = None) -> None:
        super().__init__(world, surface, recorder)
        self._call = surface_call(world, surface)

    def _raw(self, name: str, arguments: dict[str, Any]) -> Envelope:
        if self.surface == "direct" and "__invalid__" in arguments:
            return {"success": False, "error": {"code": 400, "message": "arguments must be a JSON object"}}
        return self._call(name, arguments)


class MCPEnv(ToolEnv):
    """Through the official MCP client over the in-memory transport (on a background event loop)."""

    path = "mcp"

    def __init__(self, world: World, surface: Surface = "direct", recorder: Recorder | None = None) -> None:
        super().__init__(world, surface, recorder)
        from mcp import Client

        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        # The client's task groups must be entered and left by one task: the portal wraps it so.
        self._client_cm = self._portal.wrap_async_context_manager(Client(world_server(world, surface)))
        self._client = self._client_cm.__enter__()
        self._listing = self._portal.call(list_all_tools, self._client)  # every page of it

    def tools(self) -> list[dict[str, Any]]:
        return [function_spec(t) for t in self._listing]

    def _raw(self, name: str, arguments: dict[str, Any]) -> Envelope:
        result = self._portal.call(self._client.call_tool, name, arguments)
        structured = result.structured_content
        if isinstance(structured, dict) and "success" in structured:
            return cast(Envelope, structured)  # the server's envelope, as it sent it
        text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
        return {"success": False, "error": {"code": 502, "message": text or "no structured result"}}

    def close(self) -> None:
        self._client_cm.__exit__(None, None, None)
        self._portal_cm.__exit__(None, None, None)
