"""The run store keeps the tool specs a run offered, once per run and service, and gives them back with each episode."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness.store import RunStore
from harness.trajectory import Trajectory


def _spec(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "", "parameters": {"type": "object"}}}


def _episode(task_id: str, tools: list[dict[str, Any]]) -> Trajectory:
    return Trajectory(task_id=task_id, agent="oracle", tools=tools)


def test_each_services_specs_are_stored_once_per_run(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    a, b, c = _spec("a__x"), _spec("b__y"), _spec("c__z")
    for task_id, tools in (("t1", [a, b]), ("t2", [a, c]), ("t3", [a, b])):
        store.add("r", _episode(task_id, tools))
    stored = sorted([s["function"]["name"] for s in chunk] for chunk in store.tools("r").values())
    assert stored == [["a__x"], ["b__y"], ["c__z"]]


def test_episodes_come_back_with_the_tools_they_were_offered(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    store.add("r", _episode("a", [_spec("a__x"), _spec("b__y")]))
    store.add("r", _episode("b", [_spec("a__x"), _spec("c__z"), _spec("c__w")]))
    assert {t.task_id: [s["function"]["name"] for s in t.tools] for t in store.trajectories("r")} == {
        "a": ["a__x", "b__y"],
        "b": ["a__x", "c__z", "c__w"],
    }


def test_a_store_from_before_tool_specs_opens_and_reads_its_episodes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    RunStore(path).add("r", _episode("a", [_spec("x")]))
    with sqlite3.connect(path) as db:  # the layout stores had before runs kept their specs
        db.execute("alter table episodes drop column tools_hash")
        db.execute("drop table tools")
    store = RunStore(path)
    store.add("r", _episode("b", [_spec("y")]))
    assert {t.task_id: len(t.tools) for t in store.trajectories("r")} == {"a": 0, "b": 1}
