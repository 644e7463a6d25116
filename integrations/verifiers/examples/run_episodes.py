"""Run CompoWorld episodes through verifiers' own classes against an OpenAI-compatible model; print JSON.

    python run_episodes.py --server URL --token T --model-url URL/v1 [--tasks ID ...] [--reward cfrr --group 4]

One line per episode: the task, each trace's rewards, metrics and CompoWorld result (score, episode id, calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

import verifiers.v1 as vf
from compoworld_verifiers import load_environment


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--model-url", required=True, help="OpenAI-compatible endpoint, ending in /v1.")
    parser.add_argument("--model", default="oracle")
    parser.add_argument("--tasks", nargs="*", default=None)
    parser.add_argument("--reward", choices=["rubric", "cfrr"], default="rubric")
    parser.add_argument("--group", type=int, default=1)
    parser.add_argument("--via-toolset", action="store_true", help="Call through the shared gateway toolset.")
    args = parser.parse_args()
    os.environ.setdefault("COMPOWORLD_MODEL_KEY", "unused")
    env = load_environment(
        tasks=args.tasks,
        reward=args.reward,
        group_size=args.group,
        server=args.server,
        token=args.token,
        model=args.model,
        **(
            {
                "agent": {
                    "runtime": {"type": "subprocess"},
                    "harness": {"id": "compoworld-verifiers", "direct_mcp": False},
                }
            }
            if args.via_toolset
            else {}
        ),
    )
    client = vf.EvalClientConfig(base_url=args.model_url, api_key_var="COMPOWORLD_MODEL_KEY")
    ctx = vf.ModelContext(model=args.model, client=client)
    async with env.serving():
        for task in env.taskset:
            started = time.perf_counter()
            episode = await env.run_episode(task, ctx)
            traces = [
                {
                    "rewards": {k: (r.score if r is not None else None) for k, r in t.rewards.items()},
                    "reward": t.reward,
                    "metrics": t.metrics,
                    "result": t.state.result,
                    "errors": [e.message for e in t.errors],
                    "messages": len(t.messages),
                    "tools": {tool.name: tool.parameters for tool in t.tools},
                }
                for t in episode.traces
            ]
            errors = [e.message for e in episode.errors]
            line = {"task_id": task.data.task_id, "ok": episode.ok, "errors": errors, "traces": traces}
            print(json.dumps(line | {"seconds": round(time.perf_counter() - started, 3)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
