"""The HTTP front against a real uvicorn server: world tokens, admin surface, both MCP surfaces."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hub.http import HubHTTP

ADMIN = {"Authorization": "Bearer admin-secret"}


def _create(base: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{base}/admin/worlds", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _client_call(world: dict[str, Any], tool: str, args: dict[str, Any]) -> Any:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {world['token']}"})
    async with Client(streamable_http_client(world["url"], http_client=http)) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool(tool, args)
        return tools, result.structured_content


def test_mcp_client_drives_direct_and_gateway_over_http(http_hub: tuple[HubHTTP, str]) -> None:
    _, base = http_hub
    direct = _create(base, services=["email", "crm"], seed=1, surface="direct")
    gateway = _create(base, services=["email", "crm"], seed=1, surface="gateway")
    args = {"to": ["pat@example.com"], "subject": "Hi", "body": "x"}
    tools, via_direct = anyio.run(_client_call, direct, "email__send_message", args)
    assert "crm__list_deals" in tools
    tools, via_gateway = anyio.run(
        _client_call, gateway, "call_tool", {"tool_name": "email__send_message", "arguments": args}
    )
    assert tools == ["list_services", "list_tools", "describe_tool", "call_tool"]
    assert via_direct == via_gateway and via_direct["success"] is True
    hashes = [
        httpx.get(f"{base}/admin/worlds/{w['world_id']}/hash", headers=ADMIN).json()["hash"] for w in (direct, gateway)
    ]
    assert hashes[0] == hashes[1]


def test_world_token_cannot_reach_another_world_or_admin(http_hub: tuple[HubHTTP, str]) -> None:
    _, base = http_hub
    mine, other = _create(base, services=["email"]), _create(base, services=["email"])
    mine_auth = {"Authorization": f"Bearer {mine['token']}"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert httpx.post(other["url"], json=ping, headers=mine_auth).status_code == 403
    assert httpx.post(mine["url"], json=ping).status_code == 401
    assert httpx.post(mine["url"], json=ping, headers=ADMIN).status_code == 403
    for method, path in [
        ("GET", "/admin/worlds"),
        ("POST", "/admin/worlds"),
        ("GET", f"/admin/worlds/{mine['world_id']}/snapshot"),
        ("DELETE", f"/admin/worlds/{other['world_id']}"),
    ]:
        response = httpx.request(method, f"{base}{path}", headers=mine_auth, json={} if method == "POST" else None)
        assert response.status_code == 403, (method, path)
    assert httpx.get(f"{base}/admin/worlds/{other['world_id']}", headers=ADMIN).status_code == 200


def test_admin_forks_snapshots_restores_and_closes(http_hub: tuple[HubHTTP, str]) -> None:
    front, base = http_hub
    world = _create(base, services=["email"], seed=2)
    snap = httpx.get(f"{base}/admin/worlds/{world['world_id']}/snapshot", headers=ADMIN).json()
    fork = httpx.post(f"{base}/admin/worlds/{world['world_id']}/fork", headers=ADMIN, json={}).json()
    assert fork["world_id"] != world["world_id"] and fork["token"] != world["token"]
    anyio.run(_client_call, fork, "email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    diff = httpx.get(f"{base}/admin/worlds/{fork['world_id']}/diff", headers=ADMIN).json()
    assert list(diff) == ["email"]
    assert httpx.get(f"{base}/admin/worlds/{world['world_id']}/diff", headers=ADMIN).json() == {}
    restored = httpx.post(f"{base}/admin/worlds/{fork['world_id']}/restore", headers=ADMIN, json=snap).json()
    original = httpx.get(f"{base}/admin/worlds/{world['world_id']}/hash", headers=ADMIN).json()
    assert restored["hash"] == original["hash"]
    assert httpx.delete(f"{base}/admin/worlds/{fork['world_id']}", headers=ADMIN).json()["closed"] is True
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    gone = httpx.post(fork["url"], json=ping, headers={"Authorization": f"Bearer {fork['token']}"})
    assert gone.status_code == 404
    assert fork["world_id"] not in front.hub.worlds


def test_admin_rejects_bad_requests(http_hub: tuple[HubHTTP, str]) -> None:
    _, base = http_hub
    bad = httpx.post(f"{base}/admin/worlds", json={"services": ["nope"]}, headers=ADMIN)
    assert bad.status_code == 400 and "nope" in bad.json()["error"]
    surface = httpx.post(f"{base}/admin/worlds", json={"surface": "sideways"}, headers=ADMIN)
    assert surface.status_code == 400
    assert httpx.get(f"{base}/admin/worlds/zzz/hash", headers=ADMIN).status_code == 404


def test_admin_scores_a_world_against_a_rubric(http_hub: tuple[HubHTTP, str]) -> None:
    _, base = http_hub
    world = _create(base, services=["email"], seed=3)
    rubric = {
        "criteria": [
            {
                "id": "sent",
                "description": "Mail to Pat",
                "kind": "record",
                "service": "email",
                "collection": "messages",
                "match": {"to": "pat@example.com"},
            },
        ]
    }
    url = f"{base}/admin/worlds/{world['world_id']}/score"
    assert httpx.post(url, json={"rubric": rubric}, headers=ADMIN).json()["score"] == 0
    anyio.run(_client_call, world, "email__send_message", {"to": ["pat@example.com"], "subject": "s", "body": "b"})
    scored = httpx.post(url, json={"rubric": rubric, "report": {}}, headers=ADMIN).json()
    assert scored["score"] == 1 and scored["criteria"][0]["passed"] is True
    bad = httpx.post(url, json={"rubric": {"criteria": [{"kind": "python"}]}}, headers=ADMIN)
    assert bad.status_code == 400
    token = {"Authorization": f"Bearer {world['token']}"}
    assert httpx.post(url, json={"rubric": rubric}, headers=token).status_code == 403
