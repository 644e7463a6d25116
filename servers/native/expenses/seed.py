"""Expenses seed: merchant and trip tables, and about 40 reports of the population's employees."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import RECEIPT_REQUIRED_OVER, Employee, Expense, ExpensesState, Report, retotal, round_money

MERCHANTS = {
    "airfare": (("Delta Air Lines", "United Airlines", "Lufthansa", "British Airways"), 180, 1400),
    "lodging": (("Marriott", "Hilton", "Hyatt Regency", "Holiday Inn"), 140, 650),
    "meals": (("Starbucks", "Chipotle", "Pret A Manger", "Olive Garden", "Corner Bistro"), 9, 95),
    "ground_transport": (("Uber", "Lyft", "Yellow Cab", "Hertz"), 14, 160),
    "software": (("Figma", "Zoom", "Notion", "JetBrains"), 12, 480),
    "equipment": (("Apple Store", "Best Buy", "B&H Photo"), 40, 1800),
    "office_supplies": (("Staples", "Office Depot"), 6, 120),
    "training": (("SaaStr Annual", "O'Reilly Media", "Coursera"), 150, 2900),
    "client_entertainment": (("The Capital Grille", "Ruth's Chris Steak House", "Nobu"), 80, 900),
}
TRIPS = {  # report title → the categories of its lines
    "Client visit: {company}": ("airfare", "lodging", "meals", "ground_transport", "client_entertainment"),
    "Conference: SaaStr Annual": ("training", "airfare", "lodging", "lodging", "meals", "ground_transport"),
    "Team offsite — {month}": ("lodging", "meals", "meals", "ground_transport"),
    "Home office setup": ("equipment", "equipment", "office_supplies"),
    "Software subscriptions — {month}": ("software", "software", "software"),
    "Customer dinner with {company}": ("client_entertainment", "ground_transport"),
}


def _approver_of(world: Population, email: str) -> str:
    person = next(p for p in world.employees if p.email == email)
    if person.manager_id is not None:
        return world.person(person.manager_id).email
    heads = {p.department: p.email for p in world.employees if p.manager_id is None}
    return heads["People"] if heads["Finance"] == email else heads["Finance"]


def seed(rng: random.Random, world: Population) -> ExpensesState:
    state = ExpensesState(clock=world.now)
    for person in world.employees:
        state.employees[person.email] = Employee(
            email=person.email,
            name=person.name,
            department=person.department,
            approver=_approver_of(world, person.email),
        )
    today = world.now.date()
    finance = [p.email for p in world.employees if p.department == "Finance"]
    plan = ["draft"] * 8 + ["submitted"] * 8 + ["pending_finance"] * 3 + ["approved"] * 6
    plan += ["rejected"] * 4 + ["reimbursed"] * 11
    owners = [p for p in world.employees if p.id != world.me.id]
    for index, status in enumerate(plan):
        owner = world.me if index % 9 == 4 else rng.choice(owners)
        template = rng.choice(list(TRIPS)) if status != "pending_finance" else "Conference: SaaStr Annual"
        title = template.format(company=rng.choice(world.companies).name, month=rng.choice(("January", "February")))
        age = rng.randint(1, 8) if status in ("draft", "submitted") else rng.randint(10, 80)
        created = world.now - dt.timedelta(days=age, minutes=rng.randint(0, 600))
        employee = state.employees[owner.email]
        report = Report(
            id=state.new_id("rep"),
            title=title,
            purpose=f"{title} for the {owner.department} team.",
            owner=owner.email,
            owner_name=owner.name,
            department=owner.department,
            approver=employee.approver,
            status=status,
            currency="USD",
            created_at=created,
        )
        for category in TRIPS[template]:
            merchants, low, high = MERCHANTS[category]
            amount = round_money(rng.uniform(low, high) * (3 if status == "pending_finance" else 1))
            missing = status == "draft" and amount > RECEIPT_REQUIRED_OVER and rng.random() < 0.5
            expense = Expense(
                id=state.new_id("exp"),
                report_id=report.id,
                owner=owner.email,
                merchant=rng.choice(merchants),
                amount=amount,
                currency="USD",
                category=category,
                date=today - dt.timedelta(days=age + rng.randint(1, 9)),
                receipt=not missing and (amount > RECEIPT_REQUIRED_OVER or rng.random() < 0.6),
            )
            expense.receipt_file = f"receipt-{expense.id}.pdf" if expense.receipt else None
            report.expenses.append(expense)
        if index == 3:  # the same purchase entered twice
            twin = report.expenses[-1].model_copy(update={"id": state.new_id("exp")})
            report.expenses.append(twin)
        retotal(report)
        state.reports[report.id] = report
        if status != "draft":
            report.submitted_at = created + dt.timedelta(hours=2)
        if status in ("pending_finance", "approved", "reimbursed"):
            report.approved_by = report.approver
        if status in ("approved", "reimbursed"):
            report.approved_at = created + dt.timedelta(days=2)
            if report.needs_finance_approval:
                report.finance_approved_by = next(f for f in finance if f not in (report.owner, report.approver))
        if status == "rejected":
            report.rejected_by, report.rejection_reason = report.approver, "Please split personal and business costs."
        if status == "reimbursed":
            report.reimbursed_at = created + dt.timedelta(days=5)
            report.reimbursement_reference = f"RMB-{state.next_reimbursement}"
            state.next_reimbursement += 1
    return state
