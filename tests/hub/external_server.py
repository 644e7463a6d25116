"""A tiny external MCP server over stdio for the hub's tests: it can report its pid, hang, and
answer any structured result. With ``--require PATH`` it exits at once (status 3) unless PATH
exists: a server that is down when the hub starts and comes up later."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from servers.serving import run_stdio

TOOLS = [
    types.Tool(
        name="pid",
        description="Return the process id.",
        input_schema={"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="echo",
        description="Echo a text.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    types.Tool(
        name="hang",
        description="Never answer.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="answer",
        description="Answer 'structured' as the structured result (flagged as an error with 'is_error').",
        input_schema={"type": "object", "properties": {"structured": {}, "is_error": {"type": "boolean"}}},
    ),
]


async def on_list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "pid":
        return types.CallToolResult(content=[], structured_content={"pid": os.getpid()})
    if params.name == "echo":
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(args.get("text")))])
    if params.name == "hang":
        time.sleep(3600)  # blocks the whole process, like a wedged server
    if params.name == "answer":
        return types.CallToolResult(
            content=[], structured_content=args.get("structured"), is_error=bool(args.get("is_error"))
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text="unknown tool")], is_error=True)


if __name__ == "__main__":
    if "--require" in sys.argv and not os.path.exists(sys.argv[sys.argv.index("--require") + 1]):
        raise SystemExit(3)
    anyio.run(run_stdio, Server("fake-external", on_list_tools=on_list_tools, on_call_tool=on_call_tool))
