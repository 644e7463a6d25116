"""Invoicing: customers, invoices with line items, payments, refunds and credit notes.

Tools: list_customers, get_customer, create_customer, update_customer, archive_customer,
list_invoices, get_invoice, create_invoice, add_invoice_line, update_invoice, finalize_invoice,
send_invoice, record_payment, refund_payment, issue_credit_note, void_invoice,
list_overdue_invoices, list_payments.
State: customers, invoices, payments, refunds and credit notes by id; the price list by SKU;
the next invoice (INV-) and credit note (CN-) numbers.
Seed: a billing customer for every customer, partner and prospect company of the population
(billing email = one of its contacts), a second billing contact at the same companies
(near-duplicates) and archived stale duplicates; about 50 invoices in every status — drafts,
open (some overdue, some partly paid or credited), paid (a few partly refunded), void — including
voided invoices re-issued with the same lines; the payments, refunds and credit notes behind them.
Rules: invoices go draft → open → paid, or to void; only drafts can be edited and a draft needs a
line to be finalised (409); only open invoices take payments and credit notes, which may not
exceed the amount due (400); a refund may not exceed what is left of its payment (400); paid
invoices and invoices with payments cannot be voided (409); drafts and void invoices cannot be
sent (409); archived customers cannot be invoiced or edited, customers with draft or open
invoices cannot be archived, and an active customer's billing email is unique (409).
Version history: 1 — first version.
"""

from __future__ import annotations

from servers.framework import BadRequest, Conflict, NotFound, Page, Service, contains, paginate, require
from servers.types import (
    CompanyName,
    CountryCode,
    Currency,
    EmailAddress,
    Flag,
    Limit,
    MoneyAmount,
    Note,
    Offset,
    Percentage,
    PersonName,
    Quantity,
    Query,
    ReferenceCode,
    Sku,
    StreetAddress,
)

from .models import MAX_TOTAL as MAX_TOTAL
from .models import TAX_BY_COUNTRY as TAX_BY_COUNTRY
from .models import (
    CreditNote,
    Customer,
    CustomerId,
    Invoice,
    InvoiceId,
    InvoiceStatus,
    InvoicingState,
    LineItem,
    NetTerms,
    Payment,
    PaymentId,
    PaymentMethod,
    Refund,
    check_total,
    finalize,
    new_credit,
    new_invoice,
    new_payment,
    new_refund,
    positive,
    recompute,
    round_money,
)
from .models import CreditNoteId as CreditNoteId
from .models import PriceListItem as PriceListItem
from .models import RefundId as RefundId
from .seed import seed

service = Service(
    "invoicing",
    version=1,
    category="finance",
    description="Accounts receivable: bill customers, record payments, refunds and credit notes.",
    modelled_on="Stripe Invoicing API (customers, invoices, payments, refunds, credit notes)",
    state=InvoicingState,
    seed=seed,
    # invoice totals are recomputed from lines, payments, refunds and credit notes; numbers come from counters
    system_fields=(
        "created_at",
        "number",
        "next_invoice_number",
        "next_credit_number",
        "subtotal",
        "tax",
        "total",
        "amount_paid",
        "amount_refunded",
        "amount_credited",
        "amount_due",
    ),
)


def _same(a: str, b: str | None) -> bool:
    return b is None or a.lower() == b.lower()


def _active_customer(state: InvoicingState, customer_id: str) -> Customer:
    record = require(state.customers, customer_id, "customer")
    if record.archived:
        raise Conflict(f"customer {customer_id!r} is archived")
    return record


def _check_unique_email(state: InvoicingState, email: str, customer_id: str | None = None) -> None:
    for other in state.customers.values():
        if other.id != customer_id and not other.archived and _same(other.billing_email, email):
            raise Conflict(f"billing email {email!r} already belongs to active customer {other.id!r}")


@service.read(
    op="list", entity="customer", collection="customers", reads=("company", "contact_name", "billing_email", "archived")
)
def list_customers(
    state: InvoicingState,
    query: Query | None = None,
    company: CompanyName | None = None,
    billing_email: EmailAddress | None = None,
    include_archived: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Customer]:
    """List billing customers, sorted by company, with optional filters.

    Args:
        query: Case-insensitive text to find in the company, contact name or billing email.
        company: Only customers of this company (exact name, case-insensitive).
        billing_email: Only the customer with this billing email.
        include_archived: Also list archived customers.
        offset: Number of customers to skip.
        limit: Maximum number of customers to return.
    """
    rows = [
        c
        for c in state.customers.values()
        if (include_archived or not c.archived)
        and (query is None or any(contains(v, query) for v in (c.company, c.contact_name, c.billing_email)))
        and _same(c.company, company)
        and _same(c.billing_email, billing_email)
    ]
    return paginate(sorted(rows, key=lambda c: (c.company, c.id)), offset, limit)


@service.read(op="get", entity="customer", collection="customers")
def get_customer(state: InvoicingState, customer_id: CustomerId) -> Customer:
    """Get one billing customer.

    Args:
        customer_id: Id of the customer.
    """
    return require(state.customers, customer_id, "customer")


@service.write(
    op="create",
    entity="customer",
    collection="customers",
    sets=("company", "billing_email", "contact_name", "currency", "country", "address", "net_terms"),
)
def create_customer(
    state: InvoicingState,
    company: CompanyName,
    billing_email: EmailAddress,
    contact_name: PersonName,
    currency: Currency = "USD",
    country: CountryCode = "US",
    net_terms: NetTerms = 30,
    address: StreetAddress | None = None,
) -> Customer:
    """Create a billing customer; the billing email must not belong to another active customer.

    Args:
        company: Company to bill.
        billing_email: Address invoices are sent to.
        contact_name: Name of the billing contact.
        currency: Currency to invoice in.
        country: Country of the billing address.
        net_terms: Days from issue until an invoice is due.
        address: Billing address.
    """
    _check_unique_email(state, billing_email)
    record = Customer(
        id=state.new_id("cus"),
        company=company,
        billing_email=billing_email,
        contact_name=contact_name,
        currency=currency,
        country=country,
        address=address,
        net_terms=net_terms,
        created_at=state.tick(),
    )
    state.customers[record.id] = record
    return record


@service.write(
    op="update",
    entity="customer",
    collection="customers",
    sets=("billing_email", "contact_name", "net_terms", "address"),
)
def update_customer(
    state: InvoicingState,
    customer_id: CustomerId,
    billing_email: EmailAddress | None = None,
    contact_name: PersonName | None = None,
    net_terms: NetTerms | None = None,
    address: StreetAddress | None = None,
) -> Customer:
    """Change a customer's billing contact, terms or address; omitted fields stay as they are.

    Args:
        customer_id: Id of the customer (not archived).
        billing_email: New billing email, used by invoices created from now on.
        contact_name: New billing contact name.
        net_terms: New payment terms in days, used by invoices finalised from now on.
        address: New billing address.
    """
    record = _active_customer(state, customer_id)
    if billing_email is not None:
        _check_unique_email(state, billing_email, customer_id)
    changes = dict(billing_email=billing_email, contact_name=contact_name, net_terms=net_terms, address=address)
    updated = record.model_copy(update={k: v for k, v in changes.items() if v is not None})
    state.customers[customer_id] = updated
    return updated


@service.write(op="transition", entity="customer", collection="customers", sets=("archived",))
def archive_customer(state: InvoicingState, customer_id: CustomerId) -> Customer:
    """Archive a customer that has no draft or open invoices left.

    Args:
        customer_id: Id of the customer.
    """
    record = _active_customer(state, customer_id)
    pending = sorted(
        i.number for i in state.invoices.values() if i.customer_id == customer_id and i.status in ("draft", "open")
    )
    if pending:
        raise Conflict(f"customer {customer_id!r} still has draft or open invoices: {', '.join(pending)}")
    record.archived = True
    return record


@service.read(
    op="list",
    entity="invoice",
    collection="invoices",
    reads=("status", "customer_id", "company", "number", "po_number", "lines.sku", "memo", "billing_email"),
)
def list_invoices(
    state: InvoicingState,
    status: InvoiceStatus | None = None,
    customer_id: CustomerId | None = None,
    company: CompanyName | None = None,
    number: ReferenceCode | None = None,
    po_number: ReferenceCode | None = None,
    sku: Sku | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Invoice]:
    """List invoices, newest first, with optional filters.

    Args:
        status: Only invoices in this status.
        customer_id: Only invoices of this customer.
        company: Only invoices billed to this company (exact name, case-insensitive).
        number: Only the invoice with this number, e.g. INV-1042.
        po_number: Only invoices quoting this purchase order number.
        sku: Only invoices with a line for this product SKU.
        query: Case-insensitive text to find in the company, memo or billing email.
        offset: Number of invoices to skip.
        limit: Maximum number of invoices to return.
    """
    rows = [
        i
        for i in state.invoices.values()
        if (status is None or i.status == status)
        and (customer_id is None or i.customer_id == customer_id)
        and _same(i.company, company)
        and (number is None or i.number == number)
        and (po_number is None or i.po_number == po_number)
        and (sku is None or any(line.sku == sku for line in i.lines))
        and (query is None or any(contains(v, query) for v in (i.company, i.memo, i.billing_email)))
    ]
    return paginate(sorted(rows, key=lambda i: (i.created_at, i.id), reverse=True), offset, limit)


@service.read(op="get", entity="invoice", collection="invoices")
def get_invoice(state: InvoicingState, invoice_id: InvoiceId) -> Invoice:
    """Get one invoice with its lines and amounts.

    Args:
        invoice_id: Id of the invoice.
    """
    return require(state.invoices, invoice_id, "invoice")


@service.write(
    op="create",
    entity="invoice",
    collection="invoices",
    sets=("customer_id", "company", "billing_email", "status", "currency", "tax_rate", "memo", "po_number"),
)
def create_invoice(
    state: InvoicingState,
    customer_id: CustomerId,
    memo: Note = "",
    po_number: ReferenceCode | None = None,
    tax_rate: Percentage | None = None,
) -> Invoice:
    """Create an empty draft invoice for a customer; add lines with add_invoice_line.

    Args:
        customer_id: Id of the customer to bill (not archived).
        memo: Memo printed on the invoice.
        po_number: Customer's purchase order number.
        tax_rate: Tax rate in percent; defaults to the rate of the customer's country.
    """
    customer = _active_customer(state, customer_id)
    invoice = new_invoice(state, customer, state.tick(), memo, po_number)
    invoice.tax_rate = invoice.tax_rate if tax_rate is None else tax_rate
    return invoice


def _draft(state: InvoicingState, invoice_id: str) -> Invoice:
    invoice = require(state.invoices, invoice_id, "invoice")
    if invoice.status != "draft":
        raise Conflict(f"invoice {invoice_id!r} is {invoice.status!r}; only draft invoices can be edited")
    return invoice


@service.write(op="append", entity="invoice", collection="invoices", sets=("lines",))
def add_invoice_line(
    state: InvoicingState,
    invoice_id: InvoiceId,
    sku: Sku,
    quantity: Quantity,
    unit_price: MoneyAmount | None = None,
) -> Invoice:
    """Add a product line to a draft invoice; a SKU already on it gets its quantity increased.

    Args:
        invoice_id: Id of the draft invoice.
        sku: SKU of a product on the price list.
        quantity: Number of units (at least 1).
        unit_price: Price of one unit; defaults to the list price (or the line's current price).
    """
    invoice = _draft(state, invoice_id)
    product = require(state.price_list, sku, "product")
    if quantity < 1:
        raise BadRequest("argument 'quantity': must be at least 1")
    old = next((line for line in invoice.lines if line.sku == sku), None)
    if old is not None and unit_price is not None and round_money(unit_price) != old.unit_price:
        raise Conflict(f"invoice {invoice_id!r} already bills {sku!r} at {old.unit_price}; the price must match")
    price = old.unit_price if old else round_money(product.unit_price if unit_price is None else unit_price)
    qty = quantity + (old.quantity if old else 0)
    if qty > 1_000_000:
        raise BadRequest("argument 'quantity': a line holds at most 1,000,000 units")
    amount = round_money(qty * price)
    check_total("quantity", invoice.subtotal - (old.amount if old else 0) + amount, invoice.tax_rate)
    line = LineItem(sku=sku, description=product.name, quantity=qty, unit_price=price, amount=amount)
    if old is not None:
        invoice.lines[invoice.lines.index(old)] = line
    else:
        invoice.lines.append(line)
    recompute(invoice)
    return invoice


@service.write(op="update", entity="invoice", collection="invoices", sets=("memo", "po_number", "tax_rate", "lines"))
def update_invoice(
    state: InvoicingState,
    invoice_id: InvoiceId,
    memo: Note | None = None,
    po_number: ReferenceCode | None = None,
    tax_rate: Percentage | None = None,
    remove_sku: Sku | None = None,
) -> Invoice:
    """Edit a draft invoice: memo, PO number, tax rate, or remove a line; omitted fields stay.

    Args:
        invoice_id: Id of the draft invoice.
        memo: New memo.
        po_number: New purchase order number.
        tax_rate: New tax rate in percent.
        remove_sku: SKU of a line to remove from the invoice.
    """
    invoice = _draft(state, invoice_id)
    if remove_sku is not None and all(line.sku != remove_sku for line in invoice.lines):
        raise BadRequest(f"argument 'remove_sku': invoice {invoice_id!r} has no line for {remove_sku!r}")
    if tax_rate is not None:
        check_total("tax_rate", invoice.subtotal, tax_rate)
    invoice.memo = invoice.memo if memo is None else memo
    invoice.po_number = po_number or invoice.po_number
    invoice.tax_rate = invoice.tax_rate if tax_rate is None else tax_rate
    invoice.lines = [line for line in invoice.lines if line.sku != remove_sku]
    recompute(invoice)
    return invoice


@service.write(
    op="transition", entity="invoice", collection="invoices", sets=("status", "issued_at", "due_date", "paid_at")
)
def finalize_invoice(state: InvoicingState, invoice_id: InvoiceId) -> Invoice:
    """Finalise a draft invoice: it becomes open, due after the customer's terms (paid if its total is 0).

    Args:
        invoice_id: Id of the draft invoice.
    """
    invoice = _draft(state, invoice_id)
    customer = _active_customer(state, invoice.customer_id)
    if not invoice.lines:
        raise Conflict(f"invoice {invoice_id!r} has no line items; add one with add_invoice_line first")
    now = state.tick()
    finalize(invoice, customer.net_terms, now)
    if invoice.amount_due == 0:  # nothing to collect, as for a free or fully discounted order
        invoice.status, invoice.paid_at = "paid", now
    return invoice


@service.write(op="send", entity="invoice", collection="invoices", sets=("last_sent_to", "times_sent"))
def send_invoice(state: InvoicingState, invoice_id: InvoiceId, to: EmailAddress | None = None) -> Invoice:
    """Email an open or paid invoice to the customer (a draft must be finalised first).

    Args:
        invoice_id: Id of the invoice.
        to: Recipient address; defaults to the invoice's billing email.
    """
    invoice = require(state.invoices, invoice_id, "invoice")
    if invoice.status in ("draft", "void"):
        raise Conflict(f"invoice {invoice_id!r} is {invoice.status!r}; only open or paid invoices can be sent")
    state.tick()
    invoice.last_sent_to, invoice.times_sent = to or invoice.billing_email, invoice.times_sent + 1
    return invoice


def _open(state: InvoicingState, invoice_id: str) -> Invoice:
    invoice = require(state.invoices, invoice_id, "invoice")
    if invoice.status != "open":
        raise Conflict(f"invoice {invoice_id!r} is {invoice.status!r}; only open invoices accept this")
    return invoice


def _within_due(invoice: Invoice, amount: float) -> float:
    amount = positive("amount", amount)
    if amount > invoice.amount_due:
        raise BadRequest(f"argument 'amount': {amount} exceeds the amount due {invoice.amount_due} on {invoice.id!r}")
    return amount


@service.write(
    op="create",
    entity="payment",
    collection="payments",
    sets=("invoice_id", "invoice_number", "company", "amount", "currency", "method", "reference", "received_at"),
)
def record_payment(
    state: InvoicingState,
    invoice_id: InvoiceId,
    amount: MoneyAmount,
    method: PaymentMethod = "bank_transfer",
    reference: ReferenceCode | None = None,
) -> Payment:
    """Record a full or partial payment on an open invoice; paying all that is due marks it paid.

    Args:
        invoice_id: Id of the open invoice.
        amount: Amount received; must not exceed the amount due.
        method: How the customer paid.
        reference: Bank or remittance reference of the payment.
    """
    invoice = _open(state, invoice_id)
    amount = _within_due(invoice, amount)
    return new_payment(state, invoice, amount, method, reference, state.tick())


@service.write(
    op="create",
    entity="refund",
    collection="refunds",
    sets=("payment_id", "invoice_id", "amount", "currency", "reason"),
)
def refund_payment(state: InvoicingState, payment_id: PaymentId, amount: MoneyAmount, reason: Note) -> Refund:
    """Refund part or all of a payment back to the customer.

    Args:
        payment_id: Id of the payment.
        amount: Amount to refund; at most the payment amount minus earlier refunds.
        reason: Why the money is refunded.
    """
    payment = require(state.payments, payment_id, "payment")
    amount = positive("amount", amount)
    left = round_money(payment.amount - payment.amount_refunded)
    if amount > left:
        raise BadRequest(f"argument 'amount': {amount} exceeds the {left} left to refund on {payment_id!r}")
    return new_refund(state, payment, amount, reason, state.tick())


@service.write(
    op="create",
    entity="credit_note",
    collection="credit_notes",
    sets=("invoice_id", "invoice_number", "amount", "currency", "reason"),
)
def issue_credit_note(state: InvoicingState, invoice_id: InvoiceId, amount: MoneyAmount, reason: Note) -> CreditNote:
    """Issue a credit note that lowers what an open invoice owes; crediting all that is due marks it paid.

    Args:
        invoice_id: Id of the open invoice.
        amount: Amount to credit; must not exceed the amount due.
        reason: Why the credit is given.
    """
    invoice = _open(state, invoice_id)
    amount = _within_due(invoice, amount)
    return new_credit(state, invoice, amount, reason, state.tick())


@service.write(op="transition", entity="invoice", collection="invoices", sets=("status", "voided_at"))
def void_invoice(state: InvoicingState, invoice_id: InvoiceId) -> Invoice:
    """Void a draft or open invoice that has no payments; paid invoices cannot be voided.

    Args:
        invoice_id: Id of the invoice.
    """
    invoice = require(state.invoices, invoice_id, "invoice")
    if invoice.status in ("paid", "void"):
        raise Conflict(f"invoice {invoice_id!r} is {invoice.status!r} and cannot be voided")
    if invoice.amount_paid > 0:
        raise Conflict(f"invoice {invoice_id!r} has {invoice.amount_paid} in payments; credit it instead of voiding")
    invoice.status, invoice.voided_at = "void", state.tick()
    return invoice


@service.read(op="list", entity="invoice", collection="invoices", reads=("status", "due_date", "customer_id"))
def list_overdue_invoices(
    state: InvoicingState, customer_id: CustomerId | None = None, offset: Offset = 0, limit: Limit = 20
) -> Page[Invoice]:
    """List open invoices whose due date has passed, most overdue first.

    Args:
        customer_id: Only overdue invoices of this customer.
        offset: Number of invoices to skip.
        limit: Maximum number of invoices to return.
    """
    today = state.clock.date()
    rows = [
        i
        for i in state.invoices.values()
        if i.status == "open" and i.due_date and i.due_date < today and customer_id in (None, i.customer_id)
    ]
    return paginate(sorted(rows, key=lambda i: (i.due_date or today, i.id)), offset, limit)


@service.read(op="list", entity="payment", collection="payments", reads=("invoice_id", "company", "method"))
def list_payments(
    state: InvoicingState,
    invoice_id: InvoiceId | None = None,
    company: CompanyName | None = None,
    method: PaymentMethod | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Payment]:
    """List payments received, newest first.

    Args:
        invoice_id: Only payments of this invoice.
        company: Only payments from this company (exact name, case-insensitive).
        method: Only payments made this way.
        offset: Number of payments to skip.
        limit: Maximum number of payments to return.
    """
    if invoice_id is not None and invoice_id not in state.invoices:
        raise NotFound(f"invoice {invoice_id!r} not found")
    rows = [
        p
        for p in state.payments.values()
        if invoice_id in (None, p.invoice_id) and _same(p.company, company) and method in (None, p.method)
    ]
    return paginate(sorted(rows, key=lambda p: (p.received_at, p.id), reverse=True), offset, limit)
