"""The OpenEnv server, driven over real HTTP/WebSocket by OpenEnv's own clients (``openenv-core``)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

pytest.importorskip("openenv", reason="needs the openenv extra")

from openenv.core import GenericEnvClient
from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.mcp_client import MCPToolClient

from harness.agents import OracleAgent
from harness.env import InProcessEnv
from harness.episode import run_episode
from harness.store import RunStore
from hub.core import Hub
from taskgen.generate import generate
from taskgen.task import Task, resolve, write_jsonl
from tests.conftest import free_port, full_hub
from training.openenv_server import SUBMIT, CompoWorldEnvironment, Episodes, create_app


@dataclass
class Served:
    url: str
    hub: Hub
    tasks: list[Task]
    store: Path
    episodes: Episodes


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    hub = full_hub()
    tasks = generate(3, seed=13, hub=hub).tasks
    store = tmp_path_factory.mktemp("openenv") / "runs.db"
    episodes = Episodes(hub, tasks, store, run="oe", model="scripted")
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(episodes, max_concurrent_envs=256), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start")
        time.sleep(0.05)
    yield Served(f"http://127.0.0.1:{port}", hub, tasks, store, episodes)
    server.should_exit = True
    thread.join(timeout=30)


def _call(name: str, arguments: dict[str, Any]) -> CallToolAction:
    return CallToolAction(tool_name=name, arguments=arguments)


def _oracle_calls(task: Task, envelopes: list[dict[str, Any]], step: int) -> list[tuple[str, dict[str, Any]]]:
    """The harness oracle's gateway calls for plan step ``step`` (discovery first, as :class:`OracleAgent`)."""
    calls: list[tuple[str, dict[str, Any]]] = [("list_services", {})] if step == 0 else []
    tool = task.plan[step].tool
    seen = [s.tool for s in task.plan[:step]]
    if tool.split("__", 1)[0] not in {t.split("__", 1)[0] for t in seen}:
        calls.append(("list_tools", {"service": tool.split("__", 1)[0]}))
    if tool not in seen:
        calls.append(("describe_tool", {"tool": tool}))
    arguments = resolve(task.plan[step].arguments, envelopes)
    calls.append(("call_tool", {"tool_name": tool, "arguments": arguments}))
    return calls


def test_a_scripted_oracle_episode_through_openenvs_client_is_stored_and_scored_as_the_harness_scores_it(
    served: Served,
) -> None:
    task = served.tasks[0]

    async def episode() -> tuple[list[Any], Any]:
        rewards: list[Any] = []
        async with MCPToolClient(base_url=served.url) as env:
            started = await env.reset(task_id=task.id)
            rewards.append(started.reward)
            envelopes: list[Any] = []
            for index in range(len(task.plan)):
                for name, arguments in _oracle_calls(task, envelopes, index):
                    result = await env.step(_call(name, arguments))
                    assert not result.done
                    rewards.append(result.reward)
                envelopes.append(result.observation.result)
            final = await env.step(_call(SUBMIT, {"report": task.expected_report, "summary": "All steps are done."}))
        return rewards, final

    rewards, final = asyncio.run(episode())
    assert rewards and all(r is None for r in rewards)  # nothing about the reward before the end
    harness = run_episode(served.hub, task, OracleAgent(), surface="gateway")
    assert final.done and final.reward == harness.net_score == 1.0
    stored_as = final.observation.result["data"]["episode"]
    row = next(r for r in RunStore(served.store).episodes("oe") if r["id"] == stored_as)
    assert (row["task_id"], row["agent"], row["finish_reason"]) == (task.id, "openenv:scripted", "completed")
    assert (row["score"], row["net_score"], row["final_hash"]) == (harness.score, harness.net_score, harness.final_hash)
    assert row["n_calls"] == len(harness.tool_calls)
    stored = json.loads(row["trajectory"])
    assert [c["passed"] for c in stored["criteria"]] == [c.passed for c in harness.criteria]
    assert [c["name"] for c in stored["tool_calls"]] == [c.name for c in harness.tool_calls]


def test_reset_observes_the_task_but_neither_it_nor_state_shows_a_score_before_the_end(served: Served) -> None:
    task = served.tasks[1]

    async def episode() -> tuple[Any, ...]:
        async with GenericEnvClient(base_url=served.url) as env:
            started = await env.reset(index=1)
            listed = await env.step({"type": "call_tool", "tool_name": "list_services", "arguments": {}})
            during = await env.state()
            ended = await env.step({"type": "call_tool", "tool_name": SUBMIT, "arguments": {"report": {}}})
            after = await env.state()
        return started, listed, during, ended, after

    started, listed, during, ended, after = asyncio.run(episode())
    seen = started.observation
    assert (seen["task_id"], seen["instruction"]) == (task.id, task.instruction)
    assert "Today's date is" in seen["system_prompt"]
    assert [t["name"] for t in seen["tools"]] == ["list_services", "list_tools", "describe_tool", "call_tool", SUBMIT]
    text = json.dumps(seen) + json.dumps(listed.observation) + json.dumps(during)
    assert not {"rubric", "expected_report", "plan", "criteria"} & set(json.loads(json.dumps(seen)))
    assert all(str(v) not in text for v in task.expected_report.values() if len(str(v)) > 3)
    assert started.reward is None and listed.reward is None
    assert (during["score"], during["net_score"], during["success"], during["done"]) == (None, None, None, False)
    assert during["step_count"] == 1 and during["observation"]["tool_name"] == "list_services"
    assert ended.done and ended.reward == 0.0  # one look around, nothing done: a do-nothing episode scores 0
    assert after["done"] and after["score"] == 0.0 and after["stored_as"]


def test_bad_reset_and_step_input_get_errors_naming_the_field_and_change_nothing(served: Served) -> None:
    async def session() -> tuple[Any, ...]:
        async with GenericEnvClient(base_url=served.url) as env:
            with pytest.raises(RuntimeError, match="'nope'"):
                await env.reset(task_id="nope")
            with pytest.raises(RuntimeError, match="'task'"):
                await env.reset(task="x")
            early = await env.step({"type": "call_tool", "tool_name": "list_services", "arguments": {}})
            await env.reset(index=2)
            unknown = await env.step({"type": "call_tool", "tool_name": "delete_world", "arguments": {}})
            bad = await env.step({"type": "call_tool", "tool_name": SUBMIT, "arguments": {"report": "42"}})
            with pytest.raises(RuntimeError, match="index 7 is out of range"):
                await env.reset(index=7)
            state = await env.state()
        return early, unknown, bad, state

    early, unknown, bad, state = asyncio.run(session())
    assert (
        early.observation["result"]["error"]["code"] == 409
        and "reset" in early.observation["result"]["error"]["message"]
    )
    assert unknown.observation["result"]["error"]["code"] == 404 and "'delete_world'" in json.dumps(unknown.observation)
    assert (
        bad.observation["result"]["error"]["code"] == 400
        and "'report'" in bad.observation["result"]["error"]["message"]
    )
    assert not bad.done and bad.reward is None
    # The failed reset left the episode of task index 2 as it was: open, no gateway call made.
    assert (state["task_id"], state["done"], state["step_count"]) == (served.tasks[2].id, False, 0)


def test_a_bad_stateless_http_reset_is_a_400_naming_the_field(served: Served) -> None:
    request = urllib.request.Request(
        served.url + "/reset",
        data=json.dumps({"task_id": "nope"}).encode(),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400 and "unknown task_id 'nope'" in json.loads(refused.value.read())["detail"]


def test_health_schema_metadata_and_the_mcp_endpoint(served: Served) -> None:
    def get(path: str) -> Any:
        with urllib.request.urlopen(served.url + path, timeout=10) as response:
            return json.loads(response.read())

    assert get("/health")["status"] == "healthy"
    assert get("/schema")["action"]["properties"]["tool_name"]["type"] == "string"
    assert get("/metadata")["name"] == "compoworld"

    async def production() -> tuple[list[str], Any]:
        client = MCPToolClient(base_url=served.url)
        client.use_production_mode = True  # OpenEnv's MCP JSON-RPC endpoint (POST /mcp) with a session
        try:
            tools = [t.name for t in await client.list_tools()]
            services = await client.call_tool("list_services")
        finally:
            await client.close()
        return tools, services

    tools, services = asyncio.run(production())
    assert tools == ["list_services", "list_tools", "describe_tool", "call_tool", SUBMIT]
    assert {s["name"] for s in services["services"]} == set(served.tasks[0].mounted)  # the next task in turn


def test_two_hundred_interleaved_sessions_keep_their_worlds_apart(served: Served) -> None:
    sessions = 200
    tasks = served.tasks
    progress = [i % (len(tasks[i % len(tasks)].plan) + 1) for i in range(sessions)]  # plan steps each session makes

    async def run() -> list[dict[str, Any]]:
        clients = [GenericEnvClient(base_url=served.url, message_timeout_s=120) for _ in range(sessions)]
        await asyncio.gather(*(c.connect() for c in clients))
        try:
            await asyncio.gather(*(c.reset(index=i % len(tasks)) for i, c in enumerate(clients)))
            envelopes: list[list[dict[str, Any]]] = [[] for _ in range(sessions)]

            async def plan_step(i: int, step: int) -> None:
                task = tasks[i % len(tasks)]
                arguments = resolve(task.plan[step].arguments, envelopes[i])
                action = {
                    "type": "call_tool",
                    "tool_name": "call_tool",
                    "arguments": {"tool_name": task.plan[step].tool, "arguments": arguments},
                }
                result = await clients[i].step(action)
                envelopes[i].append(result.observation["result"])

            # Round by round, every session that still has a step makes it: the server sees them interleaved.
            for step in range(max(progress)):
                await asyncio.gather(*(plan_step(i, step) for i in range(sessions) if step < progress[i]))
            return list(await asyncio.gather(*(c.state() for c in clients)))
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    states = asyncio.run(run())
    expected: dict[tuple[int, int], str] = {}
    for t, task in enumerate(tasks):
        for made in range(len(task.plan) + 1):
            world = served.hub.open_world(services=task.mounted, seed=task.seed)
            env = InProcessEnv(world, "gateway")
            envelopes: list[Any] = []
            for step in task.plan[:made]:
                envelopes.append(env.call_tool(step.tool, resolve(step.arguments, envelopes)))
            expected[(t, made)] = world.hash()
            world.close()
    assert all(len({expected[(t, m)] for m in range(len(tasks[t].plan) + 1)}) > 1 for t in range(len(tasks)))
    leaks = [i for i, s in enumerate(states) if s["world_hash"] != expected[(i % len(tasks), progress[i])]]
    assert len(states) == sessions and leaks == []
    assert all(
        s["task_id"] == tasks[i % len(tasks)].id and s["step_count"] == progress[i] for i, s in enumerate(states)
    )


def test_a_session_closed_before_the_end_is_recorded_scored_without_a_report(served: Served) -> None:
    async def session() -> str:
        async with GenericEnvClient(base_url=served.url) as env:
            await env.reset(index=0, episode_id="left-early")
            await env.step({"type": "call_tool", "tool_name": "list_services", "arguments": {}})
            return str((await env.state())["world_hash"])

    world_hash = asyncio.run(session())
    deadline = time.monotonic() + 30
    rows: list[dict[str, Any]] = []
    while not rows and time.monotonic() < deadline:  # the server records it as it closes the session
        time.sleep(0.1)
        rows = [
            r
            for r in RunStore(served.store).episodes("oe")
            if r["finish_reason"] == "max_turns" and r["n_calls"] == 1 and r["final_hash"] == world_hash
        ]
    assert rows and rows[0]["score"] == 0.0 and json.loads(rows[0]["trajectory"])["report"] == {}


@pytest.mark.slow
def test_compoworld_serve_openenv_serves_a_task_file(served: Served, tmp_path: Path, cli_server: Any) -> None:
    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(served.tasks, tasks_file)
    port = cli_server("serve", "openenv", "--tasks", str(tasks_file), "--store", str(tmp_path / "runs.db"))
    url = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(url + "/metadata", timeout=30) as response:
        assert "3 tasks" in json.loads(response.read())["description"]

    async def episode() -> Any:
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(task_id=served.tasks[2].id)
            return await env.step({"type": "call_tool", "tool_name": SUBMIT, "arguments": {"report": {}}})

    ended = asyncio.run(episode())
    assert ended.done and ended.reward == 0.0
    assert [r["task_id"] for r in RunStore(tmp_path / "runs.db").episodes("openenv")] == [served.tasks[2].id]


def test_the_max_steps_th_call_ends_the_episode_with_the_reward(served: Served, tmp_path: Path) -> None:
    episodes = Episodes(served.hub, served.tasks, tmp_path / "runs.db", max_steps=2)
    env = CompoWorldEnvironment(episodes)
    try:
        env.reset(index=0)
        first = env.step(_call("list_services", {}))
        last = env.step(_call("list_services", {}))
        after = env.step(_call("list_services", {}))
    finally:
        env.close()
        episodes.close()
    assert (first.done, first.reward) == (False, None)
    assert last.done and last.reward == 0.0 and env.state.done and env.state.stored_as
    assert after.result["error"]["code"] == 409
    assert [r["finish_reason"] for r in RunStore(tmp_path / "runs.db").episodes("openenv")] == ["max_turns"]
