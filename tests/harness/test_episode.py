"""An episode closes its world even when its environment or scoring fails."""

from __future__ import annotations

from typing import Any

import pytest

from harness.agents import Agent, AgentResult
from harness.env import InProcessEnv
from harness.episode import run_episode
from hub.core import Hub
from servers.registry import get_service
from taskgen.task import Task


class Quiet:
    name = "quiet"
    model: str | None = None

    def run(self, task: Task, env: Any, rng: Any) -> AgentResult:
        return AgentResult([], {})


def test_a_failing_score_still_closes_the_world(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = Hub.native([get_service("email")])
    task = Task.model_validate(
        {
            "id": "t",
            "seed": 1,
            "instruction": "x",
            "services": ["email"],
            "plan": [],
            "rubric": {"criteria": [{"id": "r", "description": "d", "kind": "report", "field": "k", "value": 1}]},
        }
    )
    from hub.world import World

    def broken(self: World, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("scoring failed")

    monkeypatch.setattr(World, "score", broken)
    agent: Agent = Quiet()
    with pytest.raises(RuntimeError, match="scoring failed"):
        run_episode(hub, task, agent)
    assert dict(hub.worlds) == {}  # closed worlds leave the hub


def test_a_failing_environment_still_closes_the_world(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = Hub.native([get_service("email")])
    task = Task.model_validate(
        {
            "id": "t",
            "seed": 1,
            "instruction": "x",
            "services": ["email"],
            "plan": [],
            "rubric": {"criteria": [{"id": "r", "description": "d", "kind": "report", "field": "k", "value": 1}]},
        }
    )

    def broken(self: InProcessEnv) -> None:
        raise RuntimeError("close failed")

    monkeypatch.setattr(InProcessEnv, "close", broken)
    with pytest.raises(RuntimeError, match="close failed"):
        run_episode(hub, task, Quiet())
    assert dict(hub.worlds) == {}
