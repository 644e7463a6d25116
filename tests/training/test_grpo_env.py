"""The GRPO environment class and the rubric reward functions, on real task worlds."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.config import RunConfig
from harness.env import function_spec
from harness.export import export_sft
from harness.metrics import summary
from harness.report import print_report
from harness.store import RunStore
from hub.surfaces import GATEWAY_TOOLS
from taskgen.generate import generate
from taskgen.task import Task, resolve
from tests.conftest import full_hub
from training.grpo import (
    CompoWorldEnv,
    RolloutRecording,
    cfrr_reward,
    close_worlds,
    env_tool_schemas,
    grpo_rows,
    rubric_reward,
    success_reward,
)
from training.rewards import cfrr


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    CompoWorldEnv.hub = full_hub()
    return generate(2, seed=13, hub=CompoWorldEnv.hub).tasks


def _solve(env: CompoWorldEnv, task: Task) -> None:
    envelopes: list[Any] = []
    for step in task.plan:
        envelopes.append(json.loads(env.call_tool(step.tool, resolve(step.arguments, envelopes))))


def test_reset_opens_the_task_world_and_tools_are_the_gateway(tasks: list[Task]) -> None:
    env = CompoWorldEnv()
    row = grpo_rows(tasks)[0]
    assert env.reset(**row) is None  # type: ignore[func-returns-value]  # TRL would append a returned text to the prompt, which has the instruction
    assert tasks[0].instruction in row["prompt"][-1]["content"]
    services = json.loads(env.list_services())["data"]["services"]
    assert {s["name"] for s in services} == set(tasks[0].mounted)
    first = tasks[0].plan[0].tool
    assert json.loads(env.describe_tool(first))["data"]["name"] == first
    assert json.loads(env.call_tool("nope__x", {}))["error"]["code"] == 404
    assert [c.name for c in env.calls] == ["list_services", "describe_tool", "call_tool"] and env.errors == 1
    # Recorded by the harness's environment, like any episode's calls: a meta-tool, or the service tool behind it.
    assert [c.kind for c in env.calls] == ["meta", "meta", "meta"] and env.calls[2].envelope["error"]["code"] == 404
    env.reset(**row)
    assert env.calls == [] and env.errors == 0
    public = [m for m in dir(env) if not m.startswith("_") and callable(getattr(env, m))]
    assert {"reset", "list_services", "list_tools", "describe_tool", "call_tool"} <= set(public)


def test_worlds_left_open_by_environments_are_closed_when_training_ends(tasks: list[Task]) -> None:
    envs = [CompoWorldEnv() for _ in range(2)]
    envs[0].reset(**grpo_rows(tasks)[0])  # TRL never closes an environment: its last world stays open
    world = envs[0].world
    assert world is not None and not world.closed
    assert close_worlds() >= 1
    assert world.closed and envs[0].world is None and envs[1].world is None
    assert json.loads(envs[0].list_services())["error"]["code"] == 409  # reset() must come first again
    assert close_worlds() == 0


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
    # The descriptions are the gateway's own: TRL renders them from docstrings made from the gateway's specs.
    gateway = {t.name: t for t in GATEWAY_TOOLS}
    for schema in schemas:
        spec = gateway[schema["function"]["name"]]
        assert schema["function"]["description"] == spec.description
        properties = schema["function"]["parameters"].get("properties", {})
        assert {n: p["description"] for n, p in properties.items()} == {
            n: p["description"] for n, p in spec.input_schema.get("properties", {}).items()
        }


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[RolloutRecording]:
    config = RunConfig(surface="gateway", training={"trainer": "grpo"})
    recording = RolloutRecording(RunStore(tmp_path / "runs.db"), "grpo-test", "models/tiny-warm", config)
    CompoWorldEnv.recording = recording
    yield recording
    CompoWorldEnv.recording = None


def _completion(env: CompoWorldEnv, text: str) -> list[dict[str, Any]]:
    """A completion as TRL builds it with an environment: each call, its tool answer, then the final text."""
    messages: list[dict[str, Any]] = []
    for call in env.calls:
        function = {"name": call.name, "arguments": call.arguments}
        messages.append(
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": function}]}
        )
        messages.append({"role": "tool", "name": call.name, "content": json.dumps(call.envelope)})
    return [*messages, {"role": "assistant", "content": text}]


def _group(task: Task, row: dict[str, Any]) -> tuple[list[CompoWorldEnv], list[Any]]:
    envs, completions = [], []
    for solved in (True, False, False):
        env = CompoWorldEnv()
        env.reset(**row)
        env.list_services()
        if solved:
            _solve(env, task)
        else:
            env.call_tool("nope__x", {})
        report = json.dumps(task.expected_report if solved else {})
        envs.append(env)
        completions.append(_completion(env, f"Done.\n{report}"))
    return envs, completions


def test_scored_rollouts_are_recorded_in_the_run_store_and_export_to_sft(
    tasks: list[Task], recording: RolloutRecording, tmp_path: Path
) -> None:
    task, row = tasks[0], grpo_rows(tasks)[0]
    envs, completions = _group(task, row)
    ids, prompts = [task.id] * 3, [row["prompt"]] * 3
    rewards = cfrr_reward(completions, ids, envs, prompts=prompts)
    success_reward(completions, ids, envs, prompts=prompts)  # a second reward function records nothing again
    store = recording.store
    episodes = store.episodes("grpo-test")
    assert [(e["agent"], e["surface"], e["rollout"]) for e in episodes] == [
        ("grpo:tiny-warm", "gateway", i) for i in range(3)
    ]
    solved, failed, _ = list(store.trajectories("grpo-test"))
    # Every call, recorded as the harness records an episode's: the meta-tool, the service tool behind it, the diff.
    assert [c.name for c in solved.tool_calls] == ["list_services"] + ["call_tool"] * len(task.plan)
    assert [c.tool for c in solved.tool_calls[1:]] == [s.tool for s in task.plan]
    assert any(c.diff for c in solved.tool_calls if c.kind == "write")
    assert failed.tool_calls[-1].envelope["error"]["code"] == 404 and failed.n_errors == 1
    assert len(store.steps("grpo-test")) == sum(len(e.calls) for e in envs)
    # The conversation (prompt and completion), the report, the offered tools and the scores.
    assert [m["role"] for m in solved.messages[:2]] == ["system", "user"] and solved.messages[-1]["role"] == "assistant"
    assert solved.report == task.expected_report and solved.tools == [function_spec(t) for t in GATEWAY_TOOLS]
    assert solved.success and solved.net_score == 1.0 and not failed.success and failed.net_score == 0.0
    # CFRR is what the stored per-criterion results give.
    criteria = store.criteria("grpo-test")
    passes = [
        [
            float(c["passed"])
            for c in sorted(criteria, key=lambda c: c["criterion_id"])
            if c["episode_id"] == e["id"] and not c["negative"]
        ]
        for e in episodes
    ]
    weights = [c.weight for c in sorted(solved.criteria, key=lambda c: c.id) if not c.negative]
    assert rewards == pytest.approx(cfrr(passes, weights))
    # A later step's group of the same task continues the numbering.
    envs, completions = _group(task, row)
    rubric_reward(completions, ids, envs, prompts=prompts)
    assert [e["rollout"] for e in store.episodes("grpo-test")] == list(range(6))
    # The harness's report reads them like any run's episodes (one rollout of each group succeeds).
    figures = summary(store, "grpo-test")["grpo:tiny-warm"]
    assert figures["episodes"] == 6 and figures["success_rate"] == pytest.approx(2 / 6)
    printed = io.StringIO()
    print_report(store, "grpo-test", Console(file=printed, width=200))
    assert "grpo:tiny-warm" in printed.getvalue()
    # The harness's SFT export reads them from the store (tools included): the solved rollouts only.
    out = tmp_path / "sft.jsonl"
    assert export_sft(store, "grpo-test", out) == 1  # the two solved rollouts have the same messages
    record = json.loads(out.read_text().splitlines()[0])
    assert record["meta"]["src"] == "compoworld/grpo:tiny-warm" and record["meta"]["discover_mode"] == "gateway"
    assert [t["function"]["name"] for t in record["tools"]] == [t.name for t in GATEWAY_TOOLS]
    assert record["meta"]["n_real_tool_calls"] == len(task.plan)
    assert any(m.get("tool_calls") for m in record["messages"])
