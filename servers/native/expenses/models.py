"""Expenses types, records, policy constants and state, and the money helpers shared by seed and tools."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from servers.framework import Record, ServiceState
from servers.roles import ROLE_KEY, role
from servers.types import (
    Currency,
    Date,
    DateTime,
    Days,
    Department,
    EmailAddress,
    FileName,
    Flag,
    MoneyAmount,
    Note,
    PersonName,
    ReferenceCode,
    Title,
    ident,
    sem,
)

ReportId = Annotated[str, ident("expenses", "report")]
ExpenseId = Annotated[str, ident("expenses", "expense")]
ReportStatus = Annotated[
    Literal["draft", "submitted", "pending_finance", "approved", "rejected", "reimbursed"],
    sem(
        "expenses.report_status",
        "Report status: draft, submitted (to the manager), pending_finance, approved, rejected, reimbursed.",
    ),
]
CategoryName = Literal[
    "airfare",
    "lodging",
    "meals",
    "ground_transport",
    "software",
    "equipment",
    "office_supplies",
    "training",
    "client_entertainment",
    "other",
]
Category = Annotated[CategoryName, sem("expenses.category", "Expense category.")]
Merchant = Annotated[str, sem("expenses.merchant", "Merchant as printed on the receipt.", min_length=1, max_length=120)]

RECEIPT_REQUIRED_OVER = 75.0
FINANCE_APPROVAL_OVER = 5000.0
MAX_AGE_DAYS = 90
MAX_REPORT_TOTAL = 1e9
EDITABLE = ("draft", "rejected")


class Expense(Record):
    id: ExpenseId
    report_id: ReportId
    owner: EmailAddress = Field(
        description="Email of the employee who spent the money.", json_schema_extra={ROLE_KEY: "employee"}
    )
    merchant: Merchant
    amount: MoneyAmount = Field(description="Amount spent.", json_schema_extra={ROLE_KEY: "cost"})
    currency: Currency
    category: Category
    date: Date = Field(description="Date of the purchase.", json_schema_extra={ROLE_KEY: "event"})
    receipt: Flag = Field(description="Whether a receipt is attached.")
    receipt_file: FileName | None = Field(default=None, description="File name of the attached receipt.")
    description: Note = Field(default="", description="What the expense was for.")


class Report(Record):
    id: ReportId
    title: Title
    purpose: Note = Field(default="", description="Business purpose of the report.")
    owner: EmailAddress = Field(
        description="Email of the employee who owns the report.", json_schema_extra={ROLE_KEY: "employee"}
    )
    owner_name: PersonName = Field(description="Name of the owner.", json_schema_extra={ROLE_KEY: "employee"})
    department: Department = Field(description="Owner's department.")
    approver: EmailAddress = Field(
        description="Email of the manager who must approve the report.", json_schema_extra={ROLE_KEY: "approver"}
    )
    status: ReportStatus
    currency: Currency
    expenses: list[Expense] = Field(default_factory=list, description="Expense lines of the report.")
    total: MoneyAmount = Field(default=0.0, description="Sum of the expense amounts.")
    needs_finance_approval: Flag = Field(default=False, description="Whether the total is over the finance limit.")
    created_at: DateTime = Field(description="When the report was created.")
    submitted_at: DateTime | None = Field(
        default=None, description="When it was last submitted.", json_schema_extra={ROLE_KEY: "event"}
    )
    approved_by: EmailAddress | None = Field(
        default=None, description="Manager who approved it.", json_schema_extra={ROLE_KEY: "approver"}
    )
    finance_approved_by: EmailAddress | None = Field(
        default=None, description="Finance employee who approved it.", json_schema_extra={ROLE_KEY: "approver"}
    )
    approved_at: DateTime | None = Field(
        default=None, description="When it was fully approved.", json_schema_extra={ROLE_KEY: "event"}
    )
    rejected_by: EmailAddress | None = Field(
        default=None, description="Who rejected it last.", json_schema_extra={ROLE_KEY: "approver"}
    )
    rejection_reason: Note | None = Field(default=None, description="Why it was rejected.")
    reimbursed_at: DateTime | None = Field(
        default=None, description="When the money was paid out.", json_schema_extra={ROLE_KEY: "event"}
    )
    reimbursement_reference: ReferenceCode | None = Field(default=None, description="Payout reference, e.g. RMB-20017.")


class Policy(Record):
    receipt_required_over: MoneyAmount = Field(
        description="Lines above this amount need a receipt.", json_schema_extra={ROLE_KEY: "limit"}
    )
    finance_approval_over: MoneyAmount = Field(
        description="Reports above this total also need finance approval.", json_schema_extra={ROLE_KEY: "limit"}
    )
    max_expense_age_days: Days = Field(description="Oldest allowed expense date, in days before today.")
    categories: list[Category] = Field(description="Allowed expense categories.")


class Employee(Record):
    email: Annotated[EmailAddress, role("employee")]
    name: Annotated[PersonName, role("employee")]
    department: Department
    approver: EmailAddress = Field(
        description="Who approves the employee's reports (their manager).", json_schema_extra={ROLE_KEY: "approver"}
    )


class ExpensesState(ServiceState):
    reports: dict[str, Report] = Field(default_factory=dict)
    employees: dict[str, Employee] = Field(default_factory=dict)
    next_reimbursement: int = 20001


def round_money(value: float) -> float:
    return round(value, 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def retotal(report: Report) -> None:
    report.total = round_money(sum(e.amount for e in report.expenses))
    report.needs_finance_approval = report.total > FINANCE_APPROVAL_OVER
