"""The adversary gate, and the rubric properties generated tasks must have for it to pass."""

from __future__ import annotations

import re

import pytest

from hub.core import Hub
from hub.rubric import (
    CollateralCriterion,
    RecordCriterion,
    ReportCriterion,
    Rubric,
    ServiceUntouchedCriterion,
    UnchangedCriterion,
)
from taskgen.adversaries import PANEL, Panel, run_panel, verdict
from taskgen.gates import check_gates
from taskgen.generate import Generation, generate, walker_for
from taskgen.oracle import run_plan
from taskgen.task import Task


@pytest.fixture(scope="module")
def tasks(hub: Hub) -> list[Task]:
    return generate(40, seed=23, hub=hub, source="patterns").tasks


def _without_collateral(task: Task) -> Task:
    criteria = [c for c in task.rubric.criteria if not isinstance(c, CollateralCriterion)]
    return task.model_copy(update={"rubric": Rubric(criteria=criteria)})


def test_a_sound_task_passes_every_gate(hub: Hub, batch: Generation) -> None:
    assert batch.tasks
    for task in batch.tasks[:4]:
        assert check_gates(hub, task) == []


def test_the_adversary_gate_rejects_a_rubric_without_the_collateral_criterion(hub: Hub, batch: Generation) -> None:
    rejected = [check_gates(hub, _without_collateral(task)) for task in batch.tasks[:6]]
    assert any(reasons for reasons in rejected)
    assert all(reason.startswith("adversary:") for reasons in rejected for reason in reasons)
    assert any("adversary:spam" in reasons for reasons in rejected)


def test_every_adversary_earns_nothing_on_kept_tasks(hub: Hub, batch: Generation) -> None:
    walker = walker_for(hub, batch.tasks[0].seed)
    for task in batch.tasks:
        oracle = run_plan(hub, task.plan, task.seed, task.mounted, record=False)
        try:
            attempts = run_panel(Panel(walker, task, budget=16), oracle.world, oracle.envelopes)
        finally:
            oracle.world.close()
        assert [a.name for a in attempts] == list(PANEL)
        assert verdict(attempts, 1.0) == []
        assert all(a.net_score <= 0.1 for a in attempts), (task.id, attempts)


def test_adversary_rejections_are_counted_by_reason(hub: Hub) -> None:
    from taskgen import generate as generation

    original = generation.check_gates

    def weak(hub: Hub, task: Task, walker: object = None) -> list[str]:
        return original(hub, _without_collateral(task), walker)  # type: ignore[arg-type]

    generation.check_gates = weak  # type: ignore[assignment]
    try:
        out = generate(3, seed=5, hub=hub, max_attempts=30)
    finally:
        generation.check_gates = original
    assert any(key.startswith("gate:adversary:") for key in out.rejections), out.rejections


def test_every_task_carries_one_collateral_criterion(tasks: list[Task]) -> None:
    for task in tasks:
        collateral = [c for c in task.rubric.criteria if isinstance(c, CollateralCriterion)]
        assert len(collateral) == 1 and collateral[0].allowed
        assert task.rubric_version == 2


def test_no_hidden_negative_criteria(tasks: list[Task]) -> None:
    """Every negative criterion but the collateral one is stated in the instruction."""
    for task in tasks:
        for c in task.rubric.criteria:
            if isinstance(c, UnchangedCriterion):
                label = re.search(r"The \w+ '(.+)' \(", c.description)
                assert label and f"'{label.group(1)}'" in task.instruction, (task.id, c.description)
            elif isinstance(c, ServiceUntouchedCriterion):
                assert f"Do not change anything in {c.service}" in task.instruction
            elif c.negative:
                assert isinstance(c, CollateralCriterion)


def test_report_keys_are_named_and_values_never_stated(tasks: list[Task]) -> None:
    reports = [(t, c) for t in tasks for c in t.rubric.criteria if isinstance(c, ReportCriterion)]
    assert reports, "some tasks ask for a report"
    for task, c in reports:
        assert f"`{c.field}`" in task.instruction
        assert str(c.value).casefold() not in task.instruction.casefold()
        assert not c.field.endswith("_at") and c.field != "id"


def test_a_report_value_in_the_instruction_is_a_leak(hub: Hub, tasks: list[Task]) -> None:
    task = next(t for t in tasks if t.expected_report)
    value = next(iter(task.expected_report.values()))
    bad = task.model_copy(update={"instruction": task.instruction + f" It should come out as {value}."})
    assert "leak" in check_gates(hub, bad)


def test_stated_booleans_are_checked(hub: Hub) -> None:
    """A yes/no value the instruction states for a new record is part of its criterion."""
    found = 0
    for task in generate(60, seed=31, hub=hub).tasks:
        for step in task.plan:
            stated = {k: v for k, v in step.arguments.items() if isinstance(v, bool)}
            if not stated or hub.registry.tools[step.tool].kind != "write":
                continue
            service = hub.registry.tools[step.tool].service
            checks = [c for c in task.rubric.criteria if isinstance(c, RecordCriterion) and c.service == service]
            for name, value in stated.items():
                if f"{name.replace('_', ' ')} = {value!r}" in task.instruction:
                    assert any(c.match.get(name) is value for c in checks), (task.id, name)
                    found += 1
    assert found, "no task states a boolean"
