"""The recovering oracle: one realistic mistake (400 or 404) read and recovered from, through real episodes."""

from __future__ import annotations

import pytest

from harness.agent_spec import make_agent
from harness.episode import run_episode
from harness.trajectory import Surface, Trajectory
from hub.core import Hub
from taskgen.generate import generate
from taskgen.task import Task
from tests.conftest import full_hub


@pytest.fixture(scope="module")
def setup() -> tuple[Hub, list[Task]]:
    hub = full_hub()
    return hub, generate(6, seed=3, hub=hub, source="patterns").tasks


def _recovered(hub: Hub, tasks: list[Task], surface: Surface) -> list[Trajectory]:
    return [run_episode(hub, task, make_agent("oracle-recovery"), surface) for task in tasks]


@pytest.mark.parametrize("surface", ["direct", "gateway"])
def test_a_recovered_episode_scores_one_and_ends_in_the_oracles_world(
    setup: tuple[Hub, list[Task]], surface: Surface
) -> None:
    hub, tasks = setup
    for task, trajectory in zip(tasks, _recovered(hub, tasks, surface), strict=True):
        oracle = run_episode(hub, task, make_agent("oracle"), surface)
        assert trajectory.net_score == trajectory.score == 1.0
        assert trajectory.n_errors == 1
        assert trajectory.final_hash == oracle.final_hash  # the refused call changed nothing


def test_the_failed_call_is_followed_by_the_right_call_which_reads_the_error(setup: tuple[Hub, list[Task]]) -> None:
    hub, tasks = setup
    for trajectory in _recovered(hub, tasks, "direct"):
        failed = next(c for c in trajectory.tool_calls if not c.ok)
        retry = trajectory.tool_calls[failed.index + 1]
        assert retry.tool == failed.tool and retry.ok and retry.arguments != failed.arguments
        turn = next(m for m in trajectory.messages if m.get("reasoning_content"))
        assert turn["tool_calls"][0]["function"]["name"] == retry.name
        assert failed.envelope["error"]["message"] in turn["reasoning_content"]


def test_mistakes_are_missing_fields_and_wrong_ids(setup: tuple[Hub, list[Task]]) -> None:
    hub, tasks = setup
    codes = {c.envelope["error"]["code"] for t in _recovered(hub, tasks, "gateway") for c in t.tool_calls if not c.ok}
    assert codes == {400, 404}


def test_the_plain_oracle_makes_no_mistake(setup: tuple[Hub, list[Task]]) -> None:
    hub, tasks = setup
    assert all(run_episode(hub, t, make_agent("oracle"), "direct").n_errors == 0 for t in tasks)
