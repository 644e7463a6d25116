"""Generated tasks: verified by the four gates, deterministic, cross-service, leak-free."""

from __future__ import annotations

import json
from pathlib import Path

from hub.core import Hub
from taskgen.compose import leaks
from taskgen.gates import check_gates
from taskgen.generate import Generation, generate, stats
from taskgen.oracle import run_plan
from taskgen.task import read_jsonl, write_jsonl


def test_generated_tasks_pass_all_four_gates(hub: Hub, batch: Generation) -> None:
    assert len(batch.tasks) == 12
    for task in batch.tasks:
        assert check_gates(hub, task) == [], task.id


def test_tasks_cross_services_and_carry_values(batch: Generation) -> None:
    for task in batch.tasks:
        assert len(task.services) >= 2
        assert any(t.from_service != t.to_service for t in task.transfers)
        assert 3 <= len(task.plan) <= 8 or len(task.plan) >= 2
        assert set(task.distractor_services).isdisjoint(task.services) and task.distractor_services


def test_oracle_scores_one_and_doing_nothing_scores_zero(hub: Hub, batch: Generation) -> None:
    task = batch.tasks[0]
    oracle = run_plan(hub, task.plan, task.seed, task.mounted)
    assert oracle.world.score(task.rubric, report=task.expected_report).score == 1.0
    null = hub.open_world(services=task.mounted, seed=task.seed).score(task.rubric, report={})
    assert null.score == 0.0
    assert all(c.passed for c in null.criteria if c.negative)


def test_instructions_do_not_leak_carried_values(batch: Generation) -> None:
    for task in batch.tasks:
        assert leaks(task) == []
        given = [str(g).casefold() for g in task.meta["given_values"]]
        for value in task.meta["carried_values"]:
            # a value inside a name the instruction must state is not leaked by it ("the quote
            # 'Aguilar-Lynch umbrella cover'" names its insured, as the record itself does)
            if len(value) >= 3 and not any(value.casefold() in g for g in given):
                assert value.casefold() not in task.instruction.casefold(), (task.id, value)


def test_same_seed_gives_a_byte_identical_file(hub: Hub, tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(generate(5, seed=21, hub=hub).tasks, first)
    write_jsonl(generate(5, seed=21, hub=hub).tasks, second)
    assert first.read_bytes() == second.read_bytes()
    assert [t.id for t in read_jsonl(first)] == [t.id for t in generate(5, seed=21, hub=hub).tasks]


def test_other_seed_gives_other_tasks(hub: Hub, batch: Generation) -> None:
    other = generate(3, seed=12, hub=hub)
    assert {t.instruction for t in other.tasks}.isdisjoint({t.instruction for t in batch.tasks})


def test_stats_report_the_published_keys(batch: Generation) -> None:
    data = stats(batch.tasks, dict(batch.rejections))
    for key in (
        "n_tasks",
        "median_services",
        "median_transfers",
        "policy_share",
        "distinct_service_combos",
        "gate_rejections",
    ):
        assert key in data
    assert data["n_tasks"] == 12 and data["median_services"] >= 2
    json.dumps(data)
