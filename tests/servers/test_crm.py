"""CRM service: listings, the deal pipeline's rules, permissions and cross-service consistency."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.crm import CrmState
from servers.native.crm import service as svc
from servers.population import Population


@pytest.fixture
def state() -> CrmState:
    return svc.seed_state(7)


def call(state: CrmState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def data(state: CrmState, tool: str, **args: Any) -> Any:
    env = call(state, tool, **args)
    assert env["success"], env
    return env["data"]


def first_deal(state: CrmState, **filters: Any) -> dict[str, Any]:
    return data(state, "list_deals", limit=200, **filters)["items"][0]


def my_open_deal(state: CrmState, amount: float = 500.0) -> dict[str, Any]:
    account = data(state, "list_accounts", type="customer", status="active", limit=1)["items"][0]
    return data(
        state,
        "create_deal",
        account_id=account["id"],
        title="Test deal",
        owner=state.me,
        close_date="2026-04-30",
        amount=amount,
    )


def test_list_deals_filters_by_stage_and_paginates(state: CrmState) -> None:
    everything = data(state, "list_deals", stage="proposal", limit=200)
    assert everything["total"] >= 3 and all(d["stage"] == "proposal" for d in everything["items"])
    page = data(state, "list_deals", stage="proposal", limit=2)
    assert len(page["items"]) == 2 and page["next_offset"] == 2
    rest = data(state, "list_deals", stage="proposal", offset=2, limit=200)
    assert [d["id"] for d in page["items"] + rest["items"]] == [d["id"] for d in everything["items"]]


def test_list_accounts_query_matches_name(state: CrmState) -> None:
    company = Population.generate(7).companies[0].name
    found = data(state, "list_accounts", query=company.split(",")[0].split("-")[0])["items"]
    assert company in [a["name"] for a in found]


def test_list_contacts_by_account(state: CrmState) -> None:
    deal = first_deal(state, open_only=True)
    contacts = data(state, "list_contacts", account_id=deal["account_id"], limit=200)["items"]
    assert contacts and all(c["account_id"] == deal["account_id"] for c in contacts)


def test_get_deal_returns_the_deal(state: CrmState) -> None:
    deal = first_deal(state)
    assert data(state, "get_deal", deal_id=deal["id"]) == deal


def test_get_unknown_deal_is_404_quoting_id(state: CrmState) -> None:
    env = call(state, "get_deal", deal_id="deal_9999")
    assert env["error"]["code"] == 404 and "'deal_9999'" in env["error"]["message"]


def test_create_deal_uses_account_currency(state: CrmState) -> None:
    deal = my_open_deal(state)
    account = data(state, "get_account", account_id=deal["account_id"])
    assert deal["currency"] == account["currency"] and deal["stage"] == "prospecting"
    assert deal["probability"] == 10


def test_create_deal_with_unknown_owner_is_400_naming_owner(state: CrmState) -> None:
    account = data(state, "list_accounts", status="active", limit=1)["items"][0]
    env = call(
        state, "create_deal", account_id=account["id"], title="X", owner="nobody@example.com", close_date="2026-05-01"
    )
    assert env["error"]["code"] == 400 and "'owner'" in env["error"]["message"]


def test_create_deal_cannot_start_won(state: CrmState) -> None:
    account = data(state, "list_accounts", status="active", limit=1)["items"][0]
    env = call(
        state,
        "create_deal",
        account_id=account["id"],
        title="X",
        owner=state.me,
        close_date="2026-05-01",
        amount=10,
        stage="won",
    )
    assert env["error"]["code"] == 400 and "'stage'" in env["error"]["message"]


def test_create_deal_with_contact_of_other_account_is_400(state: CrmState) -> None:
    accounts = data(state, "list_accounts", type="customer", status="active", limit=2)["items"]
    contact = data(state, "list_contacts", account_id=accounts[1]["id"])["items"][0]
    env = call(
        state,
        "create_deal",
        account_id=accounts[0]["id"],
        title="X",
        owner=state.me,
        close_date="2026-05-01",
        contact_id=contact["id"],
    )
    assert env["error"]["code"] == 400 and "'contact_id'" in env["error"]["message"]


def test_create_account_with_taken_name_is_409(state: CrmState) -> None:
    account = data(state, "list_accounts", status="active", limit=1)["items"][0]
    env = call(
        state,
        "create_account",
        name=account["name"].upper(),
        type="prospect",
        owner=state.me,
        domain="dup.example.com",
        industry="Retail",
        country="US",
        currency="USD",
    )
    assert env["error"]["code"] == 409


def test_create_account_then_archive_it(state: CrmState) -> None:
    account = data(
        state,
        "create_account",
        name="Brand New Ltd",
        type="prospect",
        owner=state.me,
        domain="brandnew.com",
        industry="Retail",
        country="GB",
        currency="GBP",
    )
    archived = data(state, "archive_account", account_id=account["id"])
    assert archived["status"] == "archived"
    env = call(state, "create_contact", account_id=account["id"], name="A B", email="a.b@brandnew.com", title="CEO")
    assert env["error"]["code"] == 409


def test_archive_account_with_open_deals_is_409(state: CrmState) -> None:
    deal = first_deal(state, open_only=True)
    env = call(state, "archive_account", account_id=deal["account_id"])
    assert env["error"]["code"] == 409 and deal["id"] in env["error"]["message"]


def test_update_account_reassigns_owner(state: CrmState) -> None:
    account = data(state, "list_accounts", status="active", limit=1)["items"][0]
    seller = next(p.email for p in Population.generate(7).employees if p.department == "Sales")
    assert data(state, "update_account", account_id=account["id"], owner=seller)["owner"] == seller


def test_create_contact_with_existing_email_is_409(state: CrmState) -> None:
    contact = data(state, "list_contacts", limit=1)["items"][0]
    env = call(
        state,
        "create_contact",
        account_id=contact["account_id"],
        name="Someone Else",
        email=contact["email"],
        title="Buyer",
    )
    assert env["error"]["code"] == 409 and contact["id"] in env["error"]["message"]


def test_move_deal_stage_forward(state: CrmState) -> None:
    deal = first_deal(state, stage="proposal")
    moved = data(state, "move_deal_stage", deal_id=deal["id"], stage="negotiation")
    assert moved["stage"] == "negotiation" and moved["probability"] == 75


def test_close_deal_won_sets_closed_at(state: CrmState) -> None:
    deal = my_open_deal(state, amount=1200)
    won = data(state, "move_deal_stage", deal_id=deal["id"], stage="won")
    assert won["stage"] == "won" and won["probability"] == 100 and won["closed_at"]


def test_close_won_without_amount_is_400(state: CrmState) -> None:
    deal = next(d for d in data(state, "list_deals", open_only=True, limit=200)["items"] if d["amount"] == 0)
    env = call(state, "move_deal_stage", deal_id=deal["id"], stage="won")
    assert env["error"]["code"] == 400 and deal["id"] in env["error"]["message"]


def test_close_lost_needs_reason(state: CrmState) -> None:
    deal = first_deal(state, open_only=True)
    env = call(state, "move_deal_stage", deal_id=deal["id"], stage="lost")
    assert env["error"]["code"] == 400 and "'lost_reason'" in env["error"]["message"]
    lost = data(state, "move_deal_stage", deal_id=deal["id"], stage="lost", lost_reason="Chose a competitor")
    assert lost["lost_reason"] == "Chose a competitor"


def test_closed_deal_cannot_move_back(state: CrmState) -> None:
    deal = first_deal(state, stage="lost")
    env = call(state, "move_deal_stage", deal_id=deal["id"], stage="negotiation")
    assert env["error"]["code"] == 409 and deal["id"] in env["error"]["message"]


def test_update_won_deal_is_409(state: CrmState) -> None:
    deal = first_deal(state, stage="won")
    assert call(state, "update_deal", deal_id=deal["id"], amount=1)["error"]["code"] == 409


def test_update_deal_changes_amount_and_reference(state: CrmState) -> None:
    deal = first_deal(state, open_only=True)
    updated = data(state, "update_deal", deal_id=deal["id"], amount=999.5, reference="PO-12345")
    assert updated["amount"] == 999.5 and updated["reference"] == "PO-12345" and updated["title"] == deal["title"]


def test_delete_own_deal(state: CrmState) -> None:
    deal = my_open_deal(state)
    assert data(state, "delete_deal", deal_id=deal["id"])["id"] == deal["id"]
    assert call(state, "get_deal", deal_id=deal["id"])["error"]["code"] == 404


def test_delete_someone_elses_deal_is_403(state: CrmState) -> None:
    deal = next(d for d in data(state, "list_deals", limit=200)["items"] if d["owner"] != state.me)
    env = call(state, "delete_deal", deal_id=deal["id"])
    assert env["error"]["code"] == 403 and deal["id"] in env["error"]["message"]


def test_delete_won_deal_is_409(state: CrmState) -> None:
    deal = my_open_deal(state, amount=100)
    data(state, "move_deal_stage", deal_id=deal["id"], stage="won")
    assert call(state, "delete_deal", deal_id=deal["id"])["error"]["code"] == 409


def test_log_activity_on_deal_is_listed(state: CrmState) -> None:
    deal = first_deal(state, open_only=True)
    activity = data(state, "log_activity", kind="meeting", subject="Kick-off", deal_id=deal["id"])
    assert activity["account_id"] == deal["account_id"] and activity["author"] == state.me
    listed = data(state, "list_activities", deal_id=deal["id"], limit=200)["items"]
    assert listed[0]["id"] == activity["id"] and all(a["deal_id"] == deal["id"] for a in listed)


def test_calling_an_opted_out_contact_is_403(state: CrmState) -> None:
    contact = next(c for c in state.contacts.values() if c.do_not_contact)
    env = call(state, "log_activity", kind="call", subject="Cold call", contact_id=contact.id)
    assert env["error"]["code"] == 403 and repr(contact.id) in env["error"]["message"]
    assert data(state, "log_activity", kind="note", subject="Opted out", contact_id=contact.id)["kind"] == "note"


def test_log_activity_needs_a_target(state: CrmState) -> None:
    env = call(state, "log_activity", kind="note", subject="Floating note")
    assert env["error"]["code"] == 400 and "'deal_id'" in env["error"]["message"]


def test_errors_leave_state_unchanged(state: CrmState) -> None:
    before = svc.state_hash(state)
    lost = first_deal(state, stage="lost")
    call(state, "move_deal_stage", deal_id=lost["id"], stage="won")
    call(state, "update_deal", deal_id=first_deal(state, open_only=True)["id"], owner="ghost@nowhere.io", amount=5)
    call(
        state,
        "create_deal",
        account_id="acc_0001",
        title="X",
        owner=state.me,
        close_date="2026-05-01",
        contact_id="con_9999",
    )
    assert svc.state_hash(state) == before


def test_same_seed_same_hash() -> None:
    assert svc.state_hash(svc.seed_state(7)) == svc.state_hash(svc.seed_state(7))
    assert svc.state_hash(svc.seed_state(7)) != svc.state_hash(svc.seed_state(8))


def test_people_and_companies_come_from_the_population(state: CrmState) -> None:
    world = Population.generate(7)
    employees = {p.email for p in world.employees}
    assert {d.owner for d in state.deals.values()} <= employees
    assert {a.owner for a in state.accounts.values()} <= employees
    assert {c.email for c in state.contacts.values()} == {p.email for p in world.contacts}
    names = {a.name for a in state.accounts.values()}
    assert {c.name for c in world.companies} <= names
    for contact in state.contacts.values():
        person = next(p for p in world.contacts if p.email == contact.email)
        assert (contact.name, contact.phone, contact.company) == (person.name, person.phone, person.company)
