"""The directory service: people, managers, groups, duplicates and the HR/owner rules."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.directory import DirectoryState, Group, Person
from servers.native.directory import service as svc
from servers.population import Population


@pytest.fixture
def state() -> DirectoryState:
    return svc.seed_state(7)


def call(state: DirectoryState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def employee(state: DirectoryState, head: bool = False) -> Person:
    return next(
        p
        for p in state.people.values()
        if p.kind == "employee" and (p.manager_email is None) == head and p.email != state.me
    )


def external(state: DirectoryState, status: str = "active") -> Person:
    return next(p for p in state.people.values() if p.kind == "external" and p.status == status and p.email)


def owned_group(state: DirectoryState, mine: bool = True) -> Group:
    return next(g for g in state.groups.values() if (state.me in g.owners) == mine and g.kind != "security")


def duplicates(state: DirectoryState) -> list[dict[str, Any]]:
    env = call(state, "find_duplicates")
    assert env["success"], env
    return list(env["data"])


def test_search_people_filters_by_kind_and_paginates(state: DirectoryState) -> None:
    page = call(state, "search_people", kind="employee", limit=5)["data"]
    assert page["total"] == 28 and len(page["items"]) == 5 and page["next_offset"] == 5
    assert all(p["kind"] == "employee" for p in page["items"])
    names = [p["name"].lower() for p in page["items"]]
    assert names == sorted(names)


def test_search_people_hides_archived_unless_asked(state: DirectoryState) -> None:
    stale = external(state, status="archived")
    default = call(state, "search_people", query=stale.name, limit=200)["data"]["items"]
    every = call(state, "search_people", query=stale.name, include_archived=True, limit=200)["data"]["items"]
    assert stale.id not in {p["id"] for p in default} and stale.id in {p["id"] for p in every}


def test_get_person_unknown_id_is_404_quoting_it(state: DirectoryState) -> None:
    env = call(state, "get_person", person_id="per_9999")
    assert env["error"]["code"] == 404 and "'per_9999'" in env["error"]["message"]


def test_lookup_person_by_email_finds_the_employee(state: DirectoryState) -> None:
    person = employee(state)
    assert person.email is not None
    found = call(state, "lookup_person", email=person.email.upper())["data"]
    assert [p["id"] for p in found] == [person.id]


def test_lookup_person_without_email_or_phone_is_400(state: DirectoryState) -> None:
    env = call(state, "lookup_person")
    assert env["error"]["code"] == 400 and "'email'" in env["error"]["message"]


def test_list_direct_reports_of_a_department_head(state: DirectoryState) -> None:
    head = employee(state, head=True)
    reports = call(state, "list_direct_reports", manager_email=head.email)["data"]
    assert reports and all(r["manager_email"] == head.email and r["department"] == head.department for r in reports)


def test_management_chain_goes_up_to_the_head(state: DirectoryState) -> None:
    person = employee(state)
    chain = call(state, "get_management_chain", person_id=person.id)["data"]
    assert [m["email"] for m in chain] == [person.manager_email]


def test_create_contact_with_an_existing_email_is_409_and_changes_nothing(state: DirectoryState) -> None:
    taken = external(state)
    before = svc.state_hash(state)
    env = call(state, "create_contact", name="Someone", company="Acme", email=taken.email)
    assert env["error"]["code"] == 409 and repr(taken.id) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_create_contact_adds_an_external_entry(state: DirectoryState) -> None:
    company = Population.generate(7).companies[0].name
    env = call(state, "create_contact", name="Dana Reyes", company=company, phone="+14155550199")
    assert env["success"], env
    assert env["data"]["kind"] == "external" and env["data"]["status"] == "active"


def test_create_contact_without_email_or_phone_is_400(state: DirectoryState) -> None:
    env = call(state, "create_contact", name="Ghost", company="Acme")
    assert env["error"]["code"] == 400 and "'email'" in env["error"]["message"]


def test_changing_an_employees_title_is_403(state: DirectoryState) -> None:
    person = employee(state)
    before = svc.state_hash(state)
    env = call(state, "update_person", person_id=person.id, title="Chief Everything Officer")
    assert env["error"]["code"] == 403 and "HR" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_employee_phone_and_notes_can_change(state: DirectoryState) -> None:
    person = employee(state)
    env = call(state, "update_person", person_id=person.id, phone="+14155550111", notes="Prefers text.")
    assert env["data"]["phone"] == "+14155550111" and env["data"]["title"] == person.title


def test_archive_contact_removes_it_from_groups(state: DirectoryState) -> None:
    member = next(
        p
        for p in state.people.values()
        if p.kind == "external" and p.status == "active" and any(p.email in g.members for g in state.groups.values())
    )
    assert call(state, "archive_contact", person_id=member.id)["data"]["status"] == "archived"
    assert all(member.email not in g.members for g in state.groups.values())


def test_archive_an_employee_is_403(state: DirectoryState) -> None:
    assert call(state, "archive_contact", person_id=employee(state).id)["error"]["code"] == 403


def test_restore_an_active_contact_is_409(state: DirectoryState) -> None:
    assert call(state, "restore_contact", person_id=external(state).id)["error"]["code"] == 409


def test_restore_an_archived_contact(state: DirectoryState) -> None:
    stale = external(state, status="archived")
    assert call(state, "restore_contact", person_id=stale.id)["data"]["status"] == "active"


def test_find_duplicates_reports_same_email_and_similar_names(state: DirectoryState) -> None:
    reasons = {d["reason"] for d in duplicates(state)}
    assert {"same_email", "same_phone"} <= reasons
    for pair in duplicates(state):
        assert state.people[pair["duplicate_id"]].kind == "external"


def test_merge_contacts_fills_fields_and_marks_the_duplicate(state: DirectoryState) -> None:
    pair = next(d for d in duplicates(state) if d["reason"] == "same_email")
    primary, duplicate = state.people[pair["person_id"]], state.people[pair["duplicate_id"]]
    env = call(state, "merge_contacts", primary_id=primary.id, duplicate_id=duplicate.id)
    assert env["success"], env
    assert duplicate.status == "merged" and duplicate.merged_into == primary.id
    assert primary.phone is not None and duplicate.notes in primary.notes


def test_merge_people_who_are_not_duplicates_is_409(state: DirectoryState) -> None:
    first, second = [p for p in state.people.values() if p.kind == "external" and p.status == "active"][:2]
    before = svc.state_hash(state)
    env = call(state, "merge_contacts", primary_id=first.id, duplicate_id=second.id)
    assert env["error"]["code"] == 409 and svc.state_hash(state) == before


def test_merging_an_employee_away_is_403(state: DirectoryState) -> None:
    pair = next(d for d in duplicates(state) if state.people[d["person_id"]].kind == "employee")
    env = call(state, "merge_contacts", primary_id=pair["duplicate_id"], duplicate_id=pair["person_id"])
    assert env["error"]["code"] == 403


def test_merge_into_itself_is_400_naming_duplicate_id(state: DirectoryState) -> None:
    person = external(state)
    env = call(state, "merge_contacts", primary_id=person.id, duplicate_id=person.id)
    assert env["error"]["code"] == 400 and "'duplicate_id'" in env["error"]["message"]


def test_set_favourite_stars_an_entry(state: DirectoryState) -> None:
    person = next(p for p in state.people.values() if not p.starred and p.status == "active")
    assert call(state, "set_favourite", person_id=person.id)["data"]["starred"] is True
    starred = call(state, "search_people", starred_only=True, limit=200)["data"]["items"]
    assert person.id in {p["id"] for p in starred}


def test_list_groups_by_member(state: DirectoryState) -> None:
    person = employee(state)
    groups = call(state, "list_groups", member_email=person.email, limit=200)["data"]["items"]
    assert groups and all(person.email in g["members"] for g in groups)


def test_add_members_to_a_group_the_user_owns(state: DirectoryState) -> None:
    group = owned_group(state)
    newcomer = next(p for p in state.people.values() if p.status == "active" and p.email not in group.members)
    env = call(state, "add_group_members", group_id=group.id, emails=[newcomer.email])
    assert env["data"]["members"][-1] == newcomer.email


def test_add_members_to_a_group_of_someone_else_is_403(state: DirectoryState) -> None:
    group = owned_group(state, mine=False)
    env = call(state, "add_group_members", group_id=group.id, emails=[employee(state).email])
    assert env["error"]["code"] == 403


def test_add_an_existing_member_is_409(state: DirectoryState) -> None:
    group = owned_group(state)
    assert call(state, "add_group_members", group_id=group.id, emails=[group.members[0]])["error"]["code"] == 409


def test_add_an_unknown_address_is_404_quoting_it(state: DirectoryState) -> None:
    env = call(state, "add_group_members", group_id=owned_group(state).id, emails=["nobody@example.com"])
    assert env["error"]["code"] == 404 and "'nobody@example.com'" in env["error"]["message"]


def test_security_groups_take_employees_only(state: DirectoryState) -> None:
    env = call(
        state, "create_group", name="Vault", email="vault@example.com", kind="security", members=[external(state).email]
    )
    assert env["error"]["code"] == 403


def test_create_group_with_a_taken_address_is_409(state: DirectoryState) -> None:
    taken = next(iter(state.groups.values()))
    env = call(state, "create_group", name="Copy", email=taken.email)
    assert env["error"]["code"] == 409 and repr(taken.id) in env["error"]["message"]


def test_remove_a_group_member_who_is_not_in_it_is_404(state: DirectoryState) -> None:
    env = call(state, "remove_group_member", group_id=owned_group(state).id, email="nobody@example.com")
    assert env["error"]["code"] == 404


def test_directory_people_come_from_the_population(state: DirectoryState) -> None:
    world = Population.generate(7)
    by_email = {p.email: p for p in world.people}
    for person in world.employees:
        entry = next(p for p in state.people.values() if p.email == person.email)
        assert entry.kind == "employee" and entry.name == person.name and entry.department == person.department
    emails = [p.email for p in state.people.values() if p.email]
    assert sum(e in by_email for e in emails) >= len(emails) - 2
    managers = {p.manager_email for p in state.people.values() if p.manager_email}
    assert managers <= {p.email for p in world.employees}
