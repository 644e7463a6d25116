"""Spreadsheet service: the seed state (budgets, vendor lists, inventory, pipeline, expense reports)."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import ProtectedRange, Spreadsheet, SpreadsheetState, new_book, put


def seed(rng: random.Random, world: Population) -> SpreadsheetState:
    me = world.me.email
    state = SpreadsheetState(me=me, clock=world.now)
    heads = {p.department: p.email for p in world.employees if p.manager_id is None}
    others = [p for p in world.employees if p.email != me]

    def book(title: str, owner: str, days: int, tabs: dict[str, list[list[str]]], **share: list[str]) -> Spreadsheet:
        when = world.now - dt.timedelta(days=days, minutes=rng.randint(0, 900))
        made = new_book(state, title, owner, when, list(tabs))
        made.editors, made.viewers = share.get("editors", []), share.get("viewers", [])
        for sheet, rows in zip(made.sheets, tabs.values(), strict=True):
            put(state, sheet.id, rows)
        return made

    def protect(made: Spreadsheet, sheet: str, ref: str, why: str, editors: list[str]) -> None:
        rule = ProtectedRange(id=state.new_id("pr"), sheet=sheet, range=ref, description=why, editors=editors)
        made.protected_ranges.append(rule)

    categories = ("Travel", "Software", "Hardware", "Training", "Events", "Contractors")
    budget = [["Department", "Category", "Q1", "Q2", "Q3", "Q4", "Total", "Budget owner"]]
    for department, head in heads.items():
        for category in rng.sample(categories, 3):
            quarters = [rng.randint(10, 120) * 250 for _ in range(4)]
            budget.append([department, category, *map(str, quarters), str(sum(quarters)), head])
    assumptions = [["Assumption", "Value"], ["Currency", "USD"], ["Headcount growth %", "8"], ["Inflation %", "3.5"]]
    fin = heads["Finance"]
    made = book("FY2026 Operating Budget", fin, 40, {"Budget": budget, "Assumptions": assumptions}, editors=[me])
    protect(made, "Budget", "A1:H1", "Column headers are fixed", [])
    protect(made, "Assumptions", "A1:B20", "Planning assumptions set by Finance", [fin])
    old = [row[:2] + [str(int(int(v) * 0.9)) for v in row[2:7]] + row[7:] for row in budget[1:]]
    book("FY2025 Operating Budget", fin, 400, {"Budget": budget[:1] + old}, viewers=[me])
    copy = [row[:2] + [str(int(v) + 500) for v in row[2:7]] + row[7:] for row in budget[1:]]
    book("FY2026 Operating Budget (copy)", me, 25, {"Budget": budget[:1] + copy})

    vendors = [["Company", "Service", "Contact email", "Annual amount", "Currency", "Status", "Contract ref"]]
    services = ("Office supplies", "Furniture", "IT hardware", "Cleaning", "Consulting", "Logistics")
    for company in [c for c in world.companies if c.relation in ("vendor", "partner")]:
        contact = world.contacts_of(company.id)[0]
        for kind in rng.sample(services, 2):
            amount, status = rng.randint(40, 900) * 100, rng.choice(("approved", "approved", "under review"))
            line = f"{company.name}|{kind}|{contact.email}|{amount:.2f}|{company.currency}|{status}"
            vendors.append([*line.split("|"), f"PO-{rng.randint(10000, 99999)}"])
    for company in [c for c in world.companies if c.relation == "prospect"]:
        line = f"{company.name}|Consulting|{world.contacts_of(company.id)[0].email}|0.00|{company.currency}|rejected|"
        vendors.append(line.split("|"))
    made = book("Approved Vendors", me, 15, {"Vendors": vendors}, editors=[heads["Legal"]], viewers=[fin])
    protect(made, "Vendors", "G1:G200", "Contract references are maintained by Legal", [heads["Legal"]])
    book("Vendor list (old)", me, 420, {"Vendors": [row[:5] for row in vendors[: len(vendors) // 2]]})

    stock = [["SKU", "Product", "Category", "Location", "On hand", "Reorder point", "Unit cost"]]
    for product in world.products:
        for location in ("HQ", "Warehouse"):
            reorder = rng.randint(3, 20)
            line = f"{product.sku}|{product.name}|{product.category}|{location}|{rng.randint(0, 3 * reorder)}|{reorder}"
            stock.append([*line.split("|"), f"{product.unit_price:.2f}"])
    book("Inventory", me, 3, {"Stock": stock}, editors=[others[0].email])
    last_year = [row[:5] for row in stock[:14]]
    book("Inventory count 2025", me, 380, {"Stock": last_year})

    pipeline = [["Customer", "Contact", "Stage", "Amount", "Currency", "Owner"]]
    sellers = [p.email for p in world.employees if p.department == "Sales"]
    for company in [c for c in world.companies if c.relation in ("customer", "prospect")]:
        seller, stage = rng.choice(sellers), rng.choice(("lead", "proposal", "won"))
        line = f"{company.name}|{world.contacts_of(company.id)[0].email}|{stage}|{rng.randint(5, 120) * 1000:.2f}"
        pipeline.append([*line.split("|"), company.currency, seller])
    book("Sales pipeline Q1", heads["Sales"], 10, {"Pipeline": pipeline}, viewers=[me])
    for person in rng.sample(others, 6):
        lines = [["Date", "Description", "Category", "Amount", "Currency"]]
        for _ in range(rng.randint(2, 6)):
            day = world.now - dt.timedelta(days=rng.randint(5, 30))
            what = rng.choice(("Taxi", "Hotel", "Team lunch", "Train", "Conference"))
            lines.append([f"{day:%Y-%m-%d}", what, rng.choice(categories), f"{rng.uniform(15, 600):.2f}", "USD"])
        title, readers = (
            f"Expense report - {person.name} - Feb 2026",
            [e for e in dict.fromkeys([me, heads[person.department]]) if e != person.email],
        )
        book(title, person.email, rng.randint(1, 8), {"Expenses": lines}, viewers=readers)
    laptops = [["Employee", "Department", "Device SKU", "Device", "Status"]]
    for person in rng.sample(others, 12):
        product = rng.choice([p for p in world.products if p.category == "hardware"])
        status = rng.choice(("ordered", "delivered", "pending approval"))
        laptops.append([person.email, person.department, product.sku, product.name, status])
    book("Equipment refresh tracker", me, 6, {"Requests": laptops}, editors=[heads["Engineering"]])
    contacts = [["Name", "Email", "Phone", "Company", "Title"]]
    contacts += [[p.name, p.email, p.phone, p.company, p.title] for p in world.contacts]
    book("Customer contacts export", heads["Sales"], 20, {"Contacts": contacts}, viewers=[me])
    metrics = [["Week", "Tickets closed", "Orders shipped", "On-time %"]]
    for week in range(1, 10):
        metrics.append(
            [f"2026-W{week:02d}", str(rng.randint(40, 90)), str(rng.randint(100, 300)), str(rng.randint(88, 99))]
        )
    book("Weekly ops metrics", me, 1, {"2026": metrics}, viewers=[heads["Support"]])
    book("Conference travel 2026", heads["Marketing"], 35, {"Trips": [["Event", "City", "Budget"]]}, editors=[me])
    book("Headcount plan 2026", heads["People"], 50, {"Plan": [["Department", "Open roles"], ["Sales", "3"]]})
    book("Office move checklist", me, 12, {"Tasks": [["Task", "Owner", "Done"], ["Book movers", me, "no"]]})
    book("Team offsite budget", me, 30, {"Costs": [["Item", "Amount"], ["Venue", "4200"], ["Catering", "1850"]]})
    book("Untitled spreadsheet", me, 90, {"Sheet1": []})
    return state
