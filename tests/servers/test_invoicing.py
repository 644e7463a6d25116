"""The invoicing service: customers, invoice lifecycle, payments, refunds, credit notes, overdue."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.invoicing import InvoicingState
from servers.native.invoicing import service as svc
from servers.population import Population


@pytest.fixture
def state() -> InvoicingState:
    return svc.seed_state(7)


def call(state: InvoicingState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def first_invoice(state: InvoicingState, status: str, paid: bool | None = None) -> str:
    return next(
        i.id for i in state.invoices.values() if i.status == status and (paid is None or (i.amount_paid > 0) == paid)
    )


def new_draft(state: InvoicingState) -> str:
    customer = next(c for c in state.customers.values() if not c.archived)
    env = call(state, "create_invoice", customer_id=customer.id, memo="Q1 hardware")
    assert env["success"], env
    return str(env["data"]["id"])


def test_list_invoices_filters_by_status_and_paginates(state: InvoicingState) -> None:
    env = call(state, "list_invoices", status="open", limit=5)
    assert env["success"]
    page = env["data"]
    assert len(page["items"]) == 5 and page["next_offset"] == 5
    assert page["total"] == sum(i.status == "open" for i in state.invoices.values())
    assert all(item["status"] == "open" for item in page["items"])
    rest = call(state, "list_invoices", status="open", offset=5, limit=200)["data"]
    assert rest["next_offset"] is None and len(rest["items"]) == page["total"] - 5


def test_list_invoices_finds_by_number_and_sku(state: InvoicingState) -> None:
    invoice = next(iter(state.invoices.values()))
    items = call(state, "list_invoices", number=invoice.number)["data"]["items"]
    assert [i["id"] for i in items] == [invoice.id]
    sku = invoice.lines[0].sku
    assert all(
        any(line["sku"] == sku for line in i["lines"]) for i in call(state, "list_invoices", sku=sku)["data"]["items"]
    )


def test_list_customers_hides_archived_unless_asked(state: InvoicingState) -> None:
    active = call(state, "list_customers", limit=200)["data"]
    every = call(state, "list_customers", include_archived=True, limit=200)["data"]
    assert not any(c["archived"] for c in active["items"])
    assert every["total"] == len(state.customers) > active["total"]


def test_get_customer_and_unknown_id_quotes_the_id(state: InvoicingState) -> None:
    customer_id = next(iter(state.customers))
    assert call(state, "get_customer", customer_id=customer_id)["data"]["id"] == customer_id
    env = call(state, "get_invoice", invoice_id="inv_9999")
    assert env["error"]["code"] == 404 and "'inv_9999'" in env["error"]["message"]


def test_create_customer_with_taken_billing_email_is_a_conflict(state: InvoicingState) -> None:
    taken = next(c for c in state.customers.values() if not c.archived)
    before = svc.state_hash(state)
    env = call(state, "create_customer", company="New Co", billing_email=taken.billing_email, contact_name="A B")
    assert env["error"]["code"] == 409
    assert svc.state_hash(state) == before


def test_update_customer_changes_terms_only(state: InvoicingState) -> None:
    customer = next(c for c in state.customers.values() if not c.archived)
    data = call(state, "update_customer", customer_id=customer.id, net_terms=60)["data"]
    assert data["net_terms"] == 60 and data["billing_email"] == customer.billing_email


def test_archive_customer_with_open_invoices_is_a_conflict(state: InvoicingState) -> None:
    open_invoice = state.invoices[first_invoice(state, "open")]
    env = call(state, "archive_customer", customer_id=open_invoice.customer_id)
    assert env["error"]["code"] == 409 and open_invoice.number in env["error"]["message"]


def test_draft_to_open_to_paid_with_a_partial_payment(state: InvoicingState) -> None:
    invoice_id = new_draft(state)
    line = call(state, "add_invoice_line", invoice_id=invoice_id, sku="SKU-100", quantity=4, unit_price=50)
    assert line["data"]["total"] > 0 and line["data"]["lines"][0]["amount"] == 200
    opened = call(state, "finalize_invoice", invoice_id=invoice_id)["data"]
    assert opened["status"] == "open" and opened["due_date"] is not None
    total = opened["total"]
    partial = call(state, "record_payment", invoice_id=invoice_id, amount=50)
    assert partial["success"] and state.invoices[invoice_id].status == "open"
    call(state, "record_payment", invoice_id=invoice_id, amount=round(total - 50, 2))
    assert state.invoices[invoice_id].status == "paid" and state.invoices[invoice_id].amount_due == 0


def test_adding_a_sku_twice_adds_up_the_quantity(state: InvoicingState) -> None:
    invoice_id = new_draft(state)
    call(state, "add_invoice_line", invoice_id=invoice_id, sku="SKU-101", quantity=2)
    lines = call(state, "add_invoice_line", invoice_id=invoice_id, sku="SKU-101", quantity=3)["data"]["lines"]
    assert [(line["sku"], line["quantity"]) for line in lines] == [("SKU-101", 5)]


def test_unknown_sku_is_a_404(state: InvoicingState) -> None:
    env = call(state, "add_invoice_line", invoice_id=new_draft(state), sku="SKU-999", quantity=1)
    assert env["error"]["code"] == 404 and "'SKU-999'" in env["error"]["message"]


def test_finalizing_an_empty_draft_is_a_conflict(state: InvoicingState) -> None:
    env = call(state, "finalize_invoice", invoice_id=new_draft(state))
    assert env["error"]["code"] == 409


def test_editing_an_open_invoice_is_a_conflict(state: InvoicingState) -> None:
    env = call(state, "add_invoice_line", invoice_id=first_invoice(state, "open"), sku="SKU-100", quantity=1)
    assert env["error"]["code"] == 409


def test_update_invoice_removes_a_line(state: InvoicingState) -> None:
    invoice_id = first_invoice(state, "draft")
    sku = state.invoices[invoice_id].lines[0].sku
    data = call(state, "update_invoice", invoice_id=invoice_id, remove_sku=sku, memo="revised")["data"]
    assert sku not in [line["sku"] for line in data["lines"]] and data["memo"] == "revised"


def test_overpayment_is_a_400_naming_amount_and_leaves_state_unchanged(state: InvoicingState) -> None:
    invoice_id = first_invoice(state, "open")
    before = svc.state_hash(state)
    env = call(state, "record_payment", invoice_id=invoice_id, amount=state.invoices[invoice_id].amount_due + 1)
    assert env["error"]["code"] == 400 and "'amount'" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_paying_a_paid_invoice_is_a_conflict(state: InvoicingState) -> None:
    env = call(state, "record_payment", invoice_id=first_invoice(state, "paid"), amount=1)
    assert env["error"]["code"] == 409


def test_refund_within_the_payment_succeeds(state: InvoicingState) -> None:
    payment = next(p for p in state.payments.values() if p.amount_refunded == 0)
    env = call(state, "refund_payment", payment_id=payment.id, amount=10, reason="returned")
    assert env["success"] and env["data"]["amount"] == 10
    assert state.payments[payment.id].amount_refunded == 10
    assert state.invoices[payment.invoice_id].amount_refunded >= 10


def test_refund_more_than_paid_is_a_400(state: InvoicingState) -> None:
    payment = next(iter(state.payments.values()))
    before = svc.state_hash(state)
    env = call(state, "refund_payment", payment_id=payment.id, amount=payment.amount + 1, reason="x")
    assert env["error"]["code"] == 400 and "'amount'" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_credit_note_for_all_that_is_due_marks_the_invoice_paid(state: InvoicingState) -> None:
    invoice_id = first_invoice(state, "open", paid=False)
    due = state.invoices[invoice_id].amount_due
    note = call(state, "issue_credit_note", invoice_id=invoice_id, amount=due, reason="write-off")["data"]
    assert note["number"].startswith("CN-") and note["invoice_id"] == invoice_id
    assert state.invoices[invoice_id].status == "paid" and state.invoices[invoice_id].amount_credited >= due


def test_voiding_a_paid_invoice_is_a_conflict(state: InvoicingState) -> None:
    before = svc.state_hash(state)
    env = call(state, "void_invoice", invoice_id=first_invoice(state, "paid"))
    assert env["error"]["code"] == 409
    assert svc.state_hash(state) == before


def test_voiding_a_partly_paid_invoice_is_a_conflict(state: InvoicingState) -> None:
    assert call(state, "void_invoice", invoice_id=first_invoice(state, "open", paid=True))["error"]["code"] == 409


def test_void_an_unpaid_open_invoice(state: InvoicingState) -> None:
    data = call(state, "void_invoice", invoice_id=first_invoice(state, "open", paid=False))["data"]
    assert data["status"] == "void" and data["voided_at"] is not None


def test_send_invoice_defaults_to_billing_email(state: InvoicingState) -> None:
    invoice = state.invoices[first_invoice(state, "open")]
    data = call(state, "send_invoice", invoice_id=invoice.id)["data"]
    assert data["last_sent_to"] == invoice.billing_email and data["times_sent"] == invoice.times_sent


def test_sending_a_draft_is_a_conflict(state: InvoicingState) -> None:
    assert call(state, "send_invoice", invoice_id=first_invoice(state, "draft"))["error"]["code"] == 409


def test_overdue_listing_is_open_and_past_due(state: InvoicingState) -> None:
    page = call(state, "list_overdue_invoices", limit=200)["data"]
    assert page["total"] > 0
    today = state.clock.date().isoformat()
    assert all(i["status"] == "open" and i["due_date"] < today for i in page["items"])
    assert [i["due_date"] for i in page["items"]] == sorted(i["due_date"] for i in page["items"])


def test_list_payments_of_an_invoice(state: InvoicingState) -> None:
    payment = next(iter(state.payments.values()))
    items = call(state, "list_payments", invoice_id=payment.invoice_id)["data"]["items"]
    assert payment.id in [p["id"] for p in items]
    assert all(p["invoice_id"] == payment.invoice_id for p in items)


def test_customers_bill_population_companies_at_their_contacts_addresses() -> None:
    world = Population.generate(7)
    companies = {c.name: c.id for c in world.companies}
    state = svc.seed_state(7)
    for customer in state.customers.values():
        assert customer.company in companies
        assert customer.billing_email in {p.email for p in world.contacts_of(companies[customer.company])}
    skus = {p.sku for p in world.products}
    assert all(line.sku in skus for i in state.invoices.values() for line in i.lines)


def test_create_customer_then_archive_it(state: InvoicingState) -> None:
    env = call(state, "create_customer", company="Acme Corp", billing_email="ap@acme.io", contact_name="Ann Payable")
    assert env["success"] and env["data"]["net_terms"] == 30 and env["data"]["archived"] is False
    archived = call(state, "archive_customer", customer_id=env["data"]["id"])["data"]
    assert archived["archived"] is True
    assert call(state, "create_invoice", customer_id=archived["id"])["error"]["code"] == 409
