"""The generator's shortcuts give exactly what the plain paths give."""

from __future__ import annotations

import random
from typing import Any

import pytest

import taskgen.gates as gates
import taskgen.generate as generate_module
from hub.core import Hub
from hub.rubric import Rubric
from taskgen.compose import compose
from taskgen.gates import check_gates
from taskgen.generate import Generation, generate, generate_parallel, walker_for
from taskgen.oracle import run_plan
from taskgen.task import Task
from taskgen.walk import WalkError

FEW = ("deal_won_handoff", "urgent_ticket_escalation", "new_meeting_prep", "incident_resolved_postmortem")


def _jsonl(tasks: list[Task]) -> list[str]:
    return [t.model_dump_json() for t in tasks]


def test_worker_processes_give_the_tasks_one_process_gives(hub: Hub, batch: Generation) -> None:
    parallel = generate_parallel(len(batch.tasks), seed=11, workers=2, hub=hub, chunk=3)
    assert _jsonl(parallel.tasks) == _jsonl(batch.tasks)
    assert parallel.attempts == batch.attempts and parallel.rejections == batch.rejections


def test_worker_processes_give_the_pattern_tasks_one_process_gives(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeats of an earlier request are dropped (early, in a worker that kept the original), with
    the same outcome however the attempts are spread over processes."""
    # Four patterns only, so that 40 requests meet repeats (the whole library rarely repeats itself);
    # the workers are forked from this process and see the same four.
    few = [p for p in generate_module.load_patterns() if p.id in FEW]
    monkeypatch.setattr(generate_module, "load_patterns", lambda: few)
    alone = generate(40, seed=3, hub=hub, source="patterns")
    parallel = generate_parallel(40, seed=3, workers=2, hub=hub, chunk=3, source="patterns")
    assert _jsonl(parallel.tasks) == _jsonl(alone.tasks)
    assert parallel.attempts == alone.attempts and parallel.rejections == alone.rejections
    assert alone.rejections["duplicate"] > 0


def test_a_fresh_walker_gives_the_tasks_a_reused_one_gives(hub: Hub) -> None:
    first = generate(4, seed=23, hub=hub)
    hub.derived.clear()
    assert _jsonl(generate(4, seed=23, hub=hub).tasks) == _jsonl(first.tasks)


def _variants(task: Task) -> list[Task]:
    """The task, and the task with each one of its criteria left out."""
    criteria = [c.model_dump(mode="json") for c in task.rubric.criteria]
    out = [task]
    for index in range(len(criteria)):
        rubric = Rubric.model_validate({"criteria": criteria[:index] + criteria[index + 1 :]})
        out.append(task.model_copy(update={"rubric": rubric}))
    return out


def test_the_necessary_gate_decides_as_a_full_replay_does(
    hub: Hub, batch: Generation, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = [v for task in batch.tasks[:6] for v in _variants(task)]
    quick = [check_gates(hub, t) for t in tasks]
    calls: list[Any] = []

    def never(*args: Any) -> bool:
        calls.append(args)
        return False

    monkeypatch.setattr(gates, "_fails_without", never)
    assert [check_gates(hub, t) for t in tasks] == quick
    assert calls and any("necessary" in q for q in quick) and any(q == [] for q in quick)


def test_the_walks_world_is_what_a_fresh_run_of_the_plan_leaves(hub: Hub) -> None:
    """Calls a walk tries and drops are undone exactly, so its world serves as the oracle run."""
    walker, checked = walker_for(hub, 11), 0
    for index in range(40):
        rng = random.Random(f"taskgen:11:{index}")
        try:
            walk = walker.walk(rng, rng.randint(3, 8))
        except WalkError:
            continue
        try:
            others = sorted(set(hub.registry.services) - set(walk.services))
            distractors = sorted(rng.sample(others, 2))
            task, oracle = compose(walk, "t", 11, rng, distractors)
            fresh = run_plan(hub, task.plan, 11, task.mounted)
            assert oracle.envelopes == fresh.envelopes
            assert oracle.world.states(task.mounted) == fresh.world.states()
            for step, record in zip(walk.steps, fresh.records, strict=True):
                assert (step.changes or None) == (record.diff if step.entry.kind == "write" else None)
            checked += 1
        finally:
            walk.world.close()
    assert checked >= 10
