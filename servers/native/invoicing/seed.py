"""Invoicing seed: billing customers of the population's companies and about 50 invoices with their payments."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import (
    Customer,
    Invoice,
    InvoicingState,
    LineItem,
    PriceListItem,
    finalize,
    new_credit,
    new_invoice,
    new_payment,
    new_refund,
    recompute,
    round_money,
)


def seed(rng: random.Random, world: Population) -> InvoicingState:
    state = InvoicingState(clock=world.now)
    for p in world.products:
        state.price_list[p.sku] = PriceListItem(sku=p.sku, name=p.name, unit_price=p.unit_price)

    def ago(days: float) -> dt.datetime:
        return world.now - dt.timedelta(minutes=int(days * 1440))

    def customer(company_id: str, contact_index: int, archived: bool = False) -> Customer:
        company, contacts = world.company(company_id), world.contacts_of(company_id)
        contact = contacts[contact_index % len(contacts)]
        record = Customer(
            id=state.new_id("cus"),
            company=company.name,
            billing_email=contact.email,
            contact_name=contact.name,
            currency=company.currency,
            country=company.country,
            address=f"{company.address}, {company.city}",
            net_terms=rng.choice((15, 30, 30, 45, 60)),
            archived=archived,
            created_at=ago(rng.randint(200, 700)),
        )
        state.customers[record.id] = record
        return record

    billed = [c for c in world.companies if c.relation in ("customer", "partner", "prospect")]
    active = [customer(c.id, 0) for c in billed]
    active += [customer(c.id, 1) for c in billed if c.relation in ("customer", "partner")]
    stale = [customer(c.id, 2, archived=True) for c in rng.sample(billed, 4)]

    def invoice(cust: Customer, status: str, days: float, reissue_of: Invoice | None = None) -> Invoice:
        po = f"PO-{rng.randint(10000, 99999)}" if rng.random() < 0.5 else None
        inv = new_invoice(state, cust, ago(days), "", po)
        if reissue_of is not None:
            inv.lines = [line.model_copy() for line in reissue_of.lines]
            inv.memo, inv.po_number = f"Re-issue of {reissue_of.number} with corrected billing details.", None
        for p in rng.sample(list(world.products), rng.randint(1, 3)) if reissue_of is None else []:
            qty = rng.randint(1, 12) if p.category == "hardware" else rng.randint(1, 3)
            line = LineItem(sku=p.sku, description=p.name, quantity=qty, unit_price=p.unit_price, amount=0)
            line.amount = round_money(qty * p.unit_price)
            inv.lines.append(line)
        recompute(inv)
        if status == "draft":
            return inv
        finalize(inv, cust.net_terms, ago(days - 0.1))
        inv.last_sent_to, inv.times_sent = cust.billing_email, 1
        if status == "void":
            inv.status, inv.voided_at = "void", ago(days - 1)
        elif status == "partial":
            share = round_money(inv.total * rng.choice((0.25, 0.4, 0.5)))
            new_payment(state, inv, share, "bank_transfer", f"RMT-{rng.randint(100000, 999999)}", ago(days - 5))
        elif status == "paid":
            first = round_money(inv.total / 2) if rng.random() < 0.3 else inv.total
            new_payment(state, inv, first, rng.choice(("bank_transfer", "card", "check")), None, ago(days - 10))
            if inv.amount_due > 0:
                new_payment(state, inv, inv.amount_due, "bank_transfer", None, ago(days - 20))
        return inv

    ages = {"draft": (0.5, 6), "open": (3, 110), "partial": (20, 90), "paid": (40, 200), "void": (30, 120)}
    plan = [(rng.uniform(*ages[s]), rng.choice(active), s) for s in ["draft"] * 6 + ["open"] * 14 + ["partial"] * 4]
    plan += [(rng.uniform(*ages[s]), rng.choice(active), s) for s in ["paid"] * 16 + ["void"] * 3]
    plan += [(rng.uniform(250, 400), cust, "paid") for cust in stale]
    plan += [(rng.uniform(20, 40), cust, "reissued") for cust in rng.sample(active, 2)]
    for days, cust, status in sorted(plan, key=lambda p: -p[0]):  # numbers grow with time
        if status == "reissued":  # voided, then re-issued later with the same lines
            old = invoice(cust, "void", days)
            invoice(cust, "open", days - rng.uniform(2, 15), reissue_of=old)
        else:
            invoice(cust, status, days)
    paid = [p for p in state.payments.values() if state.invoices[p.invoice_id].status == "paid"]
    for payment in rng.sample(paid, 3):
        new_refund(state, payment, round_money(payment.amount * 0.1), "Damaged unit returned.", ago(3))
    unpaid = [i for i in state.invoices.values() if i.status == "open" and i.amount_paid == 0]
    for inv in rng.sample(unpaid, 2):
        new_credit(state, inv, round_money(inv.total * 0.05), "Goodwill discount for late delivery.", ago(2))
    return state
