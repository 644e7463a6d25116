"""Tracker service: listings, task workflow with dependencies and subtasks, projects, permissions."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from servers.native.tracker import TrackerState
from servers.native.tracker import service as svc
from servers.population import Population

WORLD = Population.generate(7)
EMPLOYEES = {p.email for p in WORLD.employees}


@pytest.fixture
def state() -> TrackerState:
    return svc.seed_state(7)


def call(state: TrackerState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def data(state: TrackerState, tool: str, **args: Any) -> Any:
    env = call(state, tool, **args)
    assert env["success"], env
    return env["data"]


def project(state: TrackerState, key: str) -> dict[str, Any]:
    return next(p for p in data(state, "list_projects", limit=200)["items"] if p["key"] == key)


def tasks(state: TrackerState, **filters: Any) -> list[dict[str, Any]]:
    return data(state, "list_tasks", limit=200, **filters)["items"]


def blocked_task(state: TrackerState) -> dict[str, Any]:
    return next(t for t in tasks(state, project_id=project(state, "OPS")["id"]) if t["blocked_by"])


def new_task(state: TrackerState, key: str = "OPS", **extra: Any) -> dict[str, Any]:
    return data(state, "create_task", project_id=project(state, key)["id"], title="Label the boxes", **extra)


def test_list_tasks_filters_by_project_and_paginates(state: TrackerState) -> None:
    ops = project(state, "OPS")["id"]
    everything = tasks(state, project_id=ops)
    assert len(everything) >= 5 and all(t["project_id"] == ops for t in everything)
    page = data(state, "list_tasks", project_id=ops, limit=2)
    assert page["total"] == len(everything) and page["next_offset"] == 2
    rest = data(state, "list_tasks", project_id=ops, offset=2, limit=200)
    assert [t["id"] for t in page["items"] + rest["items"]] == [t["id"] for t in everything]


def test_list_tasks_overdue_only(state: TrackerState) -> None:
    overdue = tasks(state, overdue_only=True)
    today = state.clock.date()
    assert overdue and all(dt.date.fromisoformat(t["due_date"]) < today for t in overdue)
    assert all(t["status"] not in ("done", "cancelled") for t in overdue)


def test_list_tasks_by_assignee_and_parent(state: TrackerState) -> None:
    mine = tasks(state, assignee=WORLD.me.email)
    assert mine and all(t["assignee"] == WORLD.me.email for t in mine)
    parent = next(t for t in tasks(state) if t["parent_id"])["parent_id"]
    assert all(t["parent_id"] == parent for t in tasks(state, parent_id=parent))


def test_list_projects_archived(state: TrackerState) -> None:
    archived = data(state, "list_projects", status="archived")["items"]
    assert {p["key"] for p in archived} >= {"OFF", "ONBQ"} and all(p["status"] == "archived" for p in archived)


def test_get_task_and_unknown_task(state: TrackerState) -> None:
    task = tasks(state)[0]
    assert data(state, "get_task", task_id=task["id"]) == task
    env = call(state, "get_task", task_id="tsk_9999")
    assert env["error"]["code"] == 404 and "'tsk_9999'" in env["error"]["message"]


def test_create_task_numbers_it_in_its_project(state: TrackerState) -> None:
    count = len(tasks(state, project_id=project(state, "OPS")["id"]))
    task = new_task(state, assignee=WORLD.employees[13].email, labels=["ops", "move"])
    assert task["key"] == f"OPS-{count + 1}" and task["reporter"] == WORLD.me.email and task["status"] == "todo"
    assert task["labels"] == ["move", "ops"]


def test_create_task_with_unknown_assignee_is_400(state: TrackerState) -> None:
    env = call(state, "create_task", project_id=project(state, "OPS")["id"], title="X", assignee="x@other.org")
    assert env["error"]["code"] == 400 and "'assignee'" in env["error"]["message"]


def test_subtask_must_share_the_parents_project(state: TrackerState) -> None:
    parent = tasks(state, project_id=project(state, "WEB")["id"])[0]
    env = call(state, "create_task", project_id=project(state, "OPS")["id"], title="X", parent_task_id=parent["id"])
    assert env["error"]["code"] == 400 and "'parent_task_id'" in env["error"]["message"]


def test_subtask_cannot_have_subtasks(state: TrackerState) -> None:
    sub = next(t for t in tasks(state, project_id=project(state, "OPS")["id"]) if t["parent_id"])
    env = call(state, "create_task", project_id=sub["project_id"], title="X", parent_task_id=sub["id"])
    assert env["error"]["code"] == 400 and sub["id"] in env["error"]["message"]


def test_create_task_in_archived_project_is_409(state: TrackerState) -> None:
    env = call(state, "create_task", project_id=project(state, "OFF")["id"], title="X")
    assert env["error"]["code"] == 409 and "archived" in env["error"]["message"]


def test_update_task_changes_only_given_fields(state: TrackerState) -> None:
    task = new_task(state)
    updated = data(state, "update_task", task_id=task["id"], priority="urgent", due_date="2026-03-20")
    assert (updated["priority"], updated["due_date"], updated["title"]) == ("urgent", "2026-03-20", task["title"])


def test_blocked_task_cannot_be_completed(state: TrackerState) -> None:
    task = blocked_task(state)
    env = call(state, "set_task_status", task_id=task["id"], status="done")
    assert env["error"]["code"] == 409 and task["blocked_by"][0] in env["error"]["message"]


def test_blocked_task_completes_once_blocker_is_done(state: TrackerState) -> None:
    task = blocked_task(state)
    data(state, "set_task_status", task_id=task["blocked_by"][0], status="done")
    done = data(state, "set_task_status", task_id=task["id"], status="done")
    assert done["status"] == "done" and done["completed_at"]


def test_task_with_open_subtasks_cannot_be_completed(state: TrackerState) -> None:
    parent = new_task(state)
    sub = data(state, "create_task", project_id=parent["project_id"], title="Buy tape", parent_task_id=parent["id"])
    env = call(state, "set_task_status", task_id=parent["id"], status="done")
    assert env["error"]["code"] == 409 and sub["id"] in env["error"]["message"]


def test_same_status_is_409(state: TrackerState) -> None:
    task = new_task(state)
    assert call(state, "set_task_status", task_id=task["id"], status="todo")["error"]["code"] == 409


def test_add_dependency_blocks_completion(state: TrackerState) -> None:
    first, second = new_task(state), new_task(state)
    linked = data(state, "add_dependency", task_id=second["id"], blocked_by_task_id=first["id"])
    assert linked["blocked_by"] == [first["id"]]
    assert call(state, "set_task_status", task_id=second["id"], status="done")["error"]["code"] == 409


def test_dependency_cycle_is_409(state: TrackerState) -> None:
    a, b, c = new_task(state), new_task(state), new_task(state)
    data(state, "add_dependency", task_id=b["id"], blocked_by_task_id=a["id"])
    data(state, "add_dependency", task_id=c["id"], blocked_by_task_id=b["id"])
    env = call(state, "add_dependency", task_id=a["id"], blocked_by_task_id=c["id"])
    assert env["error"]["code"] == 409 and "cycle" in env["error"]["message"]


def test_task_cannot_block_itself(state: TrackerState) -> None:
    task = new_task(state)
    env = call(state, "add_dependency", task_id=task["id"], blocked_by_task_id=task["id"])
    assert env["error"]["code"] == 400 and "'blocked_by_task_id'" in env["error"]["message"]


def test_remove_dependency_unblocks(state: TrackerState) -> None:
    task = blocked_task(state)
    freed = data(state, "remove_dependency", task_id=task["id"], blocked_by_task_id=task["blocked_by"][0])
    assert freed["blocked_by"] == []
    env = call(state, "remove_dependency", task_id=task["id"], blocked_by_task_id=task["blocked_by"][0])
    assert env["error"]["code"] == 400


def test_move_task_renumbers_it_and_its_subtasks(state: TrackerState) -> None:
    parent = new_task(state)
    sub = data(state, "create_task", project_id=parent["project_id"], title="Buy tape", parent_task_id=parent["id"])
    web = project(state, "WEB")
    moved = data(state, "move_task", task_id=parent["id"], project_id=web["id"])
    assert moved["project_id"] == web["id"] and moved["key"].startswith("WEB-")
    assert data(state, "get_task", task_id=sub["id"])["key"].startswith("WEB-")


def test_move_task_to_archived_project_is_409(state: TrackerState) -> None:
    env = call(state, "move_task", task_id=new_task(state)["id"], project_id=project(state, "ONBQ")["id"])
    assert env["error"]["code"] == 409


def test_move_subtask_alone_is_409(state: TrackerState) -> None:
    sub = next(t for t in tasks(state, project_id=project(state, "OPS")["id"]) if t["parent_id"])
    env = call(state, "move_task", task_id=sub["id"], project_id=project(state, "WEB")["id"])
    assert env["error"]["code"] == 409 and sub["parent_id"] in env["error"]["message"]


def test_archive_own_project_makes_it_read_only(state: TrackerState) -> None:
    vend = project(state, "VEND")
    assert data(state, "archive_project", project_id=vend["id"])["status"] == "archived"
    task = tasks(state, project_id=vend["id"])[0]
    assert call(state, "add_comment", task_id=task["id"], body="Still there?")["error"]["code"] == 409


def test_archive_someone_elses_project_is_403(state: TrackerState) -> None:
    web = project(state, "WEB")
    env = call(state, "archive_project", project_id=web["id"])
    assert env["error"]["code"] == 403 and web["id"] in env["error"]["message"]


def test_create_project_and_duplicate_key(state: TrackerState) -> None:
    created = data(state, "create_project", name="Office party", key="PARTY", owner=WORLD.me.email)
    assert created["status"] == "active" and created["owner"] == WORLD.me.email
    env = call(state, "create_project", name="Another party", key="PARTY", owner=WORLD.me.email)
    assert env["error"]["code"] == 409 and created["id"] in env["error"]["message"]


def test_create_project_with_outside_owner_is_400(state: TrackerState) -> None:
    env = call(state, "create_project", name="X", key="XX", owner=WORLD.contacts[0].email)
    assert env["error"]["code"] == 400 and "'owner'" in env["error"]["message"]


def test_delete_own_task(state: TrackerState) -> None:
    task = new_task(state)
    data(state, "add_comment", task_id=task["id"], body="Oops, duplicate")
    assert data(state, "delete_task", task_id=task["id"])["id"] == task["id"]
    assert call(state, "get_task", task_id=task["id"])["error"]["code"] == 404


def test_delete_task_in_someone_elses_project_is_403(state: TrackerState) -> None:
    task = tasks(state, project_id=project(state, "PLAT")["id"])[0]
    env = call(state, "delete_task", task_id=task["id"])
    assert env["error"]["code"] == 403 and task["id"] in env["error"]["message"]


def test_delete_task_with_subtasks_is_409(state: TrackerState) -> None:
    parent = next(t for t in tasks(state, project_id=project(state, "OPS")["id"]) if t["parent_id"])["parent_id"]
    assert call(state, "delete_task", task_id=parent)["error"]["code"] == 409


def test_comments_are_listed_oldest_first(state: TrackerState) -> None:
    task = new_task(state)
    first = data(state, "add_comment", task_id=task["id"], body="Movers booked.")
    second = data(state, "add_comment", task_id=task["id"], body="Invoice received.")
    listed = data(state, "list_comments", task_id=task["id"])
    assert [c["id"] for c in listed] == [first["id"], second["id"]] and first["author"] == WORLD.me.email
    assert call(state, "add_comment", task_id=task["id"], body=" ")["error"]["code"] == 400


def test_list_members_counts_open_tasks(state: TrackerState) -> None:
    members = data(state, "list_members", department="Operations")
    assert members and all(m["department"] == "Operations" for m in members)
    me = next(m for m in members if m["email"] == WORLD.me.email)
    mine = [t for t in tasks(state, assignee=WORLD.me.email) if t["status"] not in ("done", "cancelled")]
    assert me["open_tasks"] == len(mine)


def test_errors_leave_state_unchanged(state: TrackerState) -> None:
    before = svc.state_hash(state)
    task = blocked_task(state)
    call(state, "set_task_status", task_id=task["id"], status="done")
    call(state, "add_dependency", task_id=task["blocked_by"][0], blocked_by_task_id=task["id"])
    call(state, "move_task", task_id=task["id"], project_id=project(state, "OFF")["id"])
    call(state, "update_task", task_id=task["id"], assignee="ghost@nowhere.io", title="New")
    assert svc.state_hash(state) == before


def test_same_seed_same_hash() -> None:
    assert svc.state_hash(svc.seed_state(7)) == svc.state_hash(svc.seed_state(7))


def test_people_and_customers_come_from_the_population(state: TrackerState) -> None:
    assert {t.assignee for t in state.tasks.values() if t.assignee} <= EMPLOYEES
    assert {t.reporter for t in state.tasks.values()} | {p.owner for p in state.projects.values()} <= EMPLOYEES
    assert {c.author for c in state.comments.values()} <= EMPLOYEES
    customers = {c.name for c in WORLD.companies if c.relation == "customer"}
    rollouts = [p.name.removeprefix("Rollout: ") for p in state.projects.values() if p.name.startswith("Rollout: ")]
    assert rollouts and set(rollouts) <= customers
