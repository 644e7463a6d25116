"""Shop: the company's online store — products and stock, customers, orders, discounts, fulfilment.

Tools: list_products, get_product, update_product, restock_product, list_customers,
get_customer, create_customer, list_orders, get_order, create_order, add_order_line,
mark_order_paid, fulfill_order, mark_order_delivered, cancel_order, refund_order,
list_discount_codes, create_discount_code.
State: products by SKU, customers by email, orders by id, discount codes by code; the next order
number (ORD-).
Seed: every product of the population with its stock (some low or sold out), refurbished and
newer variants with similar names, archived old models and an unpublished draft; the
population's external contacts as customers (by email); about 50 orders numbered ORD-1001… in
every status — pending, paid, fulfilled with tracking numbers, delivered, cancelled, refunded —
including a duplicate order cancelled by the customer; eight discount codes, some expired,
used up or switched off, two with near-identical names.
Rules: orders go pending → paid → fulfilled → delivered; ordering more than the stock of a
product is a conflict (409) and stock is reserved when the order is placed; only active products
can be ordered; lines can only be added to pending orders; only paid orders can be fulfilled
(a tracking number is required) and only fulfilled orders delivered (409); orders cannot be
cancelled once fulfilled (409); cancelling puts the stock back and refunds a paid order; a
refund may not exceed what was paid and not yet refunded (400) and a full refund marks the order
refunded; discount codes must be active, unexpired, under their usage limit and their minimum
subtotal met (409); a customer email and a discount code are unique (409).
Version history: 1 — first version.
"""

from __future__ import annotations

import datetime as dt

from servers.framework import BadRequest, Conflict, Page, Service, contains, paginate, require
from servers.types import (
    City,
    CompanyName,
    Count,
    Days,
    EmailAddress,
    Flag,
    Limit,
    MoneyAmount,
    Note,
    Offset,
    Percentage,
    PersonName,
    PhoneNumber,
    ProductName,
    Quantity,
    Query,
    ReferenceCode,
    Sku,
    StreetAddress,
)

from .models import (
    CURRENCY,
    MAX_STOCK,
    MAX_TOTAL,
    SHIPPING_FEE,
    Carrier,
    Category,
    Customer,
    Discount,
    DiscountCode,
    Order,
    OrderId,
    OrderLine,
    OrderStatus,
    Product,
    ProductStatus,
    ShopState,
    TrackingNumber,
    price_order,
    round_money,
)
from .models import FREE_SHIPPING_FROM as FREE_SHIPPING_FROM
from .seed import DISCOUNTS as DISCOUNTS
from .seed import VARIANTS as VARIANTS
from .seed import seed

service = Service(
    "shop",
    version=1,
    category="commerce",
    description="The company's online store: products and stock, customers, orders, discounts and fulfilment.",
    modelled_on="Shopify Admin API (products, inventory, orders, fulfillments, discounts)",
    state=ShopState,
    seed=seed,
    # order prices are recomputed from the lines; stock and refunded_amount are outcomes (restock, refund)
    system_fields=(
        "created_at",
        "updated_at",
        "number",
        "next_order_number",
        "times_used",
        "subtotal",
        "discount_amount",
        "shipping",
        "total",
    ),
)


def _customer(state: ShopState, email: str) -> Customer:
    return require(state.customers, email.lower(), "customer")


def _product(state: ShopState, sku: str) -> Product:
    return require(state.products, sku, "product")


@service.read(op="list", entity="product", collection="products", reads=("name", "sku", "category", "status", "stock"))
def list_products(
    state: ShopState,
    query: Query | None = None,
    category: Category | None = None,
    status: ProductStatus | None = None,
    in_stock_only: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Product]:
    """List products by SKU, with optional filters.

    Args:
        query: Case-insensitive text to find in the product name or SKU.
        category: Only products of this category.
        status: Only products in this status.
        in_stock_only: Only products with at least one unit in stock.
        offset: Number of products to skip.
        limit: Maximum number of products to return.
    """
    rows = [
        p
        for p in state.products.values()
        if (contains(p.name, query) or contains(p.sku, query))
        and category in (None, p.category)
        and status in (None, p.status)
        and (not in_stock_only or p.stock > 0)
    ]
    return paginate(sorted(rows, key=lambda p: p.sku), offset, limit)


@service.read(op="get", entity="product", collection="products")
def get_product(state: ShopState, sku: Sku) -> Product:
    """Get one product with its price and stock.

    Args:
        sku: SKU of the product.
    """
    return _product(state, sku)


@service.write(op="update", entity="product", collection="products", sets=("name", "price", "status"))
def update_product(
    state: ShopState,
    sku: Sku,
    name: ProductName | None = None,
    price: MoneyAmount | None = None,
    status: ProductStatus | None = None,
) -> Product:
    """Rename, reprice, publish or archive a product; omitted fields stay as they are.

    Args:
        sku: SKU of the product.
        name: New product name.
        price: New selling price (at least 0.01); existing orders keep their prices.
        status: New status: active to sell it, archived to stop selling it.
    """
    product = _product(state, sku)
    if price is not None and round_money(price) <= 0:
        raise BadRequest("argument 'price': must be at least 0.01")
    changes = {"name": name, "price": None if price is None else round_money(price), "status": status}
    updated = product.model_copy(update={k: v for k, v in changes.items() if v is not None})
    updated.updated_at = state.tick()
    state.products[sku] = updated
    return updated


@service.write(op="adjust", entity="product", collection="products", sets=("stock",))
def restock_product(state: ShopState, sku: Sku, quantity: Quantity) -> Product:
    """Add received units to a product's stock.

    Args:
        sku: SKU of the product (not archived).
        quantity: Units received (at least 1).
    """
    product = _product(state, sku)
    if product.status == "archived":
        raise Conflict(f"product {sku!r} is archived; set it active before restocking")
    if quantity < 1:
        raise BadRequest("argument 'quantity': must be at least 1")
    if product.stock + quantity > MAX_STOCK:
        raise BadRequest(f"argument 'quantity': stock of {sku!r} would exceed {MAX_STOCK}")
    product.stock += quantity
    product.updated_at = state.tick()
    return product


@service.read(
    op="list", entity="customer", collection="customers", reads=("name", "email", "company", "accepts_marketing")
)
def list_customers(
    state: ShopState,
    query: Query | None = None,
    company: CompanyName | None = None,
    accepts_marketing: Flag | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Customer]:
    """List store customers by name, with optional filters.

    Args:
        query: Case-insensitive text to find in the name or email.
        company: Only customers buying for this company (exact name, case-insensitive).
        accepts_marketing: Only customers who do (true) or do not (false) accept marketing email.
        offset: Number of customers to skip.
        limit: Maximum number of customers to return.
    """
    rows = [
        c
        for c in state.customers.values()
        if (contains(c.name, query) or contains(c.email, query))
        and (company is None or (c.company or "").lower() == company.lower())
        and accepts_marketing in (None, c.accepts_marketing)
    ]
    return paginate(sorted(rows, key=lambda c: (c.name, c.email)), offset, limit)


@service.read(op="get", entity="customer", collection="customers")
def get_customer(state: ShopState, email: EmailAddress) -> Customer:
    """Get one customer by email address.

    Args:
        email: Email address of the customer.
    """
    return _customer(state, email)


@service.write(
    op="create",
    entity="customer",
    collection="customers",
    sets=("email", "name", "phone", "company", "address", "city", "accepts_marketing"),
)
def create_customer(
    state: ShopState,
    email: EmailAddress,
    name: PersonName,
    address: StreetAddress,
    city: City | None = None,
    phone: PhoneNumber | None = None,
    company: CompanyName | None = None,
    accepts_marketing: Flag = False,
) -> Customer:
    """Create a customer account; the email must not be taken.

    Args:
        email: Email address of the customer.
        name: Full name of the customer.
        address: Default shipping address.
        city: City of the shipping address.
        phone: Phone number.
        company: Company the customer buys for.
        accepts_marketing: Whether the customer accepts marketing email.
    """
    if email.lower() in state.customers:
        raise Conflict(f"customer {email!r} already exists")
    customer = Customer(
        email=email.lower(),
        name=name,
        phone=phone,
        company=company,
        address=address,
        city=city,
        accepts_marketing=accepts_marketing,
        created_at=state.tick(),
    )
    state.customers[customer.email] = customer
    return customer


@service.read(
    op="list",
    entity="order",
    collection="orders",
    reads=("status", "customer_email", "lines.sku", "number", "discount_code"),
)
def list_orders(
    state: ShopState,
    status: OrderStatus | None = None,
    customer_email: EmailAddress | None = None,
    sku: Sku | None = None,
    number: ReferenceCode | None = None,
    discount_code: DiscountCode | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Order]:
    """List orders, newest first, with optional filters.

    Args:
        status: Only orders in this status.
        customer_email: Only orders placed by this customer.
        sku: Only orders with a line for this SKU.
        number: Only the order with this number, e.g. ORD-1042.
        discount_code: Only orders that used this discount code.
        offset: Number of orders to skip.
        limit: Maximum number of orders to return.
    """
    rows = [
        o
        for o in state.orders.values()
        if status in (None, o.status)
        and (customer_email is None or o.customer_email == customer_email.lower())
        and (sku is None or any(line.sku == sku for line in o.lines))
        and number in (None, o.number)
        and discount_code in (None, o.discount_code)
    ]
    return paginate(sorted(rows, key=lambda o: (o.created_at, o.id), reverse=True), offset, limit)


@service.read(op="get", entity="order", collection="orders")
def get_order(state: ShopState, order_id: OrderId) -> Order:
    """Get one order with its lines, amounts and shipment.

    Args:
        order_id: Id of the order.
    """
    return require(state.orders, order_id, "order")


def _check_line(product: Product, quantity: int) -> None:
    if product.status != "active":
        raise Conflict(f"product {product.sku!r} is {product.status!r} and cannot be ordered")
    if quantity < 1:
        raise BadRequest("argument 'quantity': must be at least 1")
    if quantity > product.stock:
        raise Conflict(f"only {product.stock} unit(s) of {product.sku!r} in stock, {quantity} ordered")


def _usable_discount(state: ShopState, code: str, subtotal: float) -> Discount:
    discount = require(state.discounts, code, "discount code")
    if not discount.active or (discount.expires_at is not None and discount.expires_at <= state.clock):
        raise Conflict(f"discount code {code!r} is inactive or expired")
    if discount.usage_limit is not None and discount.times_used >= discount.usage_limit:
        raise Conflict(f"discount code {code!r} has reached its usage limit of {discount.usage_limit}")
    if subtotal < discount.minimum_subtotal:
        raise Conflict(f"discount code {code!r} needs a subtotal of at least {discount.minimum_subtotal}")
    return discount


def _check_total(subtotal: float) -> None:
    if subtotal + SHIPPING_FEE > MAX_TOTAL:
        raise BadRequest(f"argument 'quantity': the order total would exceed {MAX_TOTAL:,.0f}")


@service.write(
    op="create",
    entity="order",
    collection="orders",
    sets=("customer_email", "status", "lines", "currency", "discount_code", "shipping_address"),
)
def create_order(
    state: ShopState,
    customer_email: EmailAddress,
    sku: Sku,
    quantity: Quantity,
    discount_code: DiscountCode | None = None,
    shipping_address: StreetAddress | None = None,
) -> Order:
    """Place a pending order for a customer with one product line; the units are reserved from stock.

    Args:
        customer_email: Email of an existing customer.
        sku: SKU of an active product.
        quantity: Units to order (at least 1, at most the stock).
        discount_code: Discount code to apply.
        shipping_address: Where to ship; defaults to the customer's address.
    """
    customer = _customer(state, customer_email)
    product = _product(state, sku)
    _check_line(product, quantity)
    amount = round_money(quantity * product.price)
    _check_total(amount)
    discount = _usable_discount(state, discount_code, amount) if discount_code is not None else None
    address = shipping_address or ", ".join(x for x in (customer.address, customer.city) if x)
    if not address:
        raise BadRequest(f"argument 'shipping_address': customer {customer.email!r} has no address on file")
    line = OrderLine(sku=sku, name=product.name, quantity=quantity, unit_price=product.price, amount=amount)
    order = Order(
        id=state.new_id("ord"),
        number=f"ORD-{state.next_order_number}",
        customer_email=customer.email,
        status="pending",
        lines=[line],
        currency=CURRENCY,
        discount_code=discount_code,
        shipping_address=address,
        created_at=state.tick(),
    )
    state.next_order_number += 1
    price_order(order, discount)
    product.stock -= quantity
    if discount is not None:
        discount.times_used += 1
    state.orders[order.id] = order
    return order


def _order(state: ShopState, order_id: str, *allowed: str) -> Order:
    order = require(state.orders, order_id, "order")
    if order.status not in allowed:
        raise Conflict(f"order {order_id!r} is {order.status!r}; this needs it to be {' or '.join(allowed)}")
    return order


@service.write(op="append", entity="order", collection="orders", sets=("lines",))
def add_order_line(state: ShopState, order_id: OrderId, sku: Sku, quantity: Quantity) -> Order:
    """Add units of a product to a pending order (a SKU already on it gets its quantity increased).

    Args:
        order_id: Id of the pending order.
        sku: SKU of an active product.
        quantity: Units to add (at least 1, at most the stock).
    """
    order = _order(state, order_id, "pending")
    product = _product(state, sku)
    _check_line(product, quantity)
    old = next((line for line in order.lines if line.sku == sku), None)
    qty = quantity + (old.quantity if old else 0)
    price = old.unit_price if old else product.price
    amount = round_money(qty * price)
    _check_total(order.subtotal - (old.amount if old else 0) + amount)
    discount = state.discounts.get(order.discount_code or "")
    line = OrderLine(sku=sku, name=product.name, quantity=qty, unit_price=price, amount=amount)
    order.lines = [line if x is old else x for x in order.lines] if old else [*order.lines, line]
    price_order(order, discount)
    product.stock -= quantity
    product.updated_at = state.tick()
    return order


@service.write(op="transition", entity="order", collection="orders", sets=("status", "paid_at", "payment_reference"))
def mark_order_paid(state: ShopState, order_id: OrderId, payment_reference: ReferenceCode | None = None) -> Order:
    """Record that a pending order has been paid in full.

    Args:
        order_id: Id of the pending order.
        payment_reference: Reference of the payment, e.g. PAY-123456.
    """
    order = _order(state, order_id, "pending")
    order.status, order.paid_at, order.payment_reference = "paid", state.tick(), payment_reference
    return order


@service.write(
    op="transition", entity="order", collection="orders", sets=("status", "fulfilled_at", "tracking_number", "carrier")
)
def fulfill_order(state: ShopState, order_id: OrderId, tracking_number: TrackingNumber, carrier: Carrier) -> Order:
    """Ship a paid order with the carrier's tracking number.

    Args:
        order_id: Id of the paid order.
        tracking_number: Tracking number from the carrier.
        carrier: Carrier shipping the order.
    """
    order = _order(state, order_id, "paid")
    order.status, order.fulfilled_at = "fulfilled", state.tick()
    order.tracking_number, order.carrier = tracking_number, carrier
    return order


@service.write(op="transition", entity="order", collection="orders", sets=("status", "delivered_at"))
def mark_order_delivered(state: ShopState, order_id: OrderId) -> Order:
    """Record that a fulfilled order reached the customer.

    Args:
        order_id: Id of the fulfilled order.
    """
    order = _order(state, order_id, "fulfilled")
    order.status, order.delivered_at = "delivered", state.tick()
    return order


def _restock(state: ShopState, order: Order) -> None:
    for line in order.lines:
        product = state.products.get(line.sku)
        if product is not None:
            product.stock = min(MAX_STOCK, product.stock + line.quantity)
    order.restocked = True


@service.write(
    op="transition",
    entity="order",
    collection="orders",
    sets=("status", "cancelled_at", "note", "refunded_amount", "restocked"),
)
def cancel_order(state: ShopState, order_id: OrderId, reason: Note, restock: Flag = True) -> Order:
    """Cancel a pending or paid order (not once fulfilled); a paid order is refunded in full.

    Args:
        order_id: Id of the order.
        reason: Why the order is cancelled.
        restock: Put the reserved units back into stock.
    """
    order = _order(state, order_id, "pending", "paid")
    if order.status == "paid":
        order.refunded_amount = order.total
    if restock:
        _restock(state, order)
    order.status, order.cancelled_at, order.note = "cancelled", state.tick(), reason
    return order


@service.write(
    op="action", entity="order", collection="orders", sets=("refunded_amount", "note", "status", "restocked")
)
def refund_order(
    state: ShopState, order_id: OrderId, amount: MoneyAmount, reason: Note, restock: Flag = False
) -> Order:
    """Refund money on a paid, fulfilled or delivered order; refunding everything marks it refunded.

    Args:
        order_id: Id of the order.
        amount: Amount to refund; at most the total minus earlier refunds.
        reason: Why the money is refunded.
        restock: The units came back: put them into stock (once per order).
    """
    order = _order(state, order_id, "paid", "fulfilled", "delivered")
    left = round_money(order.total - order.refunded_amount)
    if round_money(amount) <= 0 or round_money(amount) > left:
        raise BadRequest(f"argument 'amount': must be between 0.01 and the {left} left to refund on {order_id!r}")
    if restock and order.restocked:
        raise Conflict(f"order {order_id!r} was already restocked")
    if restock:
        _restock(state, order)
    order.refunded_amount = round_money(order.refunded_amount + amount)
    order.note = f"{order.note}\n{reason}".strip()
    if order.refunded_amount >= order.total:
        order.status = "refunded"
    state.tick()
    return order


@service.read(
    op="list", entity="discount", collection="discounts", reads=("active", "expires_at", "usage_limit", "times_used")
)
def list_discount_codes(
    state: ShopState, usable_only: Flag = False, offset: Offset = 0, limit: Limit = 20
) -> Page[Discount]:
    """List discount codes alphabetically.

    Args:
        usable_only: Only codes that are active, unexpired and under their usage limit.
        offset: Number of codes to skip.
        limit: Maximum number of codes to return.
    """
    rows = [
        d
        for d in state.discounts.values()
        if not usable_only
        or (
            d.active
            and (d.expires_at is None or d.expires_at > state.clock)
            and (d.usage_limit is None or d.times_used < d.usage_limit)
        )
    ]
    return paginate(sorted(rows, key=lambda d: d.code), offset, limit)


@service.write(
    op="create",
    entity="discount",
    collection="discounts",
    sets=("code", "percent_off", "minimum_subtotal", "usage_limit", "expires_at"),
)
def create_discount_code(
    state: ShopState,
    code: DiscountCode,
    percent_off: Percentage,
    minimum_subtotal: MoneyAmount = 0.0,
    usage_limit: Count | None = None,
    valid_days: Days | None = None,
) -> Discount:
    """Create a percentage discount code; the code must be new.

    Args:
        code: The code customers type, in capitals, e.g. SPRING15.
        percent_off: Percentage taken off the subtotal (more than 0).
        minimum_subtotal: Smallest subtotal the code applies to.
        usage_limit: How many orders may use it; omit for no limit.
        valid_days: Days from now until it expires; omit for no expiry.
    """
    if code in state.discounts:
        raise Conflict(f"discount code {code!r} already exists")
    if percent_off <= 0:
        raise BadRequest("argument 'percent_off': must be more than 0")
    if valid_days is not None and valid_days * 1440 < 1:
        raise BadRequest("argument 'valid_days': must be more than 0")
    now = state.tick()
    expiry = now + dt.timedelta(minutes=int(valid_days * 1440)) if valid_days is not None else None
    discount = Discount(
        code=code,
        percent_off=percent_off,
        minimum_subtotal=round_money(minimum_subtotal),
        usage_limit=usage_limit,
        expires_at=expiry,
    )
    state.discounts[code] = discount
    return discount
