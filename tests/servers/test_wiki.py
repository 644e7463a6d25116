"""Behaviour of the wiki service, through its public tool interface."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.wiki import WikiState, service
from servers.population import Population

svc = service


@pytest.fixture
def state() -> WikiState:
    return svc.seed_state(7)


def call(state: WikiState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def page(state: WikiState, title: str, status: str = "current") -> dict[str, Any]:
    """The visible page titled exactly ``title``, found through list_pages."""
    items = call(state, "list_pages", title_query=title, status=status, limit=200)["data"]["items"]
    return next(p for p in items if p["title"] == title)


def test_list_spaces_flags_restricted_spaces(state: WikiState) -> None:
    spaces = {s["key"]: s for s in call(state, "list_spaces")["data"]}
    assert not spaces["OPS"]["restricted"] and spaces["HR"]["restricted"]
    assert state.me in spaces["FIN"]["members"] and state.me not in spaces["HR"]["members"]


def test_list_pages_filters_by_space_and_label_and_paginates(state: WikiState) -> None:
    env = call(state, "list_pages", space_key="OPS", label="vendor", limit=2)
    data = env["data"]
    assert data["total"] >= 3 and len(data["items"]) == 2 and data["next_offset"] == 2
    assert all(p["space_key"] == "OPS" and "vendor" in p["labels"] and "body" not in p for p in data["items"])


def test_list_pages_hides_restricted_spaces_of_others(state: WikiState) -> None:
    spaces = {p["space_key"] for p in call(state, "list_pages", limit=200)["data"]["items"]}
    assert "FIN" in spaces and "HR" not in spaces and "LEGAL" not in spaces


def test_list_pages_of_a_restricted_space_is_403(state: WikiState) -> None:
    env = call(state, "list_pages", space_key="HR")
    assert env["error"]["code"] == 403 and "'HR'" in env["error"]["message"]


def test_list_archived_pages(state: WikiState) -> None:
    items = call(state, "list_pages", status="archived", limit=200)["data"]["items"]
    assert items and all(p["status"] == "archived" for p in items)


def test_search_pages_finds_body_text_with_an_excerpt(state: WikiState) -> None:
    hits = call(state, "search_pages", query="Finance approval")["data"]["items"]
    assert hits[0]["title"] == "Procurement policy" and "Finance approval" in hits[0]["excerpt"]


def test_search_excludes_archived_unless_asked(state: WikiState) -> None:
    titles = [h["title"] for h in call(state, "search_pages", query="procurement policy")["data"]["items"]]
    everything = call(state, "search_pages", query="procurement policy", include_archived=True)["data"]["items"]
    assert "Procurement policy (2023)" not in titles
    assert "Procurement policy (2023)" in [h["title"] for h in everything]


def test_get_page_returns_the_body(state: WikiState) -> None:
    env = call(state, "get_page", page_id=page(state, "Procurement policy")["id"])
    assert "5000 USD" in env["data"]["body"]


def test_get_unknown_page_is_404_quoting_the_id(state: WikiState) -> None:
    env = call(state, "get_page", page_id="pg_9999")
    assert env["error"]["code"] == 404 and "'pg_9999'" in env["error"]["message"]


def test_get_page_in_a_restricted_space_is_403(state: WikiState) -> None:
    hidden = next(p for p in state.pages.values() if p.space_key == "HR")
    assert call(state, "get_page", page_id=hidden.id)["error"]["code"] == 403


def test_create_page_under_a_parent(state: WikiState) -> None:
    parent = page(state, "Vendor management")
    env = call(
        state, "create_page", space_key="OPS", title="Vendor: Acme", body="New supplier.", parent_id=parent["id"]
    )
    assert env["success"] and env["data"]["author"] == state.me and env["data"]["version"] == 1
    children = call(state, "list_pages", parent_id=parent["id"], limit=200)["data"]["items"]
    assert env["data"]["id"] in [c["id"] for c in children]


def test_create_page_with_a_taken_title_is_409(state: WikiState) -> None:
    env = call(state, "create_page", space_key="TEAM", title="Expense policy", body="x")
    assert env["error"]["code"] == 409 and "'Expense policy'" in env["error"]["message"]


def test_create_page_with_a_parent_in_another_space_is_400(state: WikiState) -> None:
    parent = page(state, "Company handbook")
    env = call(state, "create_page", space_key="OPS", title="Stray", body="x", parent_id=parent["id"])
    assert env["error"]["code"] == 400 and "parent_id" in env["error"]["message"]


def test_create_page_in_a_restricted_space_is_403(state: WikiState) -> None:
    assert call(state, "create_page", space_key="LEGAL", title="Note", body="x")["error"]["code"] == 403


def test_create_page_with_a_bad_label_is_400_naming_the_field(state: WikiState) -> None:
    env = call(state, "create_page", space_key="OPS", title="T", body="x", labels=["Not A Tag"])
    assert env["error"]["code"] == 400 and "labels" in env["error"]["message"]


def test_update_page_saves_a_version(state: WikiState) -> None:
    current = call(state, "get_page", page_id=page(state, "Travel policy")["id"])["data"]
    env = call(state, "update_page", page_id=current["id"], version=current["version"], body="Economy under 8 hours.")
    assert env["data"]["version"] == current["version"] + 1 and env["data"]["last_editor"] == state.me
    versions = call(state, "list_page_versions", page_id=current["id"])["data"]
    assert versions[0]["body"] == "Economy under 8 hours." and len(versions) == env["data"]["version"]


def test_update_with_a_stale_version_is_409(state: WikiState) -> None:
    target = page(state, "Expense policy")
    env = call(state, "update_page", page_id=target["id"], version=target["version"] - 1, body="x")
    assert target["version"] > 1 and env["error"]["code"] == 409


def test_update_an_archived_page_is_409(state: WikiState) -> None:
    archived = page(state, "Deploy checklist (old)", status="archived")
    env = call(state, "update_page", page_id=archived["id"], version=archived["version"], body="x")
    assert env["error"]["code"] == 409 and "archived" in env["error"]["message"]


def test_restore_page_version(state: WikiState) -> None:
    target = page(state, "Expense policy")
    env = call(state, "restore_page_version", page_id=target["id"], version=1)
    assert env["data"]["version"] == target["version"] + 1 and "Draft" in env["data"]["body"]


def test_restore_unknown_version_is_404(state: WikiState) -> None:
    env = call(state, "restore_page_version", page_id=page(state, "Expense policy")["id"], version=99)
    assert env["error"]["code"] == 404


def test_comment_and_resolve(state: WikiState) -> None:
    target = page(state, "Org chart")["id"]
    comment = call(state, "add_comment", page_id=target, body="Missing the new Legal head.")["data"]
    assert comment["author"] == state.me and not comment["resolved"]
    assert call(state, "resolve_comment", comment_id=comment["id"])["data"]["resolved"]
    assert call(state, "resolve_comment", comment_id=comment["id"])["error"]["code"] == 409
    assert comment["id"] not in [c["id"] for c in call(state, "list_comments", page_id=target)["data"]]
    resolved = call(state, "list_comments", page_id=target, include_resolved=True)["data"]
    assert comment["id"] in [c["id"] for c in resolved]


def test_commenting_on_an_archived_page_is_409(state: WikiState) -> None:
    archived = page(state, "Procurement policy (2023)", status="archived")
    assert call(state, "add_comment", page_id=archived["id"], body="Still valid?")["error"]["code"] == 409


def test_labels_are_added_once_and_removed(state: WikiState) -> None:
    target = page(state, "Travel policy")["id"]
    assert "approved" in call(state, "add_label", page_id=target, label="approved")["data"]["labels"]
    assert call(state, "add_label", page_id=target, label="approved")["error"]["code"] == 409
    assert "approved" not in call(state, "remove_label", page_id=target, label="approved")["data"]["labels"]
    missing = call(state, "remove_label", page_id=target, label="approved")
    assert missing["error"]["code"] == 400 and "label" in missing["error"]["message"]


def test_move_page_with_its_subtree_to_another_space(state: WikiState) -> None:
    vendors = page(state, "Vendor management")
    env = call(state, "move_page", page_id=vendors["id"], space_key="FIN")
    assert env["data"]["space_key"] == "FIN" and env["data"]["parent_id"] is None
    children = call(state, "list_pages", parent_id=vendors["id"], limit=200)["data"]["items"]
    assert children and all(c["space_key"] == "FIN" for c in children)


def test_move_page_under_its_own_child_is_409(state: WikiState) -> None:
    vendors = page(state, "Vendor management")
    child = call(state, "list_pages", parent_id=vendors["id"])["data"]["items"][0]
    env = call(state, "move_page", page_id=vendors["id"], parent_id=child["id"])
    assert env["error"]["code"] == 409


def test_move_page_into_a_restricted_space_is_403(state: WikiState) -> None:
    env = call(state, "move_page", page_id=page(state, "Travel policy")["id"], space_key="HR")
    assert env["error"]["code"] == 403


def test_archive_a_page_with_children_needs_include_children(state: WikiState) -> None:
    vendors = page(state, "Vendor management")["id"]
    refused = call(state, "archive_page", page_id=vendors)
    assert refused["error"]["code"] == 409 and "include_children" in refused["error"]["message"]
    assert call(state, "archive_page", page_id=vendors, include_children=True)["data"]["status"] == "archived"
    assert call(state, "list_pages", parent_id=vendors)["data"]["total"] == 0


def test_restore_a_page_needs_a_current_parent(state: WikiState) -> None:
    child = page(state, "Old office seating plan", status="archived")
    refused = call(state, "restore_page", page_id=child["id"])
    assert refused["error"]["code"] == 409 and repr(child["parent_id"]) in refused["error"]["message"]
    assert call(state, "restore_page", page_id=child["parent_id"])["data"]["status"] == "current"
    assert call(state, "restore_page", page_id=child["id"])["data"]["status"] == "current"


def test_restore_a_current_page_is_409(state: WikiState) -> None:
    assert call(state, "restore_page", page_id=page(state, "Travel policy")["id"])["error"]["code"] == 409


def test_errors_leave_the_state_unchanged(state: WikiState) -> None:
    before = svc.state_hash(state)
    call(state, "archive_page", page_id=page(state, "Vendor management")["id"])
    call(state, "create_page", space_key="OPS", title="Procurement policy", body="dup")
    call(state, "move_page", page_id=page(state, "Travel policy")["id"], parent_id="pg_9999")
    assert svc.state_hash(state) == before


def test_seed_is_deterministic() -> None:
    assert svc.state_hash(svc.seed_state(7)) == svc.state_hash(svc.seed_state(7))


def test_authors_commenters_and_members_are_employees(state: WikiState) -> None:
    employees = {p.email for p in Population.generate(7).employees}
    assert {p.author for p in state.pages.values()} | {v.author for v in state.versions.values()} <= employees
    assert {c.author for c in state.comments.values()} <= employees
    assert {m for s in state.spaces.values() for m in [*s.members, s.admin]} <= employees


def test_vendor_pages_quote_population_contacts(state: WikiState) -> None:
    world = Population.generate(7)
    for company in (c for c in world.companies if c.relation == "vendor"):
        body = call(state, "get_page", page_id=page(state, f"Vendor: {company.name}")["id"])["data"]["body"]
        assert any(p.email in body for p in world.contacts_of(company.id))
