"""What a tool call costs through verifiers, over what the same call costs in process.

    python bench_calls.py --server URL --token T --store runs.db --task ID [--calls 300]

Three rollouts of the task, each making ``calls`` ``list_services`` calls:

- through MCP with verifiers' own client (``MCPConnection``, what its chat program uses for every tool call) to
  the world's MCP endpoint, the path :class:`~compoworld_verifiers.CompoWorldHarness` gives its agent;
- through the rollout server's ``/call`` from a kept-alive HTTP client (the hop the gateway toolset makes);
- in process: what the rollout server's harness environment recorded for those calls (``latency_ms``);
- and, for comparison, through MCP on a plain hub world (the hub's own agent surface, no rollout around it);
- through the shared gateway toolset (other harnesses' path), from two whole episodes' harness times.

Then one whole episode through verifiers' classes whose scripted model makes the calls in one turn, as a check
that they are recorded. Prints one JSON object (milliseconds, medians).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import verifiers.v1 as vf
from compoworld_verifiers import load_environment
from verifiers.v1.harnesses.utils.mcp import MCPConnection


def burst_model(calls: int) -> tuple[ThreadingHTTPServer, str]:
    """An OpenAI-protocol server: one turn of ``calls`` list_services calls, then a final answer."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answered = any(m.get("role") == "tool" for m in body.get("messages", []))
            delta: dict[str, Any] = {"role": "assistant", "content": "Done. {}" if answered else None}
            if not answered:
                delta["tool_calls"] = [
                    {
                        "index": i,
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "list_services", "arguments": "{}"},
                    }
                    for i in range(calls)
                ]
            base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
            finish = "stop" if answered else "tool_calls"
            chunks = [
                base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            ]
            data = ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


async def episode(args: argparse.Namespace, calls: int, via_toolset: bool = False) -> dict[str, Any]:
    server, url = burst_model(calls)
    harness = {"id": "compoworld-verifiers", "direct_mcp": not via_toolset}
    agent = {"runtime": {"type": "subprocess"}, "harness": harness}
    try:
        env = load_environment(
            tasks=[args.task], server=args.server, token=args.token, model=f"bench-{calls}", agent=agent
        )
        ctx = vf.ModelContext(
            model="bench", client=vf.EvalClientConfig(base_url=url, api_key_var="COMPOWORLD_MODEL_KEY")
        )
        async with env.serving():
            task = next(iter(env.taskset))
            trace = (await env.run_episode(task, ctx)).traces[0]
    finally:
        server.shutdown()
    timing = trace.timing.agent
    harness = timing.harness.duration if timing.harness else 0.0
    model = timing.model.duration if timing.model else 0.0
    return {"harness_s": harness, "model_s": model, "result": trace.state.result}


def open_rollout(args: argparse.Namespace, model: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {args.token}"}
    opened = httpx.post(f"{args.server}/rollouts", json={"task_id": args.task, "model": model}, headers=headers)
    rollout: dict[str, Any] = opened.raise_for_status().json()
    return rollout


def finish(args: argparse.Namespace, rollout: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {args.token}"}
    httpx.post(f"{args.server}/rollouts/{rollout['rollout_id']}/finish", json={}, headers=headers).raise_for_status()


def direct_calls(args: argparse.Namespace, calls: int) -> list[float]:
    rollout = open_rollout(args, "bench-direct")
    headers = {"Authorization": f"Bearer {rollout['token']}"}
    path = f"{args.server}/rollouts/{rollout['rollout_id']}/call"
    times = []
    with httpx.Client(timeout=30) as http:
        for _ in range(calls):
            started = time.perf_counter()
            http.post(path, json={"name": "list_services", "arguments": {}}, headers=headers).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    finish(args, rollout)
    return times


async def timed_mcp(url: str, token: str, calls: int) -> list[float]:
    connection = MCPConnection({"url": url, "headers": {"Authorization": f"Bearer {token}"}})
    times = []
    try:
        await connection.run(lambda client: client.list_tools())
        for _ in range(calls):
            started = time.perf_counter()
            await connection.run(lambda client: client.call_tool("list_services", {}))
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await connection.aclose()
    return times


async def mcp_calls(args: argparse.Namespace, calls: int) -> list[float]:
    rollout = open_rollout(args, "bench-mcp")
    times = await timed_mcp(rollout["mcp_url"], rollout["token"], calls)
    finish(args, rollout)
    return times


async def hub_mcp_calls(args: argparse.Namespace, calls: int) -> list[float]:
    """The same calls on a plain hub world (the hub's admin surface, no rollout): the hub's own MCP path."""
    headers = {"Authorization": f"Bearer {args.token}"}
    world = httpx.post(f"{args.server}/admin/worlds", json={"services": ["crm"], "surface": "gateway"}, headers=headers)
    opened = world.raise_for_status().json()
    try:
        return await timed_mcp(opened["url"], opened["token"], calls)
    finally:
        httpx.delete(f"{args.server}/admin/worlds/{opened['world_id']}", headers=headers)


def inprocess_ms(store: str, agent: str) -> float:
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "select s.latency_ms from steps s join episodes e on e.id = s.episode_id where e.agent = ?", [agent]
        ).fetchall()
    return statistics.median(r[0] for r in rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--server", "--token", "--store", "--task"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    os.environ.setdefault("COMPOWORLD_MODEL_KEY", "unused")
    mcp = await mcp_calls(args, args.calls)
    hub_mcp = await hub_mcp_calls(args, args.calls)
    direct = direct_calls(args, args.calls)
    inprocess = inprocess_ms(args.store, "verifiers:bench-mcp")
    whole = await episode(args, args.calls)
    # The toolset path from whole episodes: 1 call, then 1 + calls in the same one turn (noisier: the program's
    # start-up varies by tenths of a second).
    one, many = await episode(args, 1, via_toolset=True), await episode(args, 1 + args.calls, via_toolset=True)
    toolset = ((many["harness_s"] - many["model_s"]) - (one["harness_s"] - one["model_s"])) / args.calls * 1000
    print(
        json.dumps(
            {
                "calls": args.calls,
                "inprocess_ms": round(inprocess, 3),
                "verifiers_mcp_ms": round(statistics.median(mcp), 3),
                "verifiers_mcp_added_ms": round(statistics.median(mcp) - inprocess, 3),
                "hub_mcp_ms": round(statistics.median(hub_mcp), 3),
                "server_call_http_ms": round(statistics.median(direct), 3),
                "server_call_added_ms": round(statistics.median(direct) - inprocess, 3),
                "toolset_ms": round(toolset, 3),
                "episode_recorded_calls": whole["result"].get("calls"),
                "episode_harness_s": round(whole["harness_s"], 3),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
