"""verl adapter benchmark: what the verl tools add per call over the in-process harness path.

Run in verl's environment (README, "Train with verl"): ``.venvs/verl/bin/python bench/verl_tools.py
[--tasks 50] [--json]``. Each task's oracle calls (as the harness's oracle makes them on the gateway) run
through the four verl tools (create, ``execute`` per call, ``calc_reward``, ``release``; ``record: false``) and,
call by call, through the harness's in-process environment on a second world of the task. Reported: the median
time per call on each path and the median of the per-call differences (medians: a shared machine's stalls hit
single calls). The target is <= 2 ms added per tool call.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


async def _timed_verl(tool: Any, instance: str, parameters: dict[str, Any]) -> tuple[str, float]:
    started = time.perf_counter()
    text = (await tool.execute(instance, parameters))[0].text
    return text, time.perf_counter() - started


def _timed_harness(env: Any, meta: str, parameters: dict[str, Any]) -> float:
    started = time.perf_counter()
    json.dumps(env.call(meta, parameters))  # serialised for the model, as the verl tool's text is
    return time.perf_counter() - started


async def episode(tools: dict[str, Any], task: Any, instance: str, hub: Any) -> tuple[list[float], list[float]]:
    """The harness oracle's gateway calls, each made through a verl tool and through the harness's in-process
    environment on a second world of the task (both worlds move in step); the ms of each call on each path."""
    from harness.env import InProcessEnv
    from taskgen.task import resolve

    for tool in tools.values():
        await tool.create(instance, create_kwargs={"task": task})
    world = hub.open_world(services=task.mounted, seed=task.seed)
    env = InProcessEnv(world, "gateway")
    verl_ms: list[float] = []
    harness_ms: list[float] = []

    async def call(meta: str, parameters: dict[str, Any]) -> Any:
        # Whichever path goes first pays the hub's first-use costs (a listing built, a schema rendered): alternate.
        if len(verl_ms) % 2:
            text, v = await _timed_verl(tools[meta], instance, parameters)
            h = _timed_harness(env, meta, parameters)
        else:
            h = _timed_harness(env, meta, parameters)
            text, v = await _timed_verl(tools[meta], instance, parameters)
        verl_ms.append(v * 1000)
        harness_ms.append(h * 1000)
        return json.loads(text)

    await call("list_services", {})
    envelopes: list[Any] = []
    listed: set[str] = set()
    described: set[str] = set()
    for step in task.plan:
        service = step.tool.split("__", 1)[0]
        if service not in listed:
            listed.add(service)
            await call("list_tools", {"service": service})
        if step.tool not in described:
            described.add(step.tool)
            await call("describe_tool", {"tool": step.tool})
        arguments = resolve(step.arguments, envelopes)
        envelopes.append(await call("call_tool", {"tool_name": step.tool, "arguments": arguments}))
    reward = await tools["call_tool"].calc_reward(instance, report=dict(task.expected_report))
    assert reward == 1.0, reward
    for tool in tools.values():
        await tool.release(instance)
    world.close()
    return verl_ms, harness_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from taskgen.generate import generate
    from training.grpo import CompoWorldEnv
    from training.verl_tools import CallToolTool, DescribeToolTool, ListServicesTool, ListToolsTool

    config = {"type": "native", "record": False}
    with contextlib.redirect_stdout(io.StringIO()):  # verl's BaseTool prints each tool's schema
        tools = {t.meta: t(config) for t in (ListServicesTool, ListToolsTool, DescribeToolTool, CallToolTool)}
    hub = CompoWorldEnv.shared_hub()
    tasks = generate(args.tasks, seed=0, hub=hub).tasks
    verl_ms: list[float] = []
    harness_ms: list[float] = []
    for index, task in enumerate(tasks):
        v, h = asyncio.run(episode(tools, task, f"bench-{index}", hub))
        verl_ms += v
        harness_ms += h
    results = {
        "tasks": len(tasks),
        "calls": len(verl_ms),
        "harness_median_ms_per_call": round(statistics.median(harness_ms), 4),
        "verl_median_ms_per_call": round(statistics.median(verl_ms), 4),
        "added_median_ms_per_call": round(
            statistics.median(v - h for v, h in zip(verl_ms, harness_ms, strict=True)), 4
        ),
        "target_added_ms_per_call": 2.0,
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        print(f"{key:32} {value:>10}")


if __name__ == "__main__":
    main()
