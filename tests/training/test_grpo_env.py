"""The GRPO environment class and the rubric reward functions, on real task worlds."""

from __future__ import annotations

import json

import pytest

from taskgen.generate import default_hub, generate
from taskgen.task import Task, resolve
from training.grpo import CompoWorldEnv, cfrr_reward, grpo_rows, rubric_reward, success_reward


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    CompoWorldEnv.hub = default_hub()
    return generate(2, seed=13, hub=CompoWorldEnv.hub).tasks


def _solve(env: CompoWorldEnv, task: Task) -> None:
    envelopes = []
    for step in task.plan:
        envelopes.append(json.loads(env.call_tool(step.tool, resolve(step.arguments, envelopes))))


def test_reset_opens_the_task_world_and_tools_are_the_gateway(tasks: list[Task]) -> None:
    env = CompoWorldEnv()
    row = grpo_rows(tasks)[0]
    assert env.reset(**row) == tasks[0].instruction
    services = json.loads(env.list_services())["data"]["services"]
    assert {s["name"] for s in services} == set(tasks[0].mounted)
    first = tasks[0].plan[0].tool
    assert json.loads(env.describe_tool(first))["data"]["name"] == first
    assert json.loads(env.call_tool("nope__x", {}))["error"]["code"] == 404
    public = [m for m in dir(env) if not m.startswith("_") and callable(getattr(env, m))]
    assert {"reset", "list_services", "list_tools", "describe_tool", "call_tool"} <= set(public)


def test_rewards_score_each_group_of_rollouts(tasks: list[Task]) -> None:
    rows = grpo_rows(tasks)
    envs, completions, ids = [], [], []
    for task, row in zip(tasks, rows, strict=True):
        for solved in (True, False, False):
            env = CompoWorldEnv()
            env.reset(**row)
            if solved:
                _solve(env, task)
            report = json.dumps(task.expected_report if solved else {})
            envs.append(env)
            completions.append([{"role": "assistant", "content": f"Done.\n{report}"}])
            ids.append(task.id)
    assert success_reward(completions, ids, envs) == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert rubric_reward(completions, ids, envs) == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    focused = cfrr_reward(completions, ids, envs)
    assert focused[0] == pytest.approx(1.5) and focused[1] == 0.0
    assert envs[0].get_reward() < 1.0 or not tasks[0].expected_report  # the report counts only with the text
