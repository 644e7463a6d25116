"""The openai agent end to end against a real local chat-completions server, on the gateway."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.episode import run_episode
from harness.openai_agent import OpenAIAgent
from hub.core import Hub
from taskgen.generate import generate
from taskgen.oracle import run_plan
from taskgen.task import Task, resolve
from tests.conftest import ScriptedOpenAI, full_hub


@pytest.fixture(scope="module")
def setup() -> tuple[Hub, list[Task]]:
    hub = full_hub()
    return hub, generate(2, seed=8, hub=hub).tasks


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _solving_script(hub: Hub, task: Task) -> list[Any]:
    """Replies that discover the gateway, then make the oracle's calls (two at once where possible)."""
    oracle = run_plan(hub, task.plan, task.seed, task.mounted)
    envelopes: list[dict[str, Any]] = []
    calls = []
    for step in task.plan:
        arguments = resolve(step.arguments, envelopes)
        envelopes.append(oracle.envelopes[len(envelopes)])
        calls.append({"tool_name": step.tool, "arguments": arguments})
    script: list[Any] = [
        {
            "content": "",
            "tool_calls": [_call("d1", "list_services", {}), _call("d2", "describe_tool", {"tool": task.plan[0].tool})],
        }
    ]
    for number, call in enumerate(calls):
        script.append({"content": "", "tool_calls": [_call(f"c{number}", "call_tool", call)]})
    script.append(f"All done.\n{json.dumps(task.expected_report)}")
    return script


def test_scripted_model_solves_a_task_through_the_gateway(
    setup: tuple[Hub, list[Task]], openai_server: ScriptedOpenAI
) -> None:
    hub, tasks = setup
    task = tasks[0]
    openai_server.replies = _solving_script(hub, task)
    agent = OpenAIAgent("scripted-1", base_url=openai_server.url, max_turns=20)
    trajectory = run_episode(hub, task, agent, surface="gateway")
    assert trajectory.finish_reason == "completed"
    assert trajectory.score == 1.0 and trajectory.net_score == 1.0 and trajectory.success
    assert trajectory.report == task.expected_report
    first = openai_server.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "list_services",
        "list_tools",
        "describe_tool",
        "call_tool",
    ]
    assert first["messages"][0]["role"] == "system" and "list_services" in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": task.instruction}
    tool_messages = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["d1", "d2"]
    assert json.loads(tool_messages[0]["content"])["success"] is True
    writes = [c for c in trajectory.tool_calls if c.kind == "write"]
    assert writes and all(c.diff for c in writes)
    assert len(trajectory.tool_calls) == 2 + len(task.plan)


def test_scripted_model_that_fails_is_scored_zero(setup: tuple[Hub, list[Task]], openai_server: ScriptedOpenAI) -> None:
    hub, tasks = setup
    task = tasks[1]
    openai_server.replies = [
        {"content": "", "tool_calls": [_call("x1", "call_tool", {"tool_name": "nope__tool", "arguments": {}})]},
        {
            "content": "",
            "tool_calls": [
                {"id": "x2", "type": "function", "function": {"name": "call_tool", "arguments": "{not json"}}
            ],
        },
        'I could not do it.\n{"answer": "unknown"}',
    ]
    agent = OpenAIAgent("scripted-1", base_url=openai_server.url)
    trajectory = run_episode(hub, task, agent, surface="gateway")
    assert trajectory.score == 0.0 and not trajectory.success
    assert [c.envelope["error"]["code"] for c in trajectory.tool_calls] == [404]
    bad_json = json.loads(openai_server.requests[2]["messages"][-1]["content"])
    assert bad_json["error"]["code"] == 400
    assert all(c.passed for c in trajectory.criteria if c.negative)


def test_unreachable_endpoint_ends_the_episode_with_an_error(setup: tuple[Hub, list[Task]]) -> None:
    hub, tasks = setup
    agent = OpenAIAgent("m", base_url="http://127.0.0.1:9/v1", retries=1, backoff_s=0.01)
    trajectory = run_episode(hub, tasks[0], agent, surface="direct")
    assert trajectory.finish_reason == "error" and "APIConnectionError" in (trajectory.error or "")
    assert trajectory.score == 0.0
