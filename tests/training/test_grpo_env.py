"""The GRPO environment class and the rubric reward functions, on real task worlds."""

from __future__ import annotations

import json

import pytest

from taskgen.generate import generate
from taskgen.task import Task, resolve
from tests.conftest import full_hub
from training.grpo import CompoWorldEnv, cfrr_reward, env_tool_schemas, grpo_rows, rubric_reward, success_reward


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    CompoWorldEnv.hub = full_hub()
    return generate(2, seed=13, hub=CompoWorldEnv.hub).tasks


def _solve(env: CompoWorldEnv, task: Task) -> None:
    envelopes = []
    for step in task.plan:
        envelopes.append(json.loads(env.call_tool(step.tool, resolve(step.arguments, envelopes))))


def test_reset_opens_the_task_world_and_tools_are_the_gateway(tasks: list[Task]) -> None:
    env = CompoWorldEnv()
    row = grpo_rows(tasks)[0]
    assert env.reset(**row) is None  # TRL would append a returned text to the prompt, which has the instruction
    assert tasks[0].instruction in row["prompt"][-1]["content"]
    services = json.loads(env.list_services())["data"]["services"]
    assert {s["name"] for s in services} == set(tasks[0].mounted)
    first = tasks[0].plan[0].tool
    assert json.loads(env.describe_tool(first))["data"]["name"] == first
    assert json.loads(env.call_tool("nope__x", {}))["error"]["code"] == 404
    assert env.calls == ["list_services", "describe_tool", "call_tool"] and env.errors == 1
    env.reset(**row)
    assert env.calls == [] and env.errors == 0
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
    logged: dict[str, float] = {}
    cfrr_reward(completions, ids, envs, log_metric=logged.__setitem__)
    assert logged["env/service_calls"] == pytest.approx(sum(len(t.plan) for t in tasks) / len(envs))
    assert logged["env/gateway_calls"] == logged["env/service_calls"] and logged["env/gateway_errors"] == 0


def test_env_tool_schemas_are_what_trl_renders_for_the_environment() -> None:
    schemas = env_tool_schemas()
    assert [s["function"]["name"] for s in schemas] == ["call_tool", "describe_tool", "list_services", "list_tools"]
    call_tool = schemas[0]["function"]["parameters"]
    assert (
        call_tool["required"] == ["tool_name", "arguments"] and call_tool["properties"]["arguments"]["type"] == "object"
    )
