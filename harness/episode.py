"""One episode: open the task's world, run the agent, record every call, score."""

from __future__ import annotations

import random
import time
from typing import Literal

from harness.agents import Agent, AgentResult
from harness.env import InProcessEnv, MCPEnv, ToolEnv
from harness.trajectory import Surface, Trajectory
from hub.core import Hub
from taskgen.task import Task


def run_episode(
    hub: Hub,
    task: Task,
    agent: Agent,
    surface: Surface = "direct",
    path: Literal["inprocess", "mcp"] = "inprocess",
    rollout: int = 0,
    seed: int = 0,
) -> Trajectory:
    """Run ``agent`` on ``task`` in a fresh world and return the scored trajectory."""
    started = time.time()
    world = hub.open_world(services=task.mounted, seed=task.seed)
    try:  # the world is closed whatever the environment, the agent or scoring does
        env: ToolEnv = MCPEnv(world, surface) if path == "mcp" else InProcessEnv(world, surface)
        rng = random.Random(f"episode:{seed}:{task.id}:{agent.name}:{rollout}")
        try:
            tools = env.tools()  # what the agent is offered, stored with the run (exports need no hub)
            result = _attempt(agent, task, env, rng)
        finally:
            env.close()
        scored = world.score(task.rubric, report=result.report)
        final_hash = world.hash()
    finally:
        world.close()
    return Trajectory(
        task_id=task.id,
        agent=agent.name,
        model=agent.model,
        surface=surface,
        path=path,
        rollout=rollout,
        seed=seed,
        messages=result.messages,
        tools=tools,
        tool_calls=env.calls,
        report=result.report,
        final_hash=final_hash,
        criteria=scored.criteria,
        score=scored.score,
        net_score=scored.net_score,
        success=scored.success,
        finish_reason=result.finish_reason,
        error=result.error,
        started_at=started,
        duration_s=round(time.time() - started, 4),
        services=task.services,
    )


def _attempt(agent: Agent, task: Task, env: ToolEnv, rng: random.Random) -> AgentResult:
    try:
        return agent.run(task, env, rng)
    except Exception as exc:  # an agent bug ends its episode, not the run
        return AgentResult([], {}, "error", f"{type(exc).__name__}: {exc}")
