"""Direct and gateway surfaces through real MCP clients (in memory and over stdio)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from hub.core import Hub
from hub.surfaces import world_server

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("email__list_messages", {"folder": "inbox", "limit": 2}),
    ("email__send_message", {"to": ["pat@example.com"], "subject": "Hi", "body": "Same on both surfaces."}),
    ("email__get_message", {"message_id": "msg_9999"}),
    ("email__send_message", {"to": "not-a-list", "subject": "x", "body": "y"}),
    ("crm__nonexistent", {}),
]


async def _direct(client: Client) -> list[Any]:
    return [(await client.call_tool(tool, args)).structured_content for tool, args in CALLS]


async def _gateway(client: Client) -> list[Any]:
    out = []
    for tool, args in CALLS:
        result = await client.call_tool("call_tool", {"tool_name": tool, "arguments": args})
        out.append(result.structured_content)
    return out


def test_gateway_and_direct_give_identical_results(hub: Hub) -> None:
    async def main() -> None:
        direct_world = hub.open_world(services=["email", "crm"], seed=1)
        gateway_world = hub.open_world(services=["email", "crm"], seed=1)
        async with Client(world_server(direct_world, "direct")) as client:
            direct = await _direct(client)
        async with Client(world_server(gateway_world, "gateway")) as client:
            gateway = await _gateway(client)
        assert direct == gateway
        assert direct_world.hash() == gateway_world.hash()
        assert direct[0]["success"] and direct[2]["error"]["code"] == 404 and direct[3]["error"]["code"] == 400

    anyio.run(main)


def test_gateway_has_exactly_four_meta_tools_and_discovers(hub: Hub) -> None:
    async def main() -> None:
        async with Client(world_server(hub.open_world(services=["email", "crm"], seed=0), "gateway")) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["list_services", "list_tools", "describe_tool", "call_tool"]
            services = (await client.call_tool("list_services", {})).structured_content
            assert services is not None
            assert {s["name"] for s in services["data"]["services"]} == {"email", "crm"}
            tools = (await client.call_tool("list_tools", {"service": "email"})).structured_content
            assert tools is not None
            first = tools["data"]["tools"][0]
            assert set(first) == {"name", "description"} and first["name"].startswith("email__")
            described = (await client.call_tool("describe_tool", {"tool": "email__send_message"})).structured_content
            assert described is not None
            assert described["data"]["input_schema"]["required"] == ["to", "subject", "body"]
            missing = (await client.call_tool("list_tools", {"service": "calendar"})).structured_content
            assert missing is not None and missing["error"]["code"] == 404
            assert "list_services" in missing["error"]["message"]

    anyio.run(main)


def test_direct_surface_lists_every_mounted_tool(hub: Hub) -> None:
    async def main() -> None:
        world = hub.open_world(services=["email"], seed=0)
        async with Client(world_server(world, "direct")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {f"email__{n}" for n in hub.registry.services["email"].native.tools}  # type: ignore[union-attr]

    anyio.run(main)


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["direct", "gateway"])
def test_stdio_hub_serves_both_surfaces(surface: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "training.cli", "hub", "serve", "--services", "email,crm", "--surface", surface, "--seed", "1"],
    )

    async def main() -> None:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            if surface == "gateway":
                assert names == ["list_services", "list_tools", "describe_tool", "call_tool"]
                results = await _gateway(client)
            else:
                assert "email__send_message" in names and "crm__list_deals" in names
                results = await _direct(client)
            assert results[1]["success"] is True
            assert results[2]["error"]["code"] == 404

    anyio.run(main)
