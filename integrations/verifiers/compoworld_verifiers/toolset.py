"""The gateway's four meta-tools as a verifiers ``Toolset``: one MCP server for an eval's rollouts, whose every
call goes to the calling rollout's world on the CompoWorld rollout server (verifiers hands each call its
rollout's state, which holds the world and its token).

Verifiers runs it as ``python -m compoworld_verifiers.toolset``. The tools are advertised bare (no server
prefix), under the names and descriptions the published CompoWorld trajectories use. Every answer is the
world's envelope, bad arguments included: the server checks them, as it does for any agent.
"""

from __future__ import annotations

from typing import Any

import httpx
import verifiers.v1 as vf

from compoworld_verifiers.client import TIMEOUT, default_server


class RolloutState(vf.State):
    """The rollout's world on the server (set by the task's setup) and, once finished, its result."""

    rollout_id: str = ""
    token: str = ""
    mcp_url: str = ""
    """The world's own MCP endpoint on the server (the gateway; the token is its bearer)."""
    result: dict[str, Any] = {}


class GatewayConfig(vf.ToolsetConfig):
    server: str = ""


class CompoWorldGateway(vf.Toolset[GatewayConfig, RolloutState]):
    TOOL_PREFIX = None  # the agent sees list_services … call_tool, as in every CompoWorld trajectory

    def __init__(self, config: GatewayConfig) -> None:
        super().__init__(config)
        self._http: httpx.AsyncClient | None = None

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        if not state.rollout_id:
            return {"success": False, "error": {"code": 409, "message": "this rollout has no world (setup failed)"}}
        if self._http is None:  # one connection pool for every rollout's calls
            self._http = httpx.AsyncClient(timeout=TIMEOUT)
        server = self.config.server or default_server()
        response = await self._http.post(
            f"{server}/rollouts/{state.rollout_id}/call",
            json={"name": name, "arguments": arguments},
            headers={"Authorization": f"Bearer {state.token}"},
        )
        body = response.json()
        if response.status_code >= 400 or not isinstance(body, dict):
            message = body.get("error") if isinstance(body, dict) else response.text
            return {"success": False, "error": {"code": response.status_code, "message": str(message)}}
        return body

    @vf.tool
    async def list_services(self) -> dict[str, Any]:
        """List the services available in this world with their categories and tool counts."""
        return await self._call("list_services", {})

    @vf.tool
    async def list_tools(self, service: str) -> dict[str, Any]:
        """List one service's tools (qualified names and one-line descriptions)."""
        return await self._call("list_tools", {"service": service})

    @vf.tool
    async def describe_tool(self, tool: str) -> dict[str, Any]:
        """Describe one tool: its full input schema, output schema and whether it writes."""
        return await self._call("describe_tool", {"tool": tool})

    @vf.tool
    async def call_tool(self, tool_name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool by its qualified name with a JSON object of arguments."""
        return await self._call("call_tool", {"tool_name": tool_name, "arguments": arguments or {}})


if __name__ == "__main__":
    CompoWorldGateway.run()
