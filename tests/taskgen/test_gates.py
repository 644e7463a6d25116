"""Each gate rejects a deliberately bad task."""

from __future__ import annotations

from typing import Any

from hub.core import Hub
from hub.rubric import Rubric
from taskgen.gates import check_gates
from taskgen.generate import Generation
from taskgen.task import Task


def _task_with_writes(batch: Generation, hub: Hub, at_least: int = 1) -> Task:
    for task in batch.tasks:
        writes = [s for s in task.plan if hub.registry.tools[s.tool].kind == "write"]
        if len(writes) >= at_least:
            return task
    raise AssertionError("no task with enough writes")


def _with_criteria(task: Task, criteria: list[dict[str, Any]]) -> Task:
    return task.model_copy(update={"rubric": Rubric.model_validate({"criteria": criteria})})


def _criteria(task: Task) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in task.rubric.criteria]


def test_oracle_gate_rejects_an_unreachable_rubric(hub: Hub, batch: Generation) -> None:
    task = batch.tasks[0]
    criteria = _criteria(task)
    criteria.append(
        {"id": "x", "kind": "report", "field": "answer", "value": "never reported", "description": "unreachable"}
    )
    assert "oracle" in check_gates(hub, _with_criteria(task, criteria))


def test_null_gate_rejects_criteria_the_start_already_meets(hub: Hub, batch: Generation) -> None:
    task = batch.tasks[0]
    message = next(iter(hub.open_world(services=["email"], seed=task.seed).states()["email"]["messages"]))
    criteria = _criteria(task)
    criteria.append(
        {
            "id": "x",
            "kind": "record",
            "service": "email",
            "collection": "messages",
            "match": {"id": message},
            "description": "already true",
        }
    )
    bad = task.model_copy(update={"distractor_services": sorted({*task.distractor_services, "email"})})
    assert "null" in check_gates(hub, _with_criteria(bad, criteria))


def test_necessary_gate_rejects_a_write_no_criterion_checks(hub: Hub, batch: Generation) -> None:
    task = _task_with_writes(batch, hub, 2)
    criteria = _criteria(task)
    positives = [c for c in criteria if not c.get("negative")]
    assert len(positives) >= 2
    # Only the first effect is checked: the other writes could be dropped without failing anything.
    kept = [positives[0], *(c for c in criteria if c.get("negative"))]
    assert "necessary" in check_gates(hub, _with_criteria(task, kept))


def test_leak_gate_rejects_a_carried_value_in_the_instruction(hub: Hub, batch: Generation) -> None:
    task = batch.tasks[0]
    secret = next(v for v in task.meta["carried_values"] if len(v) >= 3 and v not in task.meta["given_values"])
    bad = task.model_copy(update={"instruction": task.instruction + f" (hint: {secret})"})
    assert check_gates(hub, bad) == ["leak"]


def test_gate_rejections_are_counted_by_reason(batch: Generation) -> None:
    assert batch.attempts >= len(batch.tasks)
    assert all(isinstance(k, str) and v > 0 for k, v in batch.rejections.items())
