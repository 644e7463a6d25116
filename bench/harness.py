"""Harness benchmark: oracle episodes per minute, in process and through the in-memory MCP surface.

Run: ``python bench/harness.py [--tasks 100] [--json]``. Recording is on (every call with its
write diff), as in a real run; episodes are also scored. The target is >= 1,000 oracle episodes
per minute on 2 cores on the in-process path; the MCP-surface rate is printed beside it.

With the ``inspect`` extra installed it also replays the oracle's gateway calls through the Inspect
adapter's tools (``harness.inspect_task.gateway_tools``) and straight into the harness environment, world
by world in turn, and prints the median per-call cost of each (target: the adapter adds <= 2 ms a call),
and beside it the cost of a call through Inspect's own tool executor (``execute_tools``: argument
validation, transcript events), which Inspect adds to any tool.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from harness.agent_spec import make_agent
    from harness.episode import run_episode
    from taskgen.generate import default_hub, generate

    hub = default_hub()
    tasks = generate(args.tasks, seed=0, hub=hub).tasks
    oracle = make_agent("oracle")
    results: dict[str, float] = {}
    for surface in ("direct", "gateway"):
        for path in ("inprocess", "mcp"):
            run_episode(hub, tasks[0], oracle, surface, path)  # warm
            started = time.perf_counter()
            scores = [run_episode(hub, t, oracle, surface, path).score for t in tasks]
            elapsed = time.perf_counter() - started
            assert all(s == 1.0 for s in scores)
            results[f"{path}_{surface}_episodes_per_min"] = round(len(tasks) / elapsed * 60)
    results["median_calls_per_task"] = sorted(len(t.plan) for t in tasks)[len(tasks) // 2]
    results["target_inprocess_episodes_per_min"] = 1000
    if importlib.util.find_spec("inspect_ai") is not None:
        results.update(inspect_overhead(hub, tasks[:20], oracle))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        print(f"{key:40} {value:>8}")


def inspect_overhead(hub: Any, tasks: list[Any], oracle: Any, rounds: int = 5) -> dict[str, float]:
    """Median milliseconds per gateway call: the environment itself, the Inspect adapter's tool, and Inspect's
    tool executor over that tool; each task's oracle calls are replayed in a fresh world of the task's seed."""
    import anyio
    from inspect_ai.model import ChatMessageAssistant, execute_tools
    from inspect_ai.tool import ToolCall

    from harness.env import InProcessEnv
    from harness.episode import run_episode
    from harness.inspect_task import gateway_tools

    scripts = [(t, [(c.name, c.arguments) for c in run_episode(hub, t, oracle, "gateway").tool_calls]) for t in tasks]

    def timed(task: Any, calls: list[tuple[str, Any]], how: str) -> float:
        world = hub.open_world(services=task.mounted, seed=task.seed)
        env = InProcessEnv(world, "gateway")
        tools = gateway_tools(env)
        by_name = dict(zip(["list_services", "list_tools", "describe_tool", "call_tool"], tools, strict=True))

        async def replay() -> float:
            started = time.perf_counter()
            for number, (name, arguments) in enumerate(calls):
                if how == "env":
                    json.dumps(env.call(name, arguments))  # what the adapter hands back is this JSON
                elif how == "adapter":
                    await by_name[name](**arguments)
                else:
                    turn = ChatMessageAssistant(content="", tool_calls=[ToolCall(f"c{number}", name, arguments)])
                    await execute_tools([turn], tools)
            return time.perf_counter() - started

        try:
            return float(anyio.run(replay)) * 1000 / max(len(calls), 1)
        finally:
            world.close()

    samples: dict[str, list[float]] = {"env": [], "adapter": [], "execute_tools": []}
    for _ in range(rounds):
        for task, calls in scripts:
            for how in samples:  # interleaved, so a busy moment on a shared machine hits every path alike
                samples[how].append(timed(task, calls, how))
    env_ms, adapter_ms, executor_ms = (statistics.median(samples[k]) for k in ("env", "adapter", "execute_tools"))
    return {
        "inspect_env_ms_per_call": round(env_ms, 3),
        "inspect_adapter_added_ms_per_call": round(adapter_ms - env_ms, 3),
        "inspect_execute_tools_added_ms_per_call": round(executor_ms - env_ms, 3),
        "target_inspect_adapter_added_ms_per_call": 2.0,
    }


if __name__ == "__main__":
    main()
