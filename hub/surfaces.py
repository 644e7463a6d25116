"""The two MCP surfaces of a world: *direct* (every mounted tool) and *gateway* (four meta-tools).

The gateway is the discovery interface of the published CompoWorld trajectories and the only
practical one at 10,000 tools: ``list_services``, ``list_tools(service)`` (names and
descriptions only), ``describe_tool(tool)`` (the full schemas) and
``call_tool(tool_name, arguments)``, which answers with exactly the envelope the direct
surface gives for the same call. Every meta-tool answers with an envelope too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import mcp_types as types
from mcp.server import Server

from hub.world import World
from servers.framework import Envelope, error, ok
from servers.serving import LIST_TTL_MS, build_server

Surface = Literal["direct", "gateway"]

GATEWAY_INSTRUCTIONS = (
    "This server is a gateway to many services. Call list_services to see them, "
    "list_tools(service) to see a service's tools, describe_tool(tool) for a tool's full input "
    "schema, then call_tool(tool_name, arguments). Every answer is an envelope: "
    '{"success": true, "data": ...} or {"success": false, "error": {"code": ..., "message": ...}}.'
)
DIRECT_INSTRUCTIONS = (
    "Tools are named <service>__<tool>. Every answer is an envelope: "
    '{"success": true, "data": ...} or {"success": false, "error": {"code": ..., "message": ...}}.'
)

GATEWAY_TOOLS = [
    types.Tool(
        name="list_services",
        description="List the services available in this world with their categories and tool counts.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="list_tools",
        description="List one service's tools (qualified names and one-line descriptions).",
        input_schema={
            "type": "object",
            "properties": {"service": {"type": "string", "description": "Service name from list_services."}},
            "required": ["service"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="describe_tool",
        description="Describe one tool: its full input schema, output schema and whether it writes.",
        input_schema={
            "type": "object",
            "properties": {"tool": {"type": "string", "description": "Qualified tool name, '<service>__<tool>'."}},
            "required": ["tool"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="call_tool",
        description="Call a tool by its qualified name with a JSON object of arguments.",
        input_schema={
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "Qualified tool name, '<service>__<tool>'."},
                "arguments": {"type": "object", "description": "Arguments matching the tool's input schema."},
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
    ),
]
GATEWAY_NAMES = frozenset(t.name for t in GATEWAY_TOOLS)


def _string_arg(arguments: dict[str, Any], name: str) -> str | Envelope:
    value = arguments.get(name)
    if not isinstance(value, str) or not value:
        return error(400, f"argument {name!r} is required and must be a non-empty string")
    return value


def gateway_call(world: World, meta: str, arguments: dict[str, Any]) -> Envelope:
    """Answer one gateway meta-tool call against ``world``."""
    registry = world.hub.registry
    if meta == "list_services":
        services = [registry.services[name] for name in world.services]
        return ok(
            {
                "services": [
                    {"name": s.name, "category": s.category, "description": s.description, "tools": len(s.tools)}
                    for s in services
                ]
            }
        )
    if meta == "list_tools":
        service = _string_arg(arguments, "service")
        if isinstance(service, dict):
            return service
        if service not in world.services:
            return error(404, f"unknown service {service!r}; call list_services to see the available services")
        tools = registry.services[service].tools
        return ok({"service": service, "tools": [{"name": t.qualified, "description": t.description} for t in tools]})
    if meta == "describe_tool":
        name = _string_arg(arguments, "tool")
        if isinstance(name, dict):
            return name
        entry = registry.tools.get(name)
        if entry is None or entry.service not in world.services:
            return error(404, f"unknown tool {name!r}; call list_services, then list_tools(service)")
        return ok(
            {
                "name": entry.qualified,
                "service": entry.service,
                "kind": entry.kind,
                "description": entry.description,
                "input_schema": entry.input_schema,
                "output_schema": entry.output_schema,
            }
        )
    if meta == "call_tool":
        name = _string_arg(arguments, "tool_name")
        if isinstance(name, dict):
            return name
        inner = arguments.get("arguments", {})
        if inner is None:
            inner = {}
        if not isinstance(inner, dict):
            return error(400, "argument 'arguments' must be a JSON object")
        return world.call(name, inner)
    return error(404, f"unknown gateway tool {meta!r}; the gateway has {sorted(GATEWAY_NAMES)}")


def surface_tools(world: World, surface: Surface, output_schemas: bool = False) -> list[types.Tool]:
    if surface == "gateway":
        return GATEWAY_TOOLS
    return world.hub.registry.listing(world.services, output_schemas)


def surface_call(world: World, surface: Surface) -> Callable[[str, dict[str, Any]], Envelope]:
    if surface == "gateway":
        return lambda name, args: gateway_call(world, name, args)
    return world.call


def world_server(world: World, surface: Surface = "direct", output_schemas: bool = False) -> Server[Any]:
    """An MCP server for one world (in-memory clients, stdio); the HTTP app serves many worlds.

    ``output_schemas`` adds each tool's output schema to the direct listing (off by default: see
    :attr:`hub.registry.ToolEntry.mcp_lean`).
    """
    return build_server(
        f"compoworld-hub-{surface}",
        "1",
        surface_tools(world, surface, output_schemas),
        surface_call(world, surface),
        list_ttl_ms=LIST_TTL_MS,
        instructions=GATEWAY_INSTRUCTIONS if surface == "gateway" else DIRECT_INSTRUCTIONS,
    )
