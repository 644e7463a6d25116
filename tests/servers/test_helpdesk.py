"""Helpdesk service: ticket listings, the status workflow, SLAs, escalation, merging, permissions."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from servers.native.helpdesk import HelpdeskState
from servers.native.helpdesk import service as svc
from servers.population import Population

WORLD = Population.generate(7)
SUPPORT = [p.email for p in WORLD.employees if p.department == "Support"]


@pytest.fixture
def state() -> HelpdeskState:
    return svc.seed_state(7)


def call(state: HelpdeskState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def data(state: HelpdeskState, tool: str, **args: Any) -> Any:
    env = call(state, tool, **args)
    assert env["success"], env
    return env["data"]


def tickets(state: HelpdeskState, **filters: Any) -> list[dict[str, Any]]:
    return data(state, "list_tickets", limit=200, **filters)["items"]


def new_ticket(state: HelpdeskState, **extra: Any) -> dict[str, Any]:
    requester = WORLD.contacts[0].email
    return data(state, "create_ticket", requester=requester, subject="Printer jam", description="It jams.", **extra)


def duplicate_pair(state: HelpdeskState) -> tuple[dict[str, Any], dict[str, Any]]:
    dup = next(t for t in tickets(state, status="open") if t["subject"].startswith("URGENT: "))
    original = next(
        t for t in tickets(state, requester=dup["requester"]) if t["subject"] == dup["subject"].removeprefix("URGENT: ")
    )
    return dup, original


def test_list_tickets_filters_by_status_and_paginates(state: HelpdeskState) -> None:
    everything = tickets(state, status="open")
    assert len(everything) >= 5 and all(t["status"] == "open" for t in everything)
    page = data(state, "list_tickets", status="open", limit=3)
    assert page["total"] == len(everything) and page["next_offset"] == 3
    rest = data(state, "list_tickets", status="open", offset=3, limit=200)
    assert [t["id"] for t in page["items"] + rest["items"]] == [t["id"] for t in everything]


def test_list_tickets_breached_only(state: HelpdeskState) -> None:
    breached = tickets(state, breached_only=True)
    assert breached and all(t["status"] in ("open", "pending") for t in breached)
    assert all(dt.datetime.fromisoformat(t["sla_due_at"]) < state.clock for t in breached)


def test_list_tickets_unassigned_and_query(state: HelpdeskState) -> None:
    assert all(t["assignee"] is None for t in tickets(state, unassigned_only=True))
    found = tickets(state, query="invoice")
    assert found and all("invoice" in (t["subject"] + t["description"]).lower() for t in found)


def test_get_ticket_returns_the_ticket(state: HelpdeskState) -> None:
    ticket = tickets(state)[0]
    assert data(state, "get_ticket", ticket_id=ticket["id"]) == ticket


def test_get_unknown_ticket_is_404_quoting_id(state: HelpdeskState) -> None:
    env = call(state, "get_ticket", ticket_id="tkt_9999")
    assert env["error"]["code"] == 404 and "'tkt_9999'" in env["error"]["message"]


def test_create_ticket_sets_sla_from_priority(state: HelpdeskState) -> None:
    ticket = new_ticket(state, priority="high", tags=["hardware"], product_sku="SKU-103")
    created, due = dt.datetime.fromisoformat(ticket["created_at"]), dt.datetime.fromisoformat(ticket["sla_due_at"])
    assert ticket["status"] == "open" and due - created == dt.timedelta(hours=8)
    assert ticket["requester_name"] == WORLD.contacts[0].name and ticket["company"] == WORLD.contacts[0].company


def test_create_ticket_for_unknown_requester_is_404(state: HelpdeskState) -> None:
    env = call(state, "create_ticket", requester="stranger@nowhere.org", subject="Hi", description="?")
    assert env["error"]["code"] == 404 and "'stranger@nowhere.org'" in env["error"]["message"]


def test_update_ticket_priority_recomputes_sla(state: HelpdeskState) -> None:
    ticket = new_ticket(state)
    updated = data(state, "update_ticket", ticket_id=ticket["id"], priority="urgent", tags=["access", "vip"])
    created, due = dt.datetime.fromisoformat(updated["created_at"]), dt.datetime.fromisoformat(updated["sla_due_at"])
    assert due - created == dt.timedelta(hours=4) and updated["tags"] == ["access", "vip"]


def test_closed_ticket_cannot_be_changed(state: HelpdeskState) -> None:
    closed = tickets(state, status="closed")[0]
    for tool, args in (
        ("update_ticket", {"subject": "New"}),
        ("assign_ticket", {"assignee": SUPPORT[0]}),
        ("add_comment", {"body": "Hello again"}),
        ("set_ticket_status", {"status": "open"}),
    ):
        env = call(state, tool, ticket_id=closed["id"], **args)
        assert env["error"]["code"] == 409 and closed["id"] in env["error"]["message"], tool


def test_assign_ticket_to_support_agent(state: HelpdeskState) -> None:
    ticket = tickets(state, unassigned_only=True)[0]
    assert data(state, "assign_ticket", ticket_id=ticket["id"], assignee=SUPPORT[1])["assignee"] == SUPPORT[1]


def test_assign_ticket_outside_support_is_403(state: HelpdeskState) -> None:
    ticket = tickets(state, status="open")[0]
    env = call(state, "assign_ticket", ticket_id=ticket["id"], assignee=WORLD.me.email)
    assert env["error"]["code"] == 403 and WORLD.me.email in env["error"]["message"]


def test_status_workflow_open_pending_solved_closed(state: HelpdeskState) -> None:
    ticket = new_ticket(state)
    data(state, "assign_ticket", ticket_id=ticket["id"], assignee=SUPPORT[0])
    for status in ("pending", "open", "solved", "closed"):
        assert data(state, "set_ticket_status", ticket_id=ticket["id"], status=status)["status"] == status


def test_open_ticket_cannot_jump_to_closed(state: HelpdeskState) -> None:
    ticket = new_ticket(state)
    env = call(state, "set_ticket_status", ticket_id=ticket["id"], status="closed")
    assert env["error"]["code"] == 409 and "'closed'" in env["error"]["message"]


def test_solving_needs_an_assignee(state: HelpdeskState) -> None:
    ticket = tickets(state, unassigned_only=True, status="open")[0]
    env = call(state, "set_ticket_status", ticket_id=ticket["id"], status="solved")
    assert env["error"]["code"] == 409 and "assign" in env["error"]["message"]


def test_internal_note_is_hidden_from_public_listing(state: HelpdeskState) -> None:
    ticket = new_ticket(state)
    data(state, "add_comment", ticket_id=ticket["id"], body="Customer is on the old firmware.", public=False)
    reply = data(state, "add_comment", ticket_id=ticket["id"], body="Please update the firmware.")
    assert reply["author"] == WORLD.me.email and reply["public"] is True
    assert [c["id"] for c in data(state, "list_comments", ticket_id=ticket["id"], public_only=True)] == [reply["id"]]
    assert len(data(state, "list_comments", ticket_id=ticket["id"])) == 2


def test_empty_comment_is_400_naming_body(state: HelpdeskState) -> None:
    env = call(state, "add_comment", ticket_id=new_ticket(state)["id"], body="   ")
    assert env["error"]["code"] == 400 and "'body'" in env["error"]["message"]


def test_escalate_raises_priority_and_hands_to_lead(state: HelpdeskState) -> None:
    ticket = new_ticket(state, priority="normal")
    escalated = data(state, "escalate_ticket", ticket_id=ticket["id"], reason="Customer threatens to churn")
    lead = next(p.email for p in WORLD.employees if p.department == "Support" and p.manager_id is None)
    assert escalated["priority"] == "high" and escalated["escalated"] and escalated["assignee"] == lead
    notes = data(state, "list_comments", ticket_id=ticket["id"])
    assert notes[-1]["public"] is False and "churn" in notes[-1]["body"]


def test_escalate_twice_is_409(state: HelpdeskState) -> None:
    ticket = new_ticket(state)
    data(state, "escalate_ticket", ticket_id=ticket["id"], reason="VIP")
    assert call(state, "escalate_ticket", ticket_id=ticket["id"], reason="Again")["error"]["code"] == 409


def test_escalate_solved_ticket_is_409(state: HelpdeskState) -> None:
    ticket = tickets(state, status="solved")[0]
    assert call(state, "escalate_ticket", ticket_id=ticket["id"], reason="Late")["error"]["code"] == 409


def test_escalate_without_reason_is_400(state: HelpdeskState) -> None:
    env = call(state, "escalate_ticket", ticket_id=new_ticket(state)["id"], reason=" ")
    assert env["error"]["code"] == 400 and "'reason'" in env["error"]["message"]


def test_merge_duplicate_closes_it(state: HelpdeskState) -> None:
    dup, original = duplicate_pair(state)
    target = data(state, "merge_tickets", source_ticket_id=dup["id"], target_ticket_id=original["id"])
    assert target["id"] == original["id"]
    source = data(state, "get_ticket", ticket_id=dup["id"])
    assert source["status"] == "closed" and source["merged_into"] == original["id"]
    assert any(dup["id"] in c["body"] for c in data(state, "list_comments", ticket_id=original["id"]))


def test_merge_tickets_of_different_requesters_is_409(state: HelpdeskState) -> None:
    dup, _ = duplicate_pair(state)
    other = next(t for t in tickets(state, status="open") if t["requester"] != dup["requester"])
    env = call(state, "merge_tickets", source_ticket_id=dup["id"], target_ticket_id=other["id"])
    assert env["error"]["code"] == 409 and "requesters" in env["error"]["message"]


def test_merge_ticket_into_itself_is_400(state: HelpdeskState) -> None:
    dup, _ = duplicate_pair(state)
    env = call(state, "merge_tickets", source_ticket_id=dup["id"], target_ticket_id=dup["id"])
    assert env["error"]["code"] == 400 and "'target_ticket_id'" in env["error"]["message"]


def test_delete_spam_ticket(state: HelpdeskState) -> None:
    spam = tickets(state, tag="spam")[0]
    assert data(state, "delete_ticket", ticket_id=spam["id"])["id"] == spam["id"]
    assert call(state, "list_comments", ticket_id=spam["id"])["error"]["code"] == 404


def test_delete_real_ticket_is_403(state: HelpdeskState) -> None:
    ticket = tickets(state, status="open", tag="billing")[0]
    env = call(state, "delete_ticket", ticket_id=ticket["id"])
    assert env["error"]["code"] == 403 and ticket["id"] in env["error"]["message"]


def test_agents_and_sla_report_agree_with_tickets(state: HelpdeskState) -> None:
    agents = data(state, "list_agents")
    assert sorted(a["email"] for a in agents) == sorted(SUPPORT)
    assert sum(a["breached"] for a in agents) == len([t for t in tickets(state, breached_only=True) if t["assignee"]])
    report = data(state, "sla_report")
    assert sum(line["breached"] for line in report) == len(tickets(state, breached_only=True))
    assert {line["priority"]: line["target_hours"] for line in report}["urgent"] == 4


def test_list_users_by_role(state: HelpdeskState) -> None:
    agents = data(state, "list_users", role="agent", limit=200)["items"]
    assert agents and all(u["email"] in SUPPORT for u in agents)
    assert data(state, "list_users", query=WORLD.contacts[1].email)["items"][0]["name"] == WORLD.contacts[1].name


def test_errors_leave_state_unchanged(state: HelpdeskState) -> None:
    before = svc.state_hash(state)
    dup, _ = duplicate_pair(state)
    call(state, "merge_tickets", source_ticket_id=dup["id"], target_ticket_id=tickets(state, status="closed")[0]["id"])
    call(state, "assign_ticket", ticket_id=dup["id"], assignee=WORLD.me.email)
    call(state, "escalate_ticket", ticket_id=dup["id"], reason="")
    call(state, "create_ticket", requester="x@y.io", subject="s", description="d")
    assert svc.state_hash(state) == before


def test_same_seed_same_hash() -> None:
    assert svc.state_hash(svc.seed_state(7)) == svc.state_hash(svc.seed_state(7))


def test_people_come_from_the_population(state: HelpdeskState) -> None:
    people = {p.email: p for p in WORLD.people}
    assert {t.assignee for t in state.tickets.values() if t.assignee} <= set(SUPPORT)
    for ticket in state.tickets.values():
        if "spam" not in ticket.tags:
            person = people[ticket.requester]
            assert ticket.requester_name == person.name
            assert ticket.company == (None if person.is_employee else person.company)
    skus = {p.sku for p in WORLD.products}
    assert {t.product_sku for t in state.tickets.values() if t.product_sku} <= skus
    assert {c.author for c in state.comments.values()} <= set(SUPPORT)
