"""Simulated writes are remembered: later reads agree, through MCP clients and across snapshots."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from hub.core import Hub
from hub.registry import native_entry
from hub.surfaces import world_server
from servers.registry import get_service
from tests.worldmodel.conftest import SPECS
from worldmodel.catalog import simulated_services

SHIPMENT = {"recipient_name": "Ann Lee", "destination_city": "Berlin", "weight_kg": 2.5}


def _hub() -> Hub:
    return Hub.native([get_service("email")], extra=[native_entry(s) for s in simulated_services(SPECS)])


async def _create_then_read(client: Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    created = (await client.call_tool("couriers__create_shipment", SHIPMENT)).structured_content
    assert created is not None and created["success"] is True
    number = created["data"]["tracking_number"]
    tracked = (await client.call_tool("couriers__track_shipment", {"tracking_number": number})).structured_content
    listed = (await client.call_tool("couriers__list_shipments", {"destination_city": "BERLIN"})).structured_content
    assert tracked is not None and listed is not None
    return created["data"], tracked["data"], listed["data"]


def _agree(created: dict[str, Any], tracked: dict[str, Any], listed: dict[str, Any]) -> None:
    assert tracked["tracking_number"] == created["tracking_number"]
    assert tracked["recipient_name"] == "Ann Lee" and tracked["destination_city"] == "Berlin"
    assert tracked["status"] == created["status"] == "booked"
    assert [s["tracking_number"] for s in listed["shipments"]] == [created["tracking_number"]]
    assert listed["total"] == 1


def test_write_then_read_agrees_through_an_mcp_client() -> None:
    world = _hub().open_world(seed=3)

    async def main() -> None:
        async with Client(world_server(world, "direct")) as client:
            _agree(*await _create_then_read(client))
            missing = await client.call_tool("couriers__track_shipment", {"tracking_number": "TRK-99999"})
            assert missing.structured_content is not None
            assert missing.structured_content["error"]["code"] == 404

    anyio.run(main)


def test_simulated_state_survives_snapshot_restore_and_fork() -> None:
    hub = _hub()
    world = hub.open_world(seed=3)
    created = world.call("couriers__create_shipment", SHIPMENT)["data"]
    number = created["tracking_number"]
    snap = world.snapshot()
    assert number in snap["services"]["couriers"]["collections"]["shipments"]
    world.call("couriers__cancel_shipment", {"tracking_number": number})
    assert world.call("couriers__track_shipment", {"tracking_number": number})["data"]["status"] == "cancelled"
    world.restore(snap)
    assert world.call("couriers__track_shipment", {"tracking_number": number})["data"]["status"] == "booked"
    reopened = hub.open_world(snapshot=snap)
    assert reopened.call("couriers__track_shipment", {"tracking_number": number})["data"]["recipient_name"] == "Ann Lee"
    branch = world.fork()
    branch.call("couriers__cancel_shipment", {"tracking_number": number})
    assert world.call("couriers__track_shipment", {"tracking_number": number})["data"]["status"] == "booked"
    assert list(branch.diff(before=snap)) == ["couriers"]


def test_pure_tools_answer_consistently_per_world_seed() -> None:
    hub = _hub()
    args = {"destination_city": "Paris", "weight_kg": 4}
    one, two, other = hub.open_world(seed=1), hub.open_world(seed=1), hub.open_world(seed=2)
    first = one.call("couriers__get_rates", args)
    assert first == one.call("couriers__get_rates", args) == two.call("couriers__get_rates", args)
    assert first["data"]["destination_city"] == "Paris"
    assert other.call("couriers__get_rates", args) != first


def test_simulated_services_pass_the_conformance_checker() -> None:
    from servers.conformance import check_service

    for service in simulated_services(SPECS):
        report = check_service(service)
        assert report.ok, str(report)


@pytest.mark.slow
def test_worldmodel_serve_over_stdio_agrees() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "training.cli", "worldmodel", "serve", "--specs", str(SPECS), "--seed", "3"],
    )

    async def main() -> None:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "couriers__create_shipment" in names
            _agree(*await _create_then_read(client))

    anyio.run(main)


@pytest.mark.slow
def test_worldmodel_serve_over_streamable_http_agrees(cli_server: Any) -> None:
    port = cli_server("worldmodel", "serve", "--specs", str(SPECS), "--transport", "http")

    async def main() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            _agree(*await _create_then_read(client))

    anyio.run(main)
