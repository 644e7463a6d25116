"""A real MCP client lists and calls a service over stdio, streamable HTTP and in memory."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from servers.registry import get_service
from servers.serving import ServiceRuntime


async def _exercise(client: Client) -> None:
    listing = await client.list_tools()
    names = {t.name for t in listing.tools}
    assert {"list_messages", "send_message", "get_message"} <= names
    send = next(t for t in listing.tools if t.name == "send_message")
    assert send.output_schema is not None and send.annotations is not None
    assert send.annotations.read_only_hint is False

    page = await client.call_tool("list_messages", {"folder": "inbox", "limit": 2})
    assert page.is_error is False
    assert page.structured_content is not None
    assert page.structured_content["success"] is True
    assert len(page.structured_content["data"]["items"]) == 2

    sent = await client.call_tool(
        "send_message", {"to": ["someone@example.com"], "subject": "Hello", "body": "Over MCP."}
    )
    assert sent.structured_content is not None
    message_id = sent.structured_content["data"]["id"]
    fetched = await client.call_tool("get_message", {"message_id": message_id})
    assert fetched.structured_content is not None
    assert fetched.structured_content["data"]["subject"] == "Hello"

    missing = await client.call_tool("get_message", {"message_id": "msg_9999"})
    assert missing.is_error is True
    assert missing.structured_content == {
        "success": False,
        "error": {"code": 404, "message": "message 'msg_9999' not found"},
    }
    bad = await client.call_tool("send_message", {"to": "not-a-list", "subject": "x", "body": "y"})
    assert bad.structured_content is not None
    assert bad.structured_content["error"]["code"] == 400
    assert "'to'" in bad.structured_content["error"]["message"]


def test_in_memory_client_calls_tools() -> None:
    async def main() -> None:
        async with Client(ServiceRuntime.seeded(get_service("email")).server()) as client:
            await _exercise(client)

    anyio.run(main)


@pytest.mark.slow
def test_stdio_client_calls_tools() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "training.cli", "services", "serve", "email", "--transport", "stdio"],
    )

    async def main() -> None:
        async with Client(params) as client:
            await _exercise(client)

    anyio.run(main)


@pytest.mark.slow
def test_streamable_http_client_calls_tools(cli_server: Callable[..., Any]) -> None:
    port = cli_server("services", "serve", "email", "--transport", "http")

    async def main() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await _exercise(client)

    anyio.run(main)


def test_non_object_arguments_over_http_get_the_tool_envelope(cli_server: Callable[..., Any]) -> None:
    import httpx2 as httpx

    port = cli_server("services", "serve", "email", "--transport", "http")
    params = {"name": "list_messages", "arguments": ["not", "an", "object"]}
    response = httpx.post(
        f"http://127.0.0.1:{port}/mcp",
        json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params},
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"},
    )
    assert response.status_code == 200, response.text
    envelope = response.json()["result"]["structuredContent"]
    assert envelope["success"] is False and envelope["error"]["code"] == 400


def test_non_object_arguments_over_stdio_get_the_tool_envelope() -> None:
    import json
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-m", "training.cli", "services", "serve", "email"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_messages", "arguments": 5}}
    try:
        for message in (init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        proc.kill()
        proc.wait()
    answer = next(a for a in answers if a.get("id") == 2)
    envelope = answer["result"]["structuredContent"]
    assert envelope["success"] is False and envelope["error"]["code"] == 400
