"""Invoicing service: id and semantic types, tax table, records, state and the money helpers."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from servers.framework import BadRequest, Record, ServiceState
from servers.roles import ROLE_KEY
from servers.types import (
    CompanyName,
    Count,
    CountryCode,
    Currency,
    Date,
    DateTime,
    EmailAddress,
    Flag,
    MoneyAmount,
    Note,
    Percentage,
    PersonName,
    ProductName,
    Quantity,
    ReferenceCode,
    Sku,
    StreetAddress,
    ident,
    sem,
)

CustomerId = Annotated[str, ident("invoicing", "customer")]
InvoiceId = Annotated[str, ident("invoicing", "invoice")]
PaymentId = Annotated[str, ident("invoicing", "payment")]
RefundId = Annotated[str, ident("invoicing", "refund")]
CreditNoteId = Annotated[str, ident("invoicing", "credit_note")]
InvoiceStatus = Annotated[
    Literal["draft", "open", "paid", "void"],
    sem("invoicing.invoice_status", "Invoice status: draft (editable), open (awaiting payment), paid or void."),
]
PaymentMethod = Annotated[
    Literal["bank_transfer", "card", "check", "cash"], sem("invoicing.payment_method", "How a payment was made.")
]
NetTerms = Annotated[int, sem("invoicing.net_terms", "Days from issue until an invoice is due.", ge=0, le=120)]

MAX_TOTAL = 1e9
TAX_BY_COUNTRY = {"US": 0.0, "GB": 20.0, "DE": 19.0, "FR": 20.0}


class Customer(Record):
    id: CustomerId
    company: CompanyName = Field(description="Company that is billed.", json_schema_extra={ROLE_KEY: "customer"})
    billing_email: EmailAddress = Field(
        description="Address invoices are sent to (the billing contact).", json_schema_extra={ROLE_KEY: "contact"}
    )
    contact_name: PersonName = Field(
        description="Name of the billing contact.", json_schema_extra={ROLE_KEY: "contact"}
    )
    currency: Currency = Field(description="Currency the customer is invoiced in.")
    country: CountryCode = Field(description="Country of the billing address.")
    address: StreetAddress | None = Field(default=None, description="Billing address, if known.")
    net_terms: NetTerms
    archived: Flag = Field(default=False, description="Whether the customer is archived (no new invoices).")
    created_at: DateTime = Field(description="When the customer was created.")


class LineItem(Record):
    sku: Sku
    description: ProductName = Field(description="Product name printed on the line.")
    quantity: Quantity
    unit_price: MoneyAmount = Field(
        description="Price of one unit in the invoice currency.", json_schema_extra={ROLE_KEY: "price"}
    )
    amount: MoneyAmount = Field(
        description="Line total: quantity × unit price.", json_schema_extra={ROLE_KEY: "amount_due"}
    )


class Invoice(Record):
    id: InvoiceId
    number: ReferenceCode = Field(description="Invoice number, e.g. INV-1042.")
    customer_id: CustomerId
    company: CompanyName = Field(description="Company billed.", json_schema_extra={ROLE_KEY: "customer"})
    billing_email: EmailAddress = Field(
        description="Billing address of the customer when invoiced.", json_schema_extra={ROLE_KEY: "contact"}
    )
    status: InvoiceStatus
    currency: Currency
    lines: list[LineItem] = Field(default_factory=list, description="Line items, one per SKU.")
    tax_rate: Percentage = Field(description="Tax rate applied to the subtotal.")
    subtotal: MoneyAmount = Field(default=0.0, description="Sum of the line amounts.")
    tax: MoneyAmount = Field(default=0.0, description="Tax on the subtotal.")
    total: MoneyAmount = Field(default=0.0, description="Subtotal plus tax.")
    amount_paid: MoneyAmount = Field(default=0.0, description="Sum of the payments recorded.")
    amount_refunded: MoneyAmount = Field(default=0.0, description="Sum refunded on those payments.")
    amount_credited: MoneyAmount = Field(default=0.0, description="Sum of the credit notes issued.")
    amount_due: MoneyAmount = Field(default=0.0, description="Still to pay: total − paid − credited.")
    po_number: ReferenceCode | None = Field(default=None, description="Customer's purchase order number.")
    memo: Note = Field(default="", description="Memo printed on the invoice.")
    created_at: DateTime = Field(description="When the invoice was created.")
    issued_at: DateTime | None = Field(
        default=None, description="When it was finalised, if it was.", json_schema_extra={ROLE_KEY: "event"}
    )
    due_date: Date | None = Field(
        default=None, description="Date payment is due (set when finalised).", json_schema_extra={ROLE_KEY: "due"}
    )
    paid_at: DateTime | None = Field(
        default=None, description="When it was paid in full.", json_schema_extra={ROLE_KEY: "event"}
    )
    voided_at: DateTime | None = Field(
        default=None, description="When it was voided.", json_schema_extra={ROLE_KEY: "event"}
    )
    last_sent_to: EmailAddress | None = Field(
        default=None, description="Address it was last sent to.", json_schema_extra={ROLE_KEY: "recipient"}
    )
    times_sent: Count = Field(default=0, description="How many times it has been sent.")


class Payment(Record):
    id: PaymentId
    invoice_id: InvoiceId
    invoice_number: ReferenceCode = Field(description="Number of the invoice paid.")
    company: CompanyName = Field(description="Company that paid.", json_schema_extra={ROLE_KEY: "customer"})
    amount: MoneyAmount = Field(description="Amount received.", json_schema_extra={ROLE_KEY: "amount_paid"})
    currency: Currency
    method: PaymentMethod
    reference: ReferenceCode | None = Field(default=None, description="Bank or remittance reference.")
    received_at: DateTime = Field(description="When the payment was received.", json_schema_extra={ROLE_KEY: "event"})
    amount_refunded: MoneyAmount = Field(default=0.0, description="Amount refunded from this payment.")


class Refund(Record):
    id: RefundId
    payment_id: PaymentId
    invoice_id: InvoiceId
    amount: MoneyAmount = Field(description="Amount refunded.", json_schema_extra={ROLE_KEY: "amount_paid"})
    currency: Currency
    reason: Note = Field(description="Why the money was refunded.")
    created_at: DateTime = Field(description="When the refund was issued.")


class CreditNote(Record):
    id: CreditNoteId
    number: ReferenceCode = Field(description="Credit note number, e.g. CN-0512.")
    invoice_id: InvoiceId
    invoice_number: ReferenceCode = Field(description="Number of the invoice credited.")
    amount: MoneyAmount = Field(
        description="Amount credited against the invoice.", json_schema_extra={ROLE_KEY: "amount_paid"}
    )
    currency: Currency
    reason: Note = Field(description="Why the credit was issued.")
    created_at: DateTime = Field(description="When the credit note was issued.")


class PriceListItem(Record):
    sku: Sku
    name: ProductName
    unit_price: MoneyAmount = Field(description="List price of one unit.", json_schema_extra={ROLE_KEY: "price"})


class InvoicingState(ServiceState):
    customers: dict[str, Customer] = Field(default_factory=dict)
    invoices: dict[str, Invoice] = Field(default_factory=dict)
    payments: dict[str, Payment] = Field(default_factory=dict)
    refunds: dict[str, Refund] = Field(default_factory=dict)
    credit_notes: dict[str, CreditNote] = Field(default_factory=dict)
    price_list: dict[str, PriceListItem] = Field(default_factory=dict)
    next_invoice_number: int = 1001
    next_credit_number: int = 501


def round_money(value: float) -> float:
    return round(value, 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def recompute(invoice: Invoice) -> None:
    invoice.subtotal = round_money(sum(line.amount for line in invoice.lines))
    invoice.tax = round_money(invoice.subtotal * invoice.tax_rate / 100)
    invoice.total = round_money(invoice.subtotal + invoice.tax)
    invoice.amount_due = round_money(max(0.0, invoice.total - invoice.amount_paid - invoice.amount_credited))


def check_total(name: str, subtotal: float, tax_rate: float) -> None:
    if subtotal * (1 + tax_rate / 100) > MAX_TOTAL:
        raise BadRequest(f"argument {name!r}: the invoice total would exceed {MAX_TOTAL:,.0f}")


def positive(name: str, amount: float) -> float:
    if round_money(amount) <= 0:
        raise BadRequest(f"argument {name!r}: must be at least 0.01")
    return round_money(amount)


def new_invoice(state: InvoicingState, customer: Customer, at: dt.datetime, memo: str, po: str | None) -> Invoice:
    tax_rate = TAX_BY_COUNTRY.get(customer.country, 0.0)
    invoice = Invoice(
        id=state.new_id("inv"),
        number=f"INV-{state.next_invoice_number}",
        customer_id=customer.id,
        company=customer.company,
        billing_email=customer.billing_email,
        status="draft",
        currency=customer.currency,
        tax_rate=tax_rate,
        created_at=at,
        memo=memo,
        po_number=po,
    )
    state.next_invoice_number += 1
    state.invoices[invoice.id] = invoice
    return invoice


def finalize(invoice: Invoice, net_terms: int, at: dt.datetime) -> None:
    invoice.status, invoice.issued_at = "open", at
    invoice.due_date = at.date() + dt.timedelta(days=net_terms)


def new_payment(
    state: InvoicingState, invoice: Invoice, amount: float, method: PaymentMethod, ref: str | None, at: dt.datetime
) -> Payment:
    payment = Payment(
        id=state.new_id("pay"),
        invoice_id=invoice.id,
        invoice_number=invoice.number,
        company=invoice.company,
        amount=amount,
        currency=invoice.currency,
        method=method,
        reference=ref,
        received_at=at,
    )
    state.payments[payment.id] = payment
    invoice.amount_paid = round_money(invoice.amount_paid + amount)
    recompute(invoice)
    if invoice.amount_due == 0:
        invoice.status, invoice.paid_at = "paid", at
    return payment


def new_credit(state: InvoicingState, invoice: Invoice, amount: float, reason: str, at: dt.datetime) -> CreditNote:
    note = CreditNote(
        id=state.new_id("cn"),
        number=f"CN-{state.next_credit_number}",
        invoice_id=invoice.id,
        invoice_number=invoice.number,
        amount=amount,
        currency=invoice.currency,
        reason=reason,
        created_at=at,
    )
    state.next_credit_number += 1
    state.credit_notes[note.id] = note
    invoice.amount_credited = round_money(invoice.amount_credited + amount)
    recompute(invoice)
    if invoice.amount_due == 0:
        invoice.status, invoice.paid_at = "paid", at
    return note


def new_refund(state: InvoicingState, payment: Payment, amount: float, reason: str, at: dt.datetime) -> Refund:
    refund = Refund(
        id=state.new_id("ref"),
        payment_id=payment.id,
        invoice_id=payment.invoice_id,
        amount=amount,
        currency=payment.currency,
        reason=reason,
        created_at=at,
    )
    state.refunds[refund.id] = refund
    payment.amount_refunded = round_money(payment.amount_refunded + amount)
    invoice = state.invoices[payment.invoice_id]
    invoice.amount_refunded = round_money(invoice.amount_refunded + amount)
    return refund
