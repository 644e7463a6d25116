"""Behaviour of the spreadsheet service, through its public tool interface."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.spreadsheet import SpreadsheetState, service
from servers.population import Population

svc = service


@pytest.fixture
def state() -> SpreadsheetState:
    return svc.seed_state(7)


def call(state: SpreadsheetState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def book(state: SpreadsheetState, title: str) -> dict[str, Any]:
    """The spreadsheet whose title is exactly ``title``, found by searching."""
    items = call(state, "list_spreadsheets", query=title, limit=50)["data"]["items"]
    return next(b for b in items if b["title"] == title)


def test_list_spreadsheets_filters_by_title_and_paginates(state: SpreadsheetState) -> None:
    budgets = call(state, "list_spreadsheets", query="operating budget")["data"]
    assert budgets["total"] == 3 and all("Operating Budget" in b["title"] for b in budgets["items"])
    page = call(state, "list_spreadsheets", limit=4, offset=4)["data"]
    assert len(page["items"]) == 4 and page["next_offset"] == 8 and page["total"] >= 20


def test_list_spreadsheets_filters_by_owner(state: SpreadsheetState) -> None:
    items = call(state, "list_spreadsheets", owner=state.me, limit=200)["data"]["items"]
    assert items and all(b["owner"] == state.me for b in items)


def test_list_only_shows_spreadsheets_shared_with_the_user(state: SpreadsheetState) -> None:
    for item in call(state, "list_spreadsheets", limit=200)["data"]["items"]:
        assert state.me in [item["owner"], *item["editors"], *item["viewers"]]


def test_get_spreadsheet_lists_sheets_and_protected_ranges(state: SpreadsheetState) -> None:
    budget = call(state, "get_spreadsheet", spreadsheet_id=book(state, "FY2026 Operating Budget")["id"])["data"]
    assert [s["name"] for s in budget["sheets"]] == ["Budget", "Assumptions"]
    assert {r["range"] for r in budget["protected_ranges"]} == {"A1:H1", "A1:B20"}


def test_get_unknown_spreadsheet_is_404_quoting_the_id(state: SpreadsheetState) -> None:
    env = call(state, "get_spreadsheet", spreadsheet_id="ss_9999")
    assert env["error"]["code"] == 404 and "'ss_9999'" in env["error"]["message"]


def test_get_unshared_spreadsheet_is_403(state: SpreadsheetState) -> None:
    hidden = next(b for b in state.spreadsheets.values() if state.me not in [b.owner, *b.editors, *b.viewers])
    assert call(state, "get_spreadsheet", spreadsheet_id=hidden.id)["error"]["code"] == 403


def test_read_range_trims_trailing_empty_cells(state: SpreadsheetState) -> None:
    vendors = book(state, "Approved Vendors")
    env = call(state, "read_range", spreadsheet_id=vendors["id"], sheet="Vendors", cell_range="A1:Z500")
    rows = env["data"]["rows"]
    assert rows[0][:4] == ["Company", "Service", "Contact email", "Annual amount"]
    assert all(len(row) <= 7 for row in rows) and any(rows[-1])


def test_read_unknown_sheet_is_404_naming_the_sheet(state: SpreadsheetState) -> None:
    env = call(state, "read_range", spreadsheet_id=book(state, "Inventory")["id"], sheet="Nope", cell_range="A1")
    assert env["error"]["code"] == 404 and "'Nope'" in env["error"]["message"]


def test_read_outside_the_grid_is_400(state: SpreadsheetState) -> None:
    env = call(state, "read_range", spreadsheet_id=book(state, "Inventory")["id"], sheet="Stock", cell_range="A1:AA2")
    assert env["error"]["code"] == 400 and "cell_range" in env["error"]["message"]


def test_bad_a1_range_is_400_naming_the_field(state: SpreadsheetState) -> None:
    env = call(state, "read_range", spreadsheet_id=book(state, "Inventory")["id"], sheet="Stock", cell_range="1A")
    assert env["error"]["code"] == 400 and "cell_range" in env["error"]["message"]


def test_write_range_then_read_it_back(state: SpreadsheetState) -> None:
    sid = book(state, "Team offsite budget")["id"]
    env = call(state, "write_range", spreadsheet_id=sid, sheet="Costs", start_cell="A4", values=[["Transport", "900"]])
    assert env["data"] == {"spreadsheet_id": sid, "sheet": "Costs", "range": "A4:B4", "updated_cells": 2}
    rows = call(state, "read_range", spreadsheet_id=sid, sheet="Costs", cell_range="A1:B10")["data"]["rows"]
    assert rows[-1] == ["Transport", "900"]


def test_viewer_cannot_write(state: SpreadsheetState) -> None:
    sid = book(state, "Sales pipeline Q1")["id"]
    env = call(state, "write_range", spreadsheet_id=sid, sheet="Pipeline", start_cell="A2", values=[["x"]])
    assert env["error"]["code"] == 403


def test_write_into_a_protected_range_is_403(state: SpreadsheetState) -> None:
    sid = book(state, "FY2026 Operating Budget")["id"]
    env = call(state, "write_range", spreadsheet_id=sid, sheet="Budget", start_cell="C1", values=[["Quarter 1"]])
    assert env["error"]["code"] == 403 and "protected" in env["error"]["message"]


def test_editor_can_write_outside_protected_ranges(state: SpreadsheetState) -> None:
    sid = book(state, "FY2026 Operating Budget")["id"]
    env = call(state, "write_range", spreadsheet_id=sid, sheet="Budget", start_cell="C2", values=[["5000"]])
    assert env["success"]


def test_append_row_goes_below_the_last_row(state: SpreadsheetState) -> None:
    inventory = book(state, "Inventory")["id"]
    env = call(state, "append_row", spreadsheet_id=inventory, sheet="Stock", values=["SKU-100", "Laptop Stand"])
    assert env["data"]["range"] == "A26:B26"
    found = call(state, "find_value", spreadsheet_id=inventory, query="SKU-100", sheet="Stock", exact=True)["data"]
    assert [m["cell"] for m in found] == ["A2", "A3", "A26"]


def test_append_empty_row_is_400(state: SpreadsheetState) -> None:
    env = call(state, "append_row", spreadsheet_id=book(state, "Inventory")["id"], sheet="Stock", values=["", ""])
    assert env["error"]["code"] == 400 and "values" in env["error"]["message"]


def test_clear_range_removes_values(state: SpreadsheetState) -> None:
    sid = book(state, "Team offsite budget")["id"]
    assert (
        call(state, "clear_range", spreadsheet_id=sid, sheet="Costs", cell_range="A3:B3")["data"]["updated_cells"] == 2
    )
    rows = call(state, "read_range", spreadsheet_id=sid, sheet="Costs", cell_range="A1:B10")["data"]["rows"]
    assert rows == [["Item", "Amount"], ["Venue", "4200"]]


def test_find_value_returns_the_whole_row(state: SpreadsheetState) -> None:
    vendor = next(c for c in Population.generate(7).companies if c.relation == "vendor")
    sid = book(state, "Approved Vendors")["id"]
    matches = call(state, "find_value", spreadsheet_id=sid, query=vendor.name, exact=True)["data"]
    assert matches and all(m["row_values"][0] == vendor.name and m["cell"].startswith("A") for m in matches)


def test_aggregate_column_sums_numbers_and_skips_the_header(state: SpreadsheetState) -> None:
    sid = book(state, "Team offsite budget")["id"]
    env = call(state, "aggregate_column", spreadsheet_id=sid, sheet="Costs", cell_range="B1:B10")
    assert env["data"]["value"] == 6050 and env["data"]["numeric_cells"] == 2 and env["data"]["skipped_cells"] == 1
    average = call(state, "aggregate_column", spreadsheet_id=sid, sheet="Costs", cell_range="B2:B3", function="average")
    assert average["data"]["value"] == 3025


def test_aggregate_over_several_columns_is_400(state: SpreadsheetState) -> None:
    sid = book(state, "Team offsite budget")["id"]
    env = call(state, "aggregate_column", spreadsheet_id=sid, sheet="Costs", cell_range="A1:B3")
    assert env["error"]["code"] == 400 and "cell_range" in env["error"]["message"]


def test_create_spreadsheet_with_sheets(state: SpreadsheetState) -> None:
    env = call(state, "create_spreadsheet", title="Q2 plan", sheet_names=["Plan", "Risks"])
    assert env["data"]["owner"] == state.me and [s["name"] for s in env["data"]["sheets"]] == ["Plan", "Risks"]


def test_create_spreadsheet_with_duplicate_sheet_names_is_400(state: SpreadsheetState) -> None:
    env = call(state, "create_spreadsheet", title="Q2 plan", sheet_names=["Plan", "plan"])
    assert env["error"]["code"] == 400 and "sheet_names" in env["error"]["message"]


def test_rename_spreadsheet(state: SpreadsheetState) -> None:
    sid = book(state, "Untitled spreadsheet")["id"]
    assert call(state, "rename_spreadsheet", spreadsheet_id=sid, title="Scratch")["data"]["title"] == "Scratch"


def test_share_spreadsheet_moves_a_viewer_to_editor(state: SpreadsheetState) -> None:
    vendors = book(state, "Approved Vendors")
    viewer = vendors["viewers"][0]
    env = call(state, "share_spreadsheet", spreadsheet_id=vendors["id"], email=viewer, role="editor")
    assert viewer in env["data"]["editors"] and viewer not in env["data"]["viewers"]
    again = call(state, "share_spreadsheet", spreadsheet_id=vendors["id"], email=viewer, role="editor")
    assert again["error"]["code"] == 409


def test_add_rename_and_delete_a_sheet(state: SpreadsheetState) -> None:
    sid = book(state, "Inventory")["id"]
    assert call(state, "add_sheet", spreadsheet_id=sid, name="Audit")["success"]
    renamed = call(state, "rename_sheet", spreadsheet_id=sid, sheet="Audit", new_name="Audit 2026")["data"]
    assert [s["name"] for s in renamed["sheets"]] == ["Stock", "Audit 2026"]
    deleted = call(state, "delete_sheet", spreadsheet_id=sid, sheet="Audit 2026")["data"]
    assert [s["name"] for s in deleted["sheets"]] == ["Stock"]


def test_add_sheet_with_taken_name_is_409(state: SpreadsheetState) -> None:
    env = call(state, "add_sheet", spreadsheet_id=book(state, "Inventory")["id"], name="stock")
    assert env["error"]["code"] == 409


def test_deleting_the_last_sheet_is_409(state: SpreadsheetState) -> None:
    env = call(state, "delete_sheet", spreadsheet_id=book(state, "Inventory")["id"], sheet="Stock")
    assert env["error"]["code"] == 409 and "last sheet" in env["error"]["message"]


def test_editor_cannot_delete_a_sheet_holding_protected_ranges(state: SpreadsheetState) -> None:
    sid = book(state, "FY2026 Operating Budget")["id"]
    env = call(state, "delete_sheet", spreadsheet_id=sid, sheet="Assumptions")
    assert env["error"]["code"] == 403


def test_protect_range_blocks_other_editors(state: SpreadsheetState) -> None:
    sid = book(state, "Inventory")["id"]
    env = call(state, "protect_range", spreadsheet_id=sid, sheet="Stock", cell_range="G1:G30", description="Costs")
    assert env["data"]["protected_ranges"][0]["range"] == "G1:G30"
    overlap = call(state, "protect_range", spreadsheet_id=sid, sheet="Stock", cell_range="F5:G6", description="x")
    assert overlap["error"]["code"] == 409


def test_only_the_owner_can_protect(state: SpreadsheetState) -> None:
    sid = book(state, "FY2026 Operating Budget")["id"]
    env = call(state, "protect_range", spreadsheet_id=sid, sheet="Budget", cell_range="H2:H40", description="x")
    assert env["error"]["code"] == 403


def test_unprotect_range(state: SpreadsheetState) -> None:
    vendors = book(state, "Approved Vendors")
    rule = vendors["protected_ranges"][0]["id"]
    env = call(state, "unprotect_range", spreadsheet_id=vendors["id"], protected_range_id=rule)
    assert env["data"]["protected_ranges"] == []
    again = call(state, "unprotect_range", spreadsheet_id=vendors["id"], protected_range_id=rule)
    assert again["error"]["code"] == 404 and repr(rule) in again["error"]["message"]


def test_delete_spreadsheet_is_for_the_owner_only(state: SpreadsheetState) -> None:
    shared = book(state, "FY2026 Operating Budget")["id"]
    assert call(state, "delete_spreadsheet", spreadsheet_id=shared)["error"]["code"] == 403
    own = book(state, "Vendor list (old)")["id"]
    assert call(state, "delete_spreadsheet", spreadsheet_id=own)["data"] == {"id": own, "deleted": True}
    assert call(state, "get_spreadsheet", spreadsheet_id=own)["error"]["code"] == 404


def test_errors_leave_the_state_unchanged(state: SpreadsheetState) -> None:
    before = svc.state_hash(state)
    sid = book(state, "FY2026 Operating Budget")["id"]
    call(state, "write_range", spreadsheet_id=sid, sheet="Assumptions", start_cell="B2", values=[["EUR"]])
    call(state, "append_row", spreadsheet_id=sid, sheet="Nope", values=["x"])
    call(state, "write_range", spreadsheet_id=sid, sheet="Budget", start_cell="Z1000", values=[["a", "b"]])
    assert svc.state_hash(state) == before


def test_seed_is_deterministic() -> None:
    assert svc.state_hash(svc.seed_state(7)) == svc.state_hash(svc.seed_state(7))


def test_inventory_skus_and_vendor_names_come_from_the_population(state: SpreadsheetState) -> None:
    world = Population.generate(7)
    inventory = book(state, "Inventory")["id"]
    rows = call(state, "read_range", spreadsheet_id=inventory, sheet="Stock", cell_range="A2:A200")["data"]["rows"]
    assert {r[0] for r in rows} == {p.sku for p in world.products}
    vendors = book(state, "Approved Vendors")["id"]
    rows = call(state, "read_range", spreadsheet_id=vendors, sheet="Vendors", cell_range="A2:C200")["data"]["rows"]
    contacts = {p.email: p.company for p in world.contacts}
    assert all(contacts[email] == company for company, _, email in rows)


def test_people_are_population_employees(state: SpreadsheetState) -> None:
    employees = {p.email for p in Population.generate(7).employees}
    for item in state.spreadsheets.values():
        assert {item.owner, *item.editors, *item.viewers} <= employees
