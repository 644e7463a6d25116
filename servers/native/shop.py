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
import random
from typing import Annotated, Literal

from pydantic import Field

from servers.framework import (
    BadRequest,
    Conflict,
    Page,
    Record,
    Service,
    ServiceState,
    contains,
    paginate,
    require,
)
from servers.population import Population
from servers.types import (
    City,
    CompanyName,
    Count,
    Currency,
    DateTime,
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
    ident,
    sem,
)

OrderId = Annotated[str, ident("shop", "order")]
OrderStatus = Annotated[
    Literal["pending", "paid", "fulfilled", "delivered", "cancelled", "refunded"],
    sem(
        "shop.order_status",
        "Order status: pending (unpaid), paid, fulfilled (shipped), delivered, cancelled or refunded.",
    ),
]
ProductStatus = Annotated[
    Literal["active", "draft", "archived"],
    sem("shop.product_status", "Product status: active (on sale), draft (unpublished) or archived (not sold)."),
]
Category = Annotated[Literal["hardware", "services"], sem("shop.product_category", "Product category in the store.")]
DiscountCode = Annotated[
    str, sem("shop.discount_code", "Discount code typed at checkout, e.g. SPRING15.", pattern=r"^[A-Z0-9]{3,20}$")
]
TrackingNumber = Annotated[
    str, sem("shop.tracking_number", "Carrier tracking number of a shipment.", pattern=r"^[A-Z0-9]{8,30}$")
]
Carrier = Annotated[Literal["UPS", "FedEx", "USPS", "DHL"], sem("shop.carrier", "Shipping carrier.")]

CURRENCY = "USD"
FREE_SHIPPING_FROM, SHIPPING_FEE = 250.0, 12.0
MAX_TOTAL, MAX_STOCK = 1e9, 1_000_000


class Product(Record):
    sku: Sku
    name: ProductName
    category: Category
    price: MoneyAmount = Field(description="Selling price of one unit.")
    currency: Currency
    stock: Quantity = Field(description="Units available to order (placed orders are already deducted).")
    status: ProductStatus
    updated_at: DateTime = Field(description="When the product or its stock last changed.")


class Customer(Record):
    email: EmailAddress = Field(description="Customer's email address (their identity in the store).")
    name: PersonName
    phone: PhoneNumber | None = Field(default=None, description="Customer's phone number.")
    company: CompanyName | None = Field(default=None, description="Company the customer buys for.")
    address: StreetAddress | None = Field(default=None, description="Default shipping address.")
    city: City | None = Field(default=None, description="City of the shipping address.")
    accepts_marketing: Flag = Field(default=False, description="Whether the customer accepts marketing email.")
    created_at: DateTime = Field(description="When the customer account was created.")


class OrderLine(Record):
    sku: Sku
    name: ProductName = Field(description="Product name when ordered.")
    quantity: Quantity
    unit_price: MoneyAmount = Field(description="Price of one unit when ordered.")
    amount: MoneyAmount = Field(description="Line total: quantity × unit price.")


class Order(Record):
    id: OrderId
    number: ReferenceCode = Field(description="Order number shown to the customer, e.g. ORD-1042.")
    customer_email: EmailAddress = Field(description="Email of the customer who placed the order.")
    status: OrderStatus
    lines: list[OrderLine] = Field(description="Ordered products, one line per SKU.")
    currency: Currency
    subtotal: MoneyAmount = Field(default=0.0, description="Sum of the line amounts.")
    discount_code: DiscountCode | None = Field(default=None, description="Discount code applied, if any.")
    discount_amount: MoneyAmount = Field(default=0.0, description="Amount taken off by the discount code.")
    shipping: MoneyAmount = Field(default=0.0, description="Shipping fee (free from 250).")
    total: MoneyAmount = Field(default=0.0, description="Subtotal − discount + shipping.")
    refunded_amount: MoneyAmount = Field(default=0.0, description="Amount refunded so far.")
    restocked: Flag = Field(default=False, description="Whether the ordered units went back into stock.")
    shipping_address: StreetAddress = Field(description="Where the order ships to.")
    payment_reference: ReferenceCode | None = Field(default=None, description="Payment reference, once paid.")
    carrier: Carrier | None = Field(default=None, description="Carrier shipping the order.")
    tracking_number: TrackingNumber | None = Field(default=None, description="Tracking number, once fulfilled.")
    note: Note = Field(default="", description="Cancellation or refund notes.")
    created_at: DateTime = Field(description="When the order was placed.")
    paid_at: DateTime | None = Field(default=None, description="When it was paid.")
    fulfilled_at: DateTime | None = Field(default=None, description="When it was shipped.")
    delivered_at: DateTime | None = Field(default=None, description="When it was delivered.")
    cancelled_at: DateTime | None = Field(default=None, description="When it was cancelled.")


class Discount(Record):
    code: DiscountCode
    percent_off: Percentage = Field(description="Percentage taken off the subtotal.")
    minimum_subtotal: MoneyAmount = Field(default=0.0, description="Smallest subtotal the code applies to.")
    usage_limit: Count | None = Field(default=None, description="How many orders may use it (null: no limit).")
    times_used: Count = Field(default=0, description="How many orders have used it.")
    expires_at: DateTime | None = Field(default=None, description="When it stops working (null: never).")
    active: Flag = Field(default=True, description="Whether the code is switched on.")


class ShopState(ServiceState):
    products: dict[str, Product] = Field(default_factory=dict)
    customers: dict[str, Customer] = Field(default_factory=dict)
    orders: dict[str, Order] = Field(default_factory=dict)
    discounts: dict[str, Discount] = Field(default_factory=dict)
    next_order_number: int = 1001


def _money(value: float) -> float:
    return round(value, 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def _price(order: Order, discount: Discount | None) -> None:
    order.subtotal = _money(sum(line.amount for line in order.lines))
    order.discount_amount = _money(order.subtotal * discount.percent_off / 100) if discount else 0.0
    order.shipping = 0.0 if order.subtotal >= FREE_SHIPPING_FROM else SHIPPING_FEE
    order.total = _money(order.subtotal - order.discount_amount + order.shipping)


VARIANTS = {
    "SKU-100": [("SKU-100-R", "Laptop Stand (Refurbished)", 0.7, "active")],
    "SKU-101": [
        ("SKU-101-P", "Wireless Headset Pro", 1.4, "active"),
        ("SKU-101-V1", "Wireless Headset v1", 0.8, "archived"),
    ],
    "SKU-102": [
        ("SKU-102-XL", "Standing Desk XL", 1.25, "active"),
        ("SKU-102-V1", "Standing Desk v1", 0.9, "archived"),
    ],
    "SKU-103": [
        ("SKU-103-4K", "Monitor 27in 4K", 1.35, "draft"),
        ("SKU-103-R", "Monitor 27in (Refurbished)", 0.7, "active"),
    ],
    "SKU-104": [("SKU-104-M", "Ergonomic Chair Mesh", 1.1, "active")],
    "SKU-105": [("SKU-105-V1", "Docking Station v1", 0.85, "archived")],
    "SKU-106": [("SKU-106-4K", "Webcam 4K", 1.6, "active")],
    "SKU-111": [("SKU-111-R", "Label Printer (Refurbished)", 0.65, "active")],
}
DISCOUNTS = [  # code, percent, minimum subtotal, usage limit, times used, expires in days, active
    ("WELCOME10", 10, 0, None, 31, None, True),
    ("SPRING15", 15, 100, 200, 12, 40, True),
    ("SPRING20", 20, 500, 50, 50, 40, True),
    ("VIP25", 25, 1000, None, 4, None, True),
    ("BULK5", 5, 2000, None, 9, None, True),
    ("BLACKFRIDAY30", 30, 0, None, 88, -90, True),
    ("STAFF40", 40, 0, None, 17, None, False),
    ("SUMMER15", 15, 100, 100, 71, -160, True),
]


def seed(rng: random.Random, world: Population) -> ShopState:
    state = ShopState(clock=world.now)

    def ago(days: float) -> dt.datetime:
        return world.now - dt.timedelta(minutes=int(days * 1440))

    for p in world.products:
        stock = rng.choice((0, 2, 3)) if rng.random() < 0.2 else rng.randint(8, 140)
        state.products[p.sku] = Product(
            sku=p.sku,
            name=p.name,
            category=p.category,
            price=p.unit_price,
            currency=CURRENCY,
            stock=stock,
            status="active",
            updated_at=ago(rng.uniform(1, 60)),
        )
        for sku, name, factor, status in VARIANTS.get(p.sku, []):
            state.products[sku] = Product(
                sku=sku,
                name=name,
                category=p.category,
                price=_money(p.unit_price * factor),
                currency=CURRENCY,
                stock=0 if status == "archived" else rng.randint(0, 60),
                status=status,
                updated_at=ago(rng.uniform(1, 300)),
            )
    for person in world.contacts:
        company = world.company(person.company_id)
        state.customers[person.email] = Customer(
            email=person.email,
            name=person.name,
            phone=person.phone,
            company=company.name,
            address=company.address,
            city=company.city,
            accepts_marketing=rng.random() < 0.4,
            created_at=ago(rng.uniform(100, 900)),
        )
    for code, pct, minimum, limit, used, expires, active in DISCOUNTS:
        expiry = world.now + dt.timedelta(days=expires) if expires is not None else None
        state.discounts[code] = Discount(
            code=code,
            percent_off=pct,
            minimum_subtotal=minimum,
            usage_limit=limit,
            times_used=used,
            expires_at=expiry,
            active=active,
        )

    customers = list(state.customers.values())
    on_sale = [p for p in state.products.values() if p.status == "active"]
    mix = ["pending"] * 6 + ["paid"] * 8 + ["fulfilled"] * 8 + ["delivered"] * 18 + ["cancelled"] * 4
    plan = [(rng.uniform(0.1, 3) if s in ("pending", "paid") else rng.uniform(2, 120), s) for s in mix]
    plan += [(rng.uniform(20, 90), "refunded") for _ in range(3)]
    for days, status in sorted(plan, reverse=True):  # order numbers grow with time
        customer = rng.choice(customers)
        lines = []
        for item in rng.sample(on_sale, rng.choice((1, 1, 2, 3))):
            qty, price = rng.randint(1, 4), item.price
            line = OrderLine(sku=item.sku, name=item.name, quantity=qty, unit_price=price, amount=_money(qty * price))
            lines.append(line)
        discount = state.discounts["WELCOME10"] if rng.random() < 0.15 else None
        order = Order(
            id=state.new_id("ord"),
            number=f"ORD-{state.next_order_number}",
            customer_email=customer.email,
            status=status,
            lines=lines,
            currency=CURRENCY,
            discount_code=discount.code if discount else None,
            shipping_address=f"{customer.address}, {customer.city}",
            created_at=ago(days),
        )
        state.next_order_number += 1
        _price(order, discount)
        state.orders[order.id] = order
        if status in ("paid", "fulfilled", "delivered", "refunded"):
            order.paid_at, order.payment_reference = ago(days - 0.01), f"PAY-{rng.randint(100000, 999999)}"
        if status in ("fulfilled", "delivered", "refunded"):
            order.fulfilled_at, order.carrier = ago(days - 1), rng.choice(("UPS", "FedEx", "USPS", "DHL"))
            order.tracking_number = f"1Z{rng.randint(10**9, 10**10 - 1)}{rng.randint(100, 999)}"
        if status in ("delivered", "refunded"):
            order.delivered_at = ago(days - 4)
        if status == "refunded":
            order.refunded_amount, order.restocked, order.note = order.total, True, "Returned: arrived damaged."
        if status == "cancelled":
            order.cancelled_at, order.restocked, order.note = ago(days - 0.2), True, "Customer changed their mind."
    repeat = next(o for o in state.orders.values() if o.status == "pending")
    duplicate = repeat.model_copy(update={"id": state.new_id("ord"), "number": f"ORD-{state.next_order_number}"})
    duplicate.status, duplicate.cancelled_at, duplicate.restocked = "cancelled", repeat.created_at, True
    duplicate.note = f"Duplicate of {repeat.number}, placed twice by mistake."
    state.orders[duplicate.id] = duplicate
    state.next_order_number += 1
    return state


service = Service(
    "shop",
    version=1,
    category="commerce",
    description="The company's online store: products and stock, customers, orders, discounts and fulfilment.",
    state=ShopState,
    seed=seed,
)


def _customer(state: ShopState, email: str) -> Customer:
    return require(state.customers, email.lower(), "customer")


def _product(state: ShopState, sku: str) -> Product:
    return require(state.products, sku, "product")


@service.read
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


@service.read
def get_product(state: ShopState, sku: Sku) -> Product:
    """Get one product with its price and stock.

    Args:
        sku: SKU of the product.
    """
    return _product(state, sku)


@service.write
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
    if price is not None and _money(price) <= 0:
        raise BadRequest("argument 'price': must be at least 0.01")
    changes = {"name": name, "price": None if price is None else _money(price), "status": status}
    updated = product.model_copy(update={k: v for k, v in changes.items() if v is not None})
    updated.updated_at = state.tick()
    state.products[sku] = updated
    return updated


@service.write
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


@service.read
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


@service.read
def get_customer(state: ShopState, email: EmailAddress) -> Customer:
    """Get one customer by email address.

    Args:
        email: Email address of the customer.
    """
    return _customer(state, email)


@service.write
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


@service.read
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


@service.read
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


@service.write
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
    amount = _money(quantity * product.price)
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
    _price(order, discount)
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


@service.write
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
    amount = _money(qty * price)
    _check_total(order.subtotal - (old.amount if old else 0) + amount)
    discount = state.discounts.get(order.discount_code or "")
    line = OrderLine(sku=sku, name=product.name, quantity=qty, unit_price=price, amount=amount)
    order.lines = [line if x is old else x for x in order.lines] if old else [*order.lines, line]
    _price(order, discount)
    product.stock -= quantity
    product.updated_at = state.tick()
    return order


@service.write
def mark_order_paid(state: ShopState, order_id: OrderId, payment_reference: ReferenceCode | None = None) -> Order:
    """Record that a pending order has been paid in full.

    Args:
        order_id: Id of the pending order.
        payment_reference: Reference of the payment, e.g. PAY-123456.
    """
    order = _order(state, order_id, "pending")
    order.status, order.paid_at, order.payment_reference = "paid", state.tick(), payment_reference
    return order


@service.write
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


@service.write
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


@service.write
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


@service.write
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
    left = _money(order.total - order.refunded_amount)
    if _money(amount) <= 0 or _money(amount) > left:
        raise BadRequest(f"argument 'amount': must be between 0.01 and the {left} left to refund on {order_id!r}")
    if restock and order.restocked:
        raise Conflict(f"order {order_id!r} was already restocked")
    if restock:
        _restock(state, order)
    order.refunded_amount = _money(order.refunded_amount + amount)
    order.note = f"{order.note}\n{reason}".strip()
    if order.refunded_amount >= order.total:
        order.status = "refunded"
    state.tick()
    return order


@service.read
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


@service.write
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
        minimum_subtotal=_money(minimum_subtotal),
        usage_limit=usage_limit,
        expires_at=expiry,
    )
    state.discounts[code] = discount
    return discount
