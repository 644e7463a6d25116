"""Expenses: employees' expense reports — receipts, policy checks, approvals and reimbursement.

Tools: get_policy, list_reports, get_report, create_report, update_report, delete_report,
add_expense, update_expense, remove_expense, attach_receipt, list_expenses, submit_report,
recall_report, approve_report, finance_approve_report, reject_report, reimburse_report.
State: reports by id (each with its expense lines); the employee directory (email, name,
department, manager) from the population; the next reimbursement number (RMB-).
Seed: about 40 reports of the population's employees, "me" included: client visits,
conferences, offsites, software and home-office purchases with merchants, amounts, categories,
dates and receipts; drafts with lines still missing receipts, reports awaiting their manager,
big conference trips awaiting finance, approved, rejected and reimbursed reports, a duplicated
expense line and reports with near-identical titles.
Rules: a report goes draft → submitted → approved → reimbursed; a report over 5000 goes through
pending_finance after the manager's approval; only the owner's manager may approve or reject a
submitted report, and only a Finance employee who is neither the owner nor the approving
manager may approve or reject a report pending finance (others → 403); department heads are
approved by the head of Finance, and the head of Finance by the head of People; a report cannot
be submitted while a line over 75 lacks a receipt (400) or while it is empty (409); expenses
cannot be dated in the future or more than 90 days back and must be in the report's currency
(400); only draft or rejected reports can be edited, submitted or deleted, only approved
reports reimbursed, and only submitted or pending reports recalled (409).
Version history: 1 — first version.
"""

from __future__ import annotations

import datetime as dt

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Page, Service, contains, paginate, require
from servers.types import Currency, Date, EmailAddress, FileName, Flag, Limit, MoneyAmount, Note, Offset, Query, Title

from .models import (
    EDITABLE,
    FINANCE_APPROVAL_OVER,
    MAX_AGE_DAYS,
    MAX_REPORT_TOTAL,
    RECEIPT_REQUIRED_OVER,
    Category,
    Expense,
    ExpenseId,
    ExpensesState,
    Merchant,
    Policy,
    Report,
    ReportId,
    ReportStatus,
    retotal,
    round_money,
)
from .seed import MERCHANTS, seed

service = Service(
    "expenses",
    version=1,
    category="finance",
    description="Employee expense reports: expense lines with receipts, policy checks, approvals, reimbursement.",
    modelled_on="Expensify / SAP Concur expense report APIs",
    state=ExpensesState,
    seed=seed,
    system_fields=("created_at", "total", "needs_finance_approval", "next_reimbursement", "reimbursement_reference"),
)


@service.read(op="lookup")
def get_policy(state: ExpensesState) -> Policy:
    """Get the company expense policy: receipt and finance-approval thresholds, allowed categories."""
    return Policy(
        receipt_required_over=RECEIPT_REQUIRED_OVER,
        finance_approval_over=FINANCE_APPROVAL_OVER,
        max_expense_age_days=MAX_AGE_DAYS,
        categories=[*MERCHANTS, "other"],
    )


@service.read(
    op="list",
    entity="report",
    collection="reports",
    reads=("owner", "approver", "status", "title", "purpose", "expenses.merchant"),
)
def list_reports(
    state: ExpensesState,
    owner: EmailAddress | None = None,
    approver: EmailAddress | None = None,
    status: ReportStatus | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Report]:
    """List expense reports, newest first, with optional filters.

    Args:
        owner: Only reports owned by this employee.
        approver: Only reports this manager must approve.
        status: Only reports in this status.
        query: Case-insensitive text to find in the title, purpose or a merchant.
        offset: Number of reports to skip.
        limit: Maximum number of reports to return.
    """
    rows = [
        r
        for r in state.reports.values()
        if (owner is None or r.owner == owner.lower())
        and (approver is None or r.approver == approver.lower())
        and status in (None, r.status)
        and (
            contains(r.title, query)
            or contains(r.purpose, query)
            or any(contains(e.merchant, query) for e in r.expenses)
        )
    ]
    return paginate(sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True), offset, limit)


@service.read(op="get", entity="report", collection="reports")
def get_report(state: ExpensesState, report_id: ReportId) -> Report:
    """Get one expense report with its lines, total and approval trail.

    Args:
        report_id: Id of the report.
    """
    return require(state.reports, report_id, "report")


@service.write(
    op="create",
    entity="report",
    collection="reports",
    sets=("title", "purpose", "owner", "owner_name", "department", "approver", "status", "currency"),
)
def create_report(
    state: ExpensesState, owner: EmailAddress, title: Title, purpose: Note = "", currency: Currency = "USD"
) -> Report:
    """Create an empty draft report for an employee; the approver is the employee's manager.

    Args:
        owner: Email of the employee who owns the report.
        title: Title of the report, e.g. "Client visit: Acme".
        purpose: Business purpose of the report.
        currency: Currency of every expense on the report.
    """
    employee = require(state.employees, owner.lower(), "employee")
    report = Report(
        id=state.new_id("rep"),
        title=title,
        purpose=purpose,
        owner=employee.email,
        owner_name=employee.name,
        department=employee.department,
        approver=employee.approver,
        status="draft",
        currency=currency,
        created_at=state.tick(),
    )
    state.reports[report.id] = report
    return report


def _editable(state: ExpensesState, report_id: str) -> Report:
    report = require(state.reports, report_id, "report")
    if report.status not in EDITABLE:
        raise Conflict(f"report {report_id!r} is {report.status!r}; only draft or rejected reports can be changed")
    return report


@service.write(op="update", entity="report", collection="reports", sets=("title", "purpose"))
def update_report(
    state: ExpensesState, report_id: ReportId, title: Title | None = None, purpose: Note | None = None
) -> Report:
    """Change the title or purpose of a draft or rejected report; omitted fields stay as they are.

    Args:
        report_id: Id of the report.
        title: New title.
        purpose: New business purpose.
    """
    report = _editable(state, report_id)
    report.title = title or report.title
    report.purpose = report.purpose if purpose is None else purpose
    state.tick()
    return report


@service.write(op="delete", entity="report", collection="reports")
def delete_report(state: ExpensesState, report_id: ReportId) -> Report:
    """Delete a draft or rejected report with all its lines; returns the deleted report.

    Args:
        report_id: Id of the report.
    """
    report = _editable(state, report_id)
    del state.reports[report_id]
    return report


def _check_expense(report: Report, amount: float, date: dt.date | None, today: dt.date, extra: float) -> None:
    if round_money(amount) <= 0:
        raise BadRequest("argument 'amount': must be at least 0.01")
    if report.total + extra > MAX_REPORT_TOTAL:
        raise BadRequest("argument 'amount': the report total would exceed 1,000,000,000")
    if date is not None and date > today:
        raise BadRequest(f"argument 'date': {date} is in the future")
    if date is not None and (today - date).days > MAX_AGE_DAYS:
        raise BadRequest(f"argument 'date': {date} is more than {MAX_AGE_DAYS} days ago")


@service.write(op="append", entity="expense", collection="reports", sets=("expenses",))
def add_expense(
    state: ExpensesState,
    report_id: ReportId,
    merchant: Merchant,
    amount: MoneyAmount,
    category: Category,
    date: Date,
    currency: Currency | None = None,
    receipt_file: FileName | None = None,
    description: Note = "",
) -> Expense:
    """Add an expense line to a draft or rejected report.

    Args:
        report_id: Id of the report.
        merchant: Merchant as printed on the receipt.
        amount: Amount spent (at least 0.01).
        category: Expense category.
        date: Date of the purchase (not in the future, at most 90 days ago).
        currency: Currency of the amount; must be the report's currency (the default).
        receipt_file: File name of the receipt, if there is one.
        description: What the expense was for.
    """
    report = _editable(state, report_id)
    if currency is not None and currency != report.currency:
        raise BadRequest(f"argument 'currency': report {report_id!r} is in {report.currency}, not {currency}")
    _check_expense(report, amount, date, state.clock.date(), round_money(amount))
    expense = Expense(
        id=state.new_id("exp"),
        report_id=report_id,
        owner=report.owner,
        merchant=merchant,
        amount=round_money(amount),
        currency=report.currency,
        category=category,
        date=date,
        receipt=receipt_file is not None,
        receipt_file=receipt_file,
        description=description,
    )
    report.expenses.append(expense)
    retotal(report)
    state.tick()
    return expense


def _find(state: ExpensesState, expense_id: str) -> tuple[Report, Expense]:
    for report in state.reports.values():
        for expense in report.expenses:
            if expense.id == expense_id:
                return report, expense
    raise NotFound(f"expense {expense_id!r} not found")


def _editable_expense(state: ExpensesState, expense_id: str) -> tuple[Report, Expense]:
    report, expense = _find(state, expense_id)
    _editable(state, report.id)
    return report, expense


@service.write(
    op="update",
    entity="expense",
    collection="reports",
    sets=("expenses.merchant", "expenses.amount", "expenses.category", "expenses.date", "expenses.description"),
)
def update_expense(
    state: ExpensesState,
    expense_id: ExpenseId,
    merchant: Merchant | None = None,
    amount: MoneyAmount | None = None,
    category: Category | None = None,
    date: Date | None = None,
    description: Note | None = None,
) -> Expense:
    """Correct an expense line of a draft or rejected report; omitted fields stay as they are.

    Args:
        expense_id: Id of the expense line.
        merchant: New merchant.
        amount: New amount (at least 0.01).
        category: New category.
        date: New purchase date.
        description: New description.
    """
    report, expense = _editable_expense(state, expense_id)
    new_amount = expense.amount if amount is None else amount
    _check_expense(report, new_amount, date, state.clock.date(), round_money(new_amount) - expense.amount)
    changes = {
        "merchant": merchant,
        "amount": round_money(new_amount),
        "category": category,
        "date": date,
        "description": description,
    }
    updated = expense.model_copy(update={k: v for k, v in changes.items() if v is not None})
    report.expenses = [updated if e.id == expense_id else e for e in report.expenses]
    retotal(report)
    state.tick()
    return updated


@service.write(op="remove", entity="expense", collection="reports", sets=("expenses",))
def remove_expense(state: ExpensesState, expense_id: ExpenseId) -> Report:
    """Remove an expense line from a draft or rejected report; returns the report.

    Args:
        expense_id: Id of the expense line.
    """
    report, _ = _editable_expense(state, expense_id)
    report.expenses = [e for e in report.expenses if e.id != expense_id]
    retotal(report)
    state.tick()
    return report


@service.write(op="update", entity="expense", collection="reports", sets=("expenses.receipt", "expenses.receipt_file"))
def attach_receipt(state: ExpensesState, expense_id: ExpenseId, file_name: FileName) -> Expense:
    """Attach a receipt file to an expense line of a report that is not yet approved.

    Args:
        expense_id: Id of the expense line.
        file_name: File name of the receipt, e.g. receipt-uber-0214.pdf.
    """
    report, expense = _find(state, expense_id)
    if report.status in ("approved", "reimbursed"):
        raise Conflict(f"report {report.id!r} is {report.status!r}; receipts can no longer be changed")
    expense.receipt, expense.receipt_file = True, file_name
    state.tick()
    return expense


@service.read(
    op="list",
    entity="expense",
    collection="reports",
    reads=("expenses.owner", "expenses.category", "expenses.merchant", "expenses.receipt", "expenses.amount"),
)
def list_expenses(
    state: ExpensesState,
    owner: EmailAddress | None = None,
    category: Category | None = None,
    merchant: Query | None = None,
    missing_receipt: Flag = False,
    min_amount: MoneyAmount | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Expense]:
    """Search expense lines across all reports, newest purchase first.

    Args:
        owner: Only lines of this employee.
        category: Only lines of this category.
        merchant: Case-insensitive text to find in the merchant name.
        missing_receipt: Only lines without a receipt.
        min_amount: Only lines of at least this amount.
        offset: Number of lines to skip.
        limit: Maximum number of lines to return.
    """
    rows = [
        e
        for r in state.reports.values()
        for e in r.expenses
        if (owner is None or e.owner == owner.lower())
        and category in (None, e.category)
        and contains(e.merchant, merchant)
        and not (missing_receipt and e.receipt)
        and (min_amount is None or e.amount >= min_amount)
    ]
    return paginate(sorted(rows, key=lambda e: (e.date, e.id), reverse=True), offset, limit)


@service.write(
    op="transition",
    entity="report",
    collection="reports",
    sets=("status", "submitted_at", "approved_by", "finance_approved_by", "rejected_by", "rejection_reason"),
)
def submit_report(state: ExpensesState, report_id: ReportId) -> Report:
    """Submit a draft or rejected report to the owner's manager for approval.

    Args:
        report_id: Id of the report.
    """
    report = _editable(state, report_id)
    if not report.expenses:
        raise Conflict(f"report {report_id!r} has no expenses to submit")
    missing = [e.id for e in report.expenses if e.amount > RECEIPT_REQUIRED_OVER and not e.receipt]
    if missing:
        raise BadRequest(
            f"argument 'report_id': lines over {RECEIPT_REQUIRED_OVER:.0f} need a receipt; "
            f"attach one to {', '.join(repr(m) for m in missing)}"
        )
    report.status, report.submitted_at = "submitted", state.tick()
    report.approved_by = report.finance_approved_by = report.rejected_by = report.rejection_reason = None
    return report


@service.write(op="transition", entity="report", collection="reports", sets=("status", "approved_by"))
def recall_report(state: ExpensesState, report_id: ReportId) -> Report:
    """Take back a submitted report that is not yet approved; it returns to draft.

    Args:
        report_id: Id of the report.
    """
    report = require(state.reports, report_id, "report")
    if report.status not in ("submitted", "pending_finance"):
        raise Conflict(f"report {report_id!r} is {report.status!r}; only submitted or pending reports can be recalled")
    report.status, report.approved_by = "draft", None
    state.tick()
    return report


def _check_finance(state: ExpensesState, report: Report, approver: str) -> None:
    employee = state.employees.get(approver.lower())
    if employee is None or employee.department != "Finance":
        raise Forbidden(f"{approver!r} is not in Finance and cannot give finance approval to {report.id!r}")
    if employee.email in (report.owner, report.approved_by):
        raise Forbidden(f"{approver!r} owns or already approved report {report.id!r}; another Finance employee must")


@service.write(op="transition", entity="report", collection="reports", sets=("status", "approved_by", "approved_at"))
def approve_report(state: ExpensesState, report_id: ReportId, approver: EmailAddress) -> Report:
    """Approve a submitted report as the owner's manager; reports over 5000 then go to finance.

    Args:
        report_id: Id of the submitted report.
        approver: Email of the approving manager; must be the report's approver.
    """
    report = require(state.reports, report_id, "report")
    if approver.lower() != report.approver:
        raise Forbidden(f"only {report.approver!r}, the owner's manager, may approve report {report_id!r}")
    if report.status != "submitted":
        raise Conflict(f"report {report_id!r} is {report.status!r}; only submitted reports await the manager")
    now = state.tick()
    report.approved_by = report.approver
    if report.needs_finance_approval:
        report.status = "pending_finance"
    else:
        report.status, report.approved_at = "approved", now
    return report


@service.write(
    op="transition", entity="report", collection="reports", sets=("status", "approved_at", "finance_approved_by")
)
def finance_approve_report(state: ExpensesState, report_id: ReportId, approver: EmailAddress) -> Report:
    """Give the finance approval that reports over 5000 need after the manager's approval.

    Args:
        report_id: Id of the report pending finance.
        approver: Email of a Finance employee who is neither the owner nor the approving manager.
    """
    report = require(state.reports, report_id, "report")
    _check_finance(state, report, approver)
    if report.status != "pending_finance":
        raise Conflict(f"report {report_id!r} is {report.status!r}; only reports pending finance need this")
    report.status, report.approved_at, report.finance_approved_by = "approved", state.tick(), approver.lower()
    return report


@service.write(
    op="transition", entity="report", collection="reports", sets=("status", "rejected_by", "rejection_reason")
)
def reject_report(state: ExpensesState, report_id: ReportId, approver: EmailAddress, reason: Note) -> Report:
    """Reject a submitted report (as its manager) or one pending finance (as Finance) with a reason.

    Args:
        report_id: Id of the report.
        approver: Email of the person rejecting it: the manager, or Finance for reports pending finance.
        reason: Why it is rejected; the owner sees it.
    """
    report = require(state.reports, report_id, "report")
    if report.status == "pending_finance":
        _check_finance(state, report, approver)
    elif approver.lower() != report.approver:
        raise Forbidden(f"only {report.approver!r}, the owner's manager, may reject report {report_id!r}")
    if report.status not in ("submitted", "pending_finance"):
        raise Conflict(f"report {report_id!r} is {report.status!r}; only submitted or pending reports can be rejected")
    if not reason.strip():
        raise BadRequest("argument 'reason': a rejection needs a reason")
    report.status, report.rejected_by, report.rejection_reason = "rejected", approver.lower(), reason
    state.tick()
    return report


@service.write(op="transition", entity="report", collection="reports", sets=("status", "reimbursed_at"))
def reimburse_report(state: ExpensesState, report_id: ReportId) -> Report:
    """Pay out an approved report to its owner; it gets a reimbursement reference (RMB-).

    Args:
        report_id: Id of the approved report.
    """
    report = require(state.reports, report_id, "report")
    if report.status != "approved":
        raise Conflict(f"report {report_id!r} is {report.status!r}; only approved reports can be reimbursed")
    report.status, report.reimbursed_at = "reimbursed", state.tick()
    report.reimbursement_reference = f"RMB-{state.next_reimbursement}"
    state.next_reimbursement += 1
    return report
