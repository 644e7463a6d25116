"""The expenses service: reports and lines, receipt policy, manager and finance approval, payout."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from servers.native.expenses import ExpensesState
from servers.native.expenses import service as svc
from servers.population import Population


@pytest.fixture
def state() -> ExpensesState:
    return svc.seed_state(7)


def call(state: ExpensesState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def report_in(state: ExpensesState, status: str, big: bool | None = None) -> str:
    return next(
        r.id for r in state.reports.values() if r.status == status and (big is None or r.needs_finance_approval == big)
    )


def days_ago(state: ExpensesState, days: int) -> str:
    return (state.clock.date() - dt.timedelta(days=days)).isoformat()


def new_report(state: ExpensesState) -> dict[str, Any]:
    owner = next(e for e in state.employees.values() if e.department == "Sales" and e.approver)
    env = call(state, "create_report", owner=owner.email, title="Client visit: Chicago")
    assert env["success"], env
    return dict(env["data"])


def add(state: ExpensesState, report_id: str, amount: float, **extra: Any) -> dict[str, Any]:
    args = {"merchant": "Uber", "category": "ground_transport", "date": days_ago(state, 3), **extra}
    return call(state, "add_expense", report_id=report_id, amount=amount, **args)


def test_policy_states_the_thresholds(state: ExpensesState) -> None:
    policy = call(state, "get_policy")["data"]
    assert policy["receipt_required_over"] == 75 and policy["finance_approval_over"] == 5000
    assert "meals" in policy["categories"]


def test_list_reports_filters_by_status_and_paginates(state: ExpensesState) -> None:
    page = call(state, "list_reports", status="reimbursed", limit=4)["data"]
    assert len(page["items"]) == 4 and page["next_offset"] == 4
    assert page["total"] == sum(r.status == "reimbursed" for r in state.reports.values())
    assert all(r["status"] == "reimbursed" for r in page["items"])


def test_list_reports_by_approver(state: ExpensesState) -> None:
    approver = next(iter(state.reports.values())).approver
    items = call(state, "list_reports", approver=approver, limit=200)["data"]["items"]
    assert items and all(r["approver"] == approver for r in items)


def test_get_report_and_unknown_id_quotes_it(state: ExpensesState) -> None:
    report_id = next(iter(state.reports))
    assert call(state, "get_report", report_id=report_id)["data"]["id"] == report_id
    env = call(state, "get_report", report_id="rep_9999")
    assert env["error"]["code"] == 404 and "'rep_9999'" in env["error"]["message"]


def test_create_report_for_unknown_employee_is_a_404(state: ExpensesState) -> None:
    env = call(state, "create_report", owner="stranger@example.com", title="Trip")
    assert env["error"]["code"] == 404 and "'stranger@example.com'" in env["error"]["message"]


def test_create_report_routes_to_the_owners_manager(state: ExpensesState) -> None:
    report = new_report(state)
    assert report["status"] == "draft" and report["approver"] == state.employees[report["owner"]].approver


def test_add_expense_updates_the_total(state: ExpensesState) -> None:
    report = new_report(state)
    line = add(state, report["id"], 42.5)["data"]
    assert line["report_id"] == report["id"] and line["receipt"] is False
    assert state.reports[report["id"]].total == 42.5


def test_future_dated_expense_is_a_400_naming_date(state: ExpensesState) -> None:
    report = new_report(state)
    before = svc.state_hash(state)
    env = add(state, report["id"], 20, date=(state.clock.date() + dt.timedelta(days=2)).isoformat())
    assert env["error"]["code"] == 400 and "'date'" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_expense_in_another_currency_is_a_400(state: ExpensesState) -> None:
    env = add(state, new_report(state)["id"], 20, currency="EUR")
    assert env["error"]["code"] == 400 and "'currency'" in env["error"]["message"]


def test_update_and_remove_expense(state: ExpensesState) -> None:
    report = new_report(state)
    line = add(state, report["id"], 30)["data"]
    assert call(state, "update_expense", expense_id=line["id"], amount=35)["data"]["amount"] == 35
    assert call(state, "remove_expense", expense_id=line["id"])["data"]["total"] == 0


def test_editing_a_submitted_report_is_a_conflict(state: ExpensesState) -> None:
    env = add(state, report_in(state, "submitted"), 10)
    assert env["error"]["code"] == 409


def test_line_over_75_without_receipt_cannot_be_submitted(state: ExpensesState) -> None:
    report = new_report(state)
    line = add(state, report["id"], 120)["data"]
    before = svc.state_hash(state)
    env = call(state, "submit_report", report_id=report["id"])
    assert env["error"]["code"] == 400 and repr(line["id"]) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_attaching_the_receipt_lets_the_report_be_submitted(state: ExpensesState) -> None:
    report = new_report(state)
    line = add(state, report["id"], 120)["data"]
    assert call(state, "attach_receipt", expense_id=line["id"], file_name="uber.pdf")["data"]["receipt"] is True
    assert call(state, "submit_report", report_id=report["id"])["data"]["status"] == "submitted"


def test_empty_report_cannot_be_submitted(state: ExpensesState) -> None:
    assert call(state, "submit_report", report_id=new_report(state)["id"])["error"]["code"] == 409


def test_manager_approves_a_small_report(state: ExpensesState) -> None:
    report = state.reports[report_in(state, "submitted", big=False)]
    data = call(state, "approve_report", report_id=report.id, approver=report.approver)["data"]
    assert data["status"] == "approved" and data["approved_by"] == report.approver


def test_approval_by_someone_else_is_forbidden(state: ExpensesState) -> None:
    report = state.reports[report_in(state, "submitted")]
    other = next(e.email for e in state.employees.values() if e.email not in (report.approver, report.owner))
    before = svc.state_hash(state)
    env = call(state, "approve_report", report_id=report.id, approver=other)
    assert env["error"]["code"] == 403 and repr(report.id) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_owner_cannot_approve_their_own_report(state: ExpensesState) -> None:
    report = state.reports[report_in(state, "submitted")]
    assert call(state, "approve_report", report_id=report.id, approver=report.owner)["error"]["code"] == 403


def test_approving_a_draft_is_a_conflict(state: ExpensesState) -> None:
    report = state.reports[report_in(state, "draft")]
    assert call(state, "approve_report", report_id=report.id, approver=report.approver)["error"]["code"] == 409


def test_report_over_5000_needs_finance_after_the_manager(state: ExpensesState) -> None:
    report = new_report(state)
    for _ in range(3):
        add(state, report["id"], 1800, receipt_file="hotel.pdf", merchant="Hilton", category="lodging")
    call(state, "submit_report", report_id=report["id"])
    manager = report["approver"]
    assert (
        call(state, "approve_report", report_id=report["id"], approver=manager)["data"]["status"] == "pending_finance"
    )
    finance = next(
        e.email
        for e in state.employees.values()
        if e.department == "Finance" and e.email not in (manager, report["owner"])
    )
    data = call(state, "finance_approve_report", report_id=report["id"], approver=finance)["data"]
    assert data["status"] == "approved" and data["finance_approved_by"] == finance


def test_finance_approval_by_non_finance_is_forbidden(state: ExpensesState) -> None:
    report = state.reports[report_in(state, "pending_finance")]
    outsider = next(e.email for e in state.employees.values() if e.department == "Sales")
    env = call(state, "finance_approve_report", report_id=report.id, approver=outsider)
    assert env["error"]["code"] == 403


def test_finance_approval_by_the_approving_manager_is_forbidden(state: ExpensesState) -> None:
    report = next(
        r
        for r in state.reports.values()
        if r.status == "pending_finance" and state.employees[r.approver].department == "Finance"
    )
    assert call(state, "finance_approve_report", report_id=report.id, approver=report.approver)["error"]["code"] == 403


def test_reject_then_resubmit(state: ExpensesState) -> None:
    report = state.reports[report_in(state, "submitted")]
    data = call(state, "reject_report", report_id=report.id, approver=report.approver, reason="Missing agenda")["data"]
    assert data["status"] == "rejected" and data["rejection_reason"] == "Missing agenda"
    again = call(state, "submit_report", report_id=report.id)["data"]
    assert again["status"] == "submitted" and again["rejection_reason"] is None


def test_recall_a_submitted_report(state: ExpensesState) -> None:
    assert call(state, "recall_report", report_id=report_in(state, "submitted"))["data"]["status"] == "draft"


def test_reimburse_an_approved_report(state: ExpensesState) -> None:
    data = call(state, "reimburse_report", report_id=report_in(state, "approved"))["data"]
    assert data["status"] == "reimbursed" and data["reimbursement_reference"].startswith("RMB-")


def test_reimbursing_an_unapproved_report_is_a_conflict(state: ExpensesState) -> None:
    assert call(state, "reimburse_report", report_id=report_in(state, "submitted"))["error"]["code"] == 409


def test_deleting_a_reimbursed_report_is_a_conflict(state: ExpensesState) -> None:
    assert call(state, "delete_report", report_id=report_in(state, "reimbursed"))["error"]["code"] == 409


def test_delete_a_draft(state: ExpensesState) -> None:
    report_id = report_in(state, "draft")
    assert call(state, "delete_report", report_id=report_id)["success"]
    assert report_id not in state.reports


def test_list_expenses_missing_receipts(state: ExpensesState) -> None:
    page = call(state, "list_expenses", missing_receipt=True, min_amount=75.01, limit=200)["data"]
    assert page["total"] > 0
    assert all(not e["receipt"] and e["amount"] > 75 for e in page["items"])


def test_owners_and_approvers_are_population_employees() -> None:
    world = Population.generate(7)
    emails = {p.email for p in world.employees}
    state = svc.seed_state(7)
    assert all(r.owner in emails and r.approver in emails for r in state.reports.values())
    managers = {p.email: world.person(p.manager_id).email for p in world.employees if p.manager_id}
    assert all(r.approver == managers[r.owner] for r in state.reports.values() if r.owner in managers)
    assert any(r.owner == world.me.email for r in state.reports.values())


def test_update_report_title(state: ExpensesState) -> None:
    report_id = report_in(state, "draft")
    data = call(state, "update_report", report_id=report_id, title="Client visit: Boston")["data"]
    assert data["title"] == "Client visit: Boston"
