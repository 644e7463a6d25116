"""Run inside the verl environment (``tests/training/verl_venv.py``) by ``test_verl_tools.py``.

Loads the example tool config with verl's own loader, runs one full episode of a generated task through the
loaded tools (create on every tool, a scripted oracle policy following the task's plan, calc_reward, release),
runs the same task through the harness (``run_episode`` with the oracle, gateway, in process), checks bad input,
times the added cost per call, and prints what it saw as one JSON object for the test to check.

    python tests/training/verl_driver.py <tool-config.yaml> <out.json>

The config's store path is relative: it lands in the current directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import statistics
import sys
import time
from typing import Any

from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall
from verl.tools.base_tool import BaseTool
from verl.tools.tool_registry import initialize_tools_from_config

from harness.agents import OracleAgent
from harness.episode import run_episode
from taskgen.generate import generate
from taskgen.task import resolve
from training.grpo import CompoWorldEnv
from training.verl_tools import EPISODES, CallToolTool


async def oracle_episode(tools: dict[str, BaseTool], task: Any, instance: str) -> dict[str, Any]:
    """The oracle's calls (as :class:`harness.agents.OracleAgent` makes them on the gateway) through verl tools."""
    for tool in tools.values():
        await tool.create(instance, create_kwargs={"task": task.model_dump_json()})
    calls: list[tuple[str, dict[str, Any]]] = []

    async def call(meta: str, parameters: dict[str, Any]) -> dict[str, Any]:
        response, reward, _ = await tools[meta].execute(instance, parameters)
        assert reward == 0.0, "a step reward leaked"
        calls.append((meta, parameters))
        return dict(json.loads(response.text))

    await call("list_services", {})
    envelopes: list[Any] = []
    listed: set[str] = set()
    described: set[str] = set()
    for step in task.plan:
        service = step.tool.split("__", 1)[0]
        if service not in listed:
            await call("list_tools", {"service": service})
            listed.add(service)
        if step.tool not in described:
            await call("describe_tool", {"tool": step.tool})
            described.add(step.tool)
        envelopes.append(
            await call("call_tool", {"tool_name": step.tool, "arguments": resolve(step.arguments, envelopes)})
        )
    final = f"All steps are done.\n{json.dumps(task.expected_report)}"
    messages = [{"role": "user", "content": task.instruction}, {"role": "assistant", "content": final}]
    rewards = [await tool.calc_reward(instance, final_text=final, messages=messages) for tool in tools.values()]
    after = json.loads((await tools["list_services"].execute(instance, {}))[0].text)
    episode = EPISODES.open[instance]
    world = episode.env.world
    assert world is not None
    final_hash = world.hash()
    for tool in tools.values():
        await tool.release(instance)
    return {
        "rewards": rewards,
        "calls": calls,
        "episode_id": episode.episode_id,
        "final_hash": final_hash,
        "after_scoring": after,
        "open_after_release": sorted(EPISODES.open),
        "world_closed": getattr(world, "closed", None),
    }


async def stock_loop_episode(tools: dict[str, BaseTool], task: Any) -> dict[str, Any]:
    """The oracle's calls through verl's own ``ToolAgentLoop._call_tool`` (create / execute / release around each
    call, the trajectory's ``AgentData`` passed along), as verl's stock ``tool_agent`` loop makes them."""
    loop = object.__new__(ToolAgentLoop)  # only the attributes _call_tool reads: no model server, no tokenizer
    loop.tools = tools
    loop.max_tool_response_length = 1_000_000
    loop.tool_response_truncate_side = "middle"
    create = {"create_kwargs": {"task": task.model_dump_json()}}
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.instruction}]
    # Held in a dict so that dropping it below drops the only reference, as verl's loop does at the trajectory's end.
    trajectory = {"data": AgentData(messages, None, None, None, None, {}, "stock-0", {name: create for name in tools})}
    before = set(EPISODES.open)

    async def call(meta: str, parameters: dict[str, Any]) -> dict[str, Any]:
        function = FunctionCall(name=meta, arguments=json.dumps(parameters))
        data = trajectory["data"]
        response, reward, _ = await loop._call_tool(function, data.tools_kwargs, data)
        assert reward == 0.0, "a step reward leaked"
        messages.append({"role": "tool", "content": response.text})
        return dict(json.loads(response.text or "{}"))

    await call("list_services", {})
    envelopes: list[Any] = []
    for step in task.plan:
        await call("describe_tool", {"tool": step.tool})
        envelopes.append(
            await call("call_tool", {"tool_name": step.tool, "arguments": resolve(step.arguments, envelopes)})
        )
    messages.append({"role": "assistant", "content": f"Done.\n{json.dumps(task.expected_report)}"})
    key = trajectory["data"].extra_fields.get("compoworld_instance")
    open_during = sorted(set(EPISODES.open) - before)
    pending_during = len(EPISODES.pending)
    trajectory.clear()  # the trajectory ends: verl lets go of its AgentData
    gc.collect()
    return {
        "key": key,
        "open_during": open_during,
        "pending_during": pending_during,
        "open_after": sorted(EPISODES.open),
    }


async def bad_input(tools: dict[str, BaseTool], task: Any) -> dict[str, Any]:
    """What the tools answer to bad input, and whether anything was left open."""
    seen: dict[str, Any] = {}
    cases: dict[str, dict[str, Any]] = {
        "no_task": {"create_kwargs": {}},
        "bad_task": {"create_kwargs": {"task": "{}"}},
        "unknown_task_id": {"create_kwargs": {"task_id": "nope"}},
    }
    for name, kwargs in cases.items():
        try:
            await tools["call_tool"].create("bad", **kwargs)
            seen[name] = None
        except ValueError as exc:
            seen[name] = str(exc)
    seen["open_after_bad_create"] = sorted(EPISODES.open)
    try:
        CallToolTool({"type": "native", "reward": "bogus"}, None)
        seen["bad_reward"] = None
    except ValueError as exc:
        seen["bad_reward"] = str(exc)
    return seen


async def config_variants(tools: dict[str, BaseTool], task: Any) -> dict[str, Any]:
    """A tool built without a schema, and a rollout named by task id in the config's tasks file."""
    with open("tasks.jsonl", "w", encoding="utf-8") as handle:
        handle.write(task.model_dump_json() + "\n")
    with contextlib.redirect_stdout(io.StringIO()):  # verl's BaseTool prints each tool's schema
        bare = CallToolTool({"type": "native", "tasks": "tasks.jsonl", "record": False}, None)
    seen: dict[str, Any] = {"default_schema_same": bare.tool_schema == tools["call_tool"].tool_schema}
    await bare.create("by-id", create_kwargs={"task_id": task.id})
    seen["by_id_task"] = EPISODES.open["by-id"].env.task.id  # type: ignore[union-attr]
    await bare.release("by-id")
    return seen


async def bad_calls(tools: dict[str, BaseTool], task: Any) -> dict[str, Any]:
    """Calls on an unknown instance, a second task on an open instance, bad arguments."""
    seen: dict[str, Any] = {}
    response, _, _ = await tools["call_tool"].execute("never-created", {"tool_name": "x__y", "arguments": {}})
    seen["unknown_instance"] = json.loads(response.text)
    await tools["call_tool"].create("args", create_kwargs={"task": task.model_dump_json()})
    other = generate(1, seed=20, hub=CompoWorldEnv.shared_hub()).tasks[0]
    try:
        await tools["list_tools"].create("args", create_kwargs={"task": other.model_dump_json()})
        seen["other_task_joins"] = None
    except ValueError as exc:
        seen["other_task_joins"] = str(exc)
    response, _, _ = await tools["call_tool"].execute("args", {"tool_name": task.plan[0].tool, "arguments": "x"})
    seen["bad_arguments"] = json.loads(response.text)
    await tools["call_tool"].release("args")
    return seen


async def overhead(tools: dict[str, BaseTool], task: Any, rounds: int = 400) -> dict[str, float]:
    """Median ms per call: the verl tool's ``execute`` against the harness's in-process call on the same world."""
    await tools["describe_tool"].create("timing", create_kwargs={"task": task.model_dump_json()})
    env = EPISODES.open["timing"].env.env
    assert env is not None
    parameters = {"tool": task.plan[0].tool}
    verl_ms, harness_ms = [], []
    for _ in range(rounds):  # interleaved, so both see the same machine load
        started = time.perf_counter()
        await tools["describe_tool"].execute("timing", parameters)
        verl_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        json.dumps(env.call("describe_tool", parameters))  # the harness path, its envelope serialised for the model
        harness_ms.append((time.perf_counter() - started) * 1000)
    await tools["describe_tool"].release("timing")
    # verl's stock loop: create (a handle), execute in the trajectory's world, release, around every call.
    tool, create = tools["describe_tool"], {"task": task.model_dump_json()}
    data = AgentData([], None, None, None, None, {}, "timing", {})
    stock_ms = []
    for _ in range(rounds):
        started = time.perf_counter()
        handle, _ = await tool.create(create_kwargs=create)
        await tool.execute(handle, parameters, agent_data=data)
        await tool.release(handle)
        stock_ms.append((time.perf_counter() - started) * 1000)
    verl, harness, stock = statistics.median(verl_ms), statistics.median(harness_ms), statistics.median(stock_ms)
    return {
        "verl_ms": round(verl, 4),
        "harness_ms": round(harness, 4),
        "added_ms": round(verl - harness, 4),
        "stock_loop_ms": round(stock, 4),
        "stock_loop_added_ms": round(stock - harness, 4),
    }


async def main(config: str) -> dict[str, Any]:
    loaded = initialize_tools_from_config(config)
    tools = {tool.name: tool for tool in loaded}
    hub = CompoWorldEnv.shared_hub()
    task = generate(1, seed=19, hub=hub).tasks[0]
    harness = run_episode(hub, task, OracleAgent(), surface="gateway")
    return {
        "classes": [type(t).__name__ for t in loaded],
        "schemas": {t.name: t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in loaded},
        "task": task.model_dump(mode="json"),
        "harness": {
            "score": harness.score,
            "net_score": harness.net_score,
            "success": harness.success,
            "criteria": [[c.id, c.passed] for c in harness.criteria],
            "final_hash": harness.final_hash,
            "calls": [[c.name, c.arguments] for c in harness.tool_calls],
        },
        "verl": await oracle_episode(tools, task, "rollout-0"),
        "stock_loop": await stock_loop_episode(tools, task),
        "bad": {**await bad_input(tools, task), **await bad_calls(tools, task)},
        "variants": await config_variants(tools, task),
        "overhead": await overhead(tools, task),
    }


if __name__ == "__main__":
    # To a file: verl's BaseTool prints every tool's schema on stdout.
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(asyncio.run(main(sys.argv[1])), out)
