"""What a tool call costs through verifiers, over what the same call costs in process.

    python bench_calls.py --server URL --token T --store runs.db --task ID [--calls 64]

Runs two episodes through verifiers' own classes (its interception server, chat program and MCP toolset
machinery) with a scripted model that makes, in one turn, 1 and then ``1 + calls`` ``list_services`` calls (the
chat program makes a turn's calls one after another). The difference of the two runs' harness time, less their
model time, over ``calls`` is one call's cost on the verifiers path (the chat program's MCP client → our gateway
toolset → its rollout-state pull → the rollout server's ``/call``). The same calls' in-process cost is what the
rollout server recorded for them (the harness's ``latency_ms`` in the run store). Also timed: ``/call`` alone,
from a kept-alive HTTP client. Prints one JSON object (milliseconds).
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


async def episode(args: argparse.Namespace, calls: int) -> dict[str, Any]:
    server, url = burst_model(calls)
    try:
        env = load_environment(tasks=[args.task], server=args.server, token=args.token, model=f"bench-{calls}")
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


def direct_calls(args: argparse.Namespace, calls: int) -> list[float]:
    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(timeout=30) as http:
        opened = http.post(
            f"{args.server}/rollouts", json={"task_id": args.task, "model": "bench-direct"}, headers=headers
        )
        rollout = opened.json()
        call_headers = {"Authorization": f"Bearer {rollout['token']}"}
        path = f"{args.server}/rollouts/{rollout['rollout_id']}/call"
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            http.post(path, json={"name": "list_services", "arguments": {}}, headers=call_headers).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
        http.delete(f"{args.server}/rollouts/{rollout['rollout_id']}", headers=headers)
    return times


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
    parser.add_argument("--calls", type=int, default=64)
    args = parser.parse_args()
    os.environ.setdefault("COMPOWORLD_MODEL_KEY", "unused")
    one = await episode(args, 1)
    many = await episode(args, 1 + args.calls)
    per_call = ((many["harness_s"] - many["model_s"]) - (one["harness_s"] - one["model_s"])) / args.calls * 1000
    direct = direct_calls(args, args.calls)
    inprocess = inprocess_ms(args.store, f"verifiers:bench-{1 + args.calls}")
    print(
        json.dumps(
            {
                "calls": args.calls,
                "inprocess_ms": round(inprocess, 3),
                "verifiers_path_ms": round(per_call, 3),
                "verifiers_added_ms": round(per_call - inprocess, 3),
                "server_call_http_ms": round(statistics.median(direct), 3),
                "server_call_added_ms": round(statistics.median(direct) - inprocess, 3),
                "recorded_calls": many["result"].get("calls"),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
