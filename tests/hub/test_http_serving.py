"""Serving without stalls over real HTTP: no listing per call, worlds that never block each other,
paged listings a default ``ClientSession`` reads whole, and protocol edge cases as envelopes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2 as httpx
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import hub.http as hub_http
from hub.core import Hub
from hub.http import HubHTTP, WorldAccess
from servers.serving import PAGE_BYTES, CallFn, list_all_tools
from tests.conftest import free_port, full_hub

ADMIN = {"Authorization": "Bearer admin-secret"}
SLOW_S = 3.0


class SlowWorlds(HubHTTP):
    """Worlds whose id is in ``slow`` take SLOW_S seconds per call (a hung external tool)."""

    slow: set[str] = set()

    def call_function(self, access: WorldAccess) -> CallFn:
        inner = super().call_function(access)
        if access.world.id not in self.slow:
            return inner

        def call(name: str, arguments: dict[str, Any]) -> Any:
            time.sleep(SLOW_S)
            return inner(name, arguments)

        return call


def _serve(front: HubHTTP) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(front.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def big() -> Iterator[tuple[HubHTTP, str]]:
    front = HubHTTP(full_hub(), admin_token="admin-secret")
    yield from ((front, base) for base in _serve(front))


@pytest.fixture
def slow(hub: Hub) -> Iterator[tuple[SlowWorlds, str]]:
    front = SlowWorlds(hub, admin_token="admin-secret", call_timeout=1.0)
    front.slow = set()
    yield from ((front, base) for base in _serve(front))


def _create(base: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{base}/admin/worlds", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _tool_count(front: HubHTTP, world: dict[str, Any]) -> int:
    opened = front.access[world["world_id"]].world
    return sum(len(opened.hub.registry.services[name].tools) for name in opened.services)


def _client(world: dict[str, Any]) -> Client:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {world['token']}"}, timeout=30)
    return Client(streamable_http_client(world["url"], http_client=http))


def test_a_call_on_a_big_world_never_builds_the_listing(big: tuple[HubHTTP, str], monkeypatch: Any) -> None:
    front, base = big
    world = _create(base, seed=1, surface="direct")
    assert _tool_count(front, world) > 3000
    listings: list[str] = []
    real = hub_http.surface_tools

    def counted(*args: Any, **kwargs: Any) -> Any:
        listings.append("list")
        return real(*args, **kwargs)

    monkeypatch.setattr(hub_http, "surface_tools", counted)

    async def calls() -> list[Any]:
        async with _client(world) as client:
            await list_all_tools(client)  # as an agent does once: the client now knows every tool
            listings.clear()
            out = []
            for _ in range(3):
                result = await client.call_tool("email__list_messages", {"limit": 2, "folder": "inbox"})
                out.append(result.structured_content)
            return out

    answers = anyio.run(calls)
    assert all(a["success"] for a in answers)
    assert listings == []


def test_a_default_client_session_lists_every_tool_of_the_full_hub(big: tuple[HubHTTP, str]) -> None:
    front, base = big
    world = _create(base, seed=1, surface="direct")
    expected = _tool_count(front, world)
    sizes: list[int] = []

    async def listing() -> list[types.Tool]:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {world['token']}"}, timeout=60)
        # The SDK's ClientSession with its default 1 MiB limit on one server-sent event.
        async with (
            streamable_http_client(world["url"], http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.list_tools()
            sizes.append(len(first.model_dump_json(by_alias=True, exclude_none=True)))
            return await list_all_tools(session)

    tools = anyio.run(listing)
    assert len(tools) == expected and len({t.name for t in tools}) == expected
    assert sizes[0] <= PAGE_BYTES + 16_384 < 1_048_576


def test_a_slow_world_does_not_slow_another(slow: tuple[SlowWorlds, str]) -> None:
    front, base = slow
    stuck, free = _create(base, services=["crm"], seed=1), _create(base, services=["crm"], seed=1)
    front.slow = {stuck["world_id"]}
    timings: dict[str, float] = {}

    async def call(world: dict[str, Any], label: str) -> None:
        async with _client(world) as client:
            started = time.perf_counter()
            await client.call_tool("crm__list_deals", {"limit": 1})
            timings[label] = time.perf_counter() - started

    async def both() -> None:
        async with _client(free) as client:
            await client.call_tool("crm__list_deals", {"limit": 1})  # warm the connection path
        async with anyio.create_task_group() as group:
            group.start_soon(call, stuck, "stuck")
            await anyio.sleep(0.3)  # world A's call is running (and blocking) now
            group.start_soon(call, free, "free")

    anyio.run(both)
    assert timings["free"] < 0.5, timings
    assert timings["stuck"] >= 0.9  # it answered at its deadline (1 s), with a 504 envelope


def test_a_call_past_its_deadline_answers_504(slow: tuple[SlowWorlds, str]) -> None:
    front, base = slow
    world = _create(base, services=["crm"], seed=1)
    front.slow = {world["world_id"]}

    async def call() -> Any:
        async with _client(world) as client:
            return (await client.call_tool("crm__list_deals", {"limit": 1})).structured_content

    envelope = anyio.run(call)
    assert envelope["success"] is False and envelope["error"]["code"] == 504
    assert "crm__list_deals" in envelope["error"]["message"]


def test_non_object_arguments_get_the_tool_envelope(slow: tuple[SlowWorlds, str]) -> None:
    _, base = slow
    world = _create(base, services=["crm"], seed=1)
    headers = {
        "Authorization": f"Bearer {world['token']}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "crm__list_deals", "arguments": "x"},
    }
    response = httpx.post(world["url"], json=request, headers=headers)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["id"] == 7 and answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["error"]["code"] == 400
    assert "arguments" in answer["result"]["structuredContent"]["error"]["message"]


def test_tokens_never_raise_and_401_says_how_to_authenticate(slow: tuple[SlowWorlds, str]) -> None:
    _, base = slow
    world = _create(base, services=["crm"], seed=1)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    missing = httpx.post(world["url"], json=ping)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    odd = {b"Authorization": "Bearer tökén-ü".encode()}  # non-ASCII bytes, as a client may send them
    assert httpx.post(world["url"], json=ping, headers=odd).status_code == 403
    assert httpx.get(f"{base}/admin/worlds", headers=odd).status_code == 403


def test_an_unknown_cursor_is_a_protocol_error(slow: tuple[SlowWorlds, str]) -> None:
    _, base = slow
    world = _create(base, services=["crm"], seed=1)

    async def listing() -> str:
        async with _client(world) as client:
            try:
                await client.list_tools(cursor="p99")
            except MCPError as exc:
                return str(exc)
        return "no error"

    assert "invalid cursor 'p99'" in anyio.run(listing)
