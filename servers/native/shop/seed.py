"""Shop service: the seed state (products and variants, customers, discount codes, orders)."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import CURRENCY, Customer, Discount, Order, OrderLine, Product, ShopState, price_order, round_money

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
                price=round_money(p.unit_price * factor),
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
            line = OrderLine(
                sku=item.sku, name=item.name, quantity=qty, unit_price=price, amount=round_money(qty * price)
            )
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
        price_order(order, discount)
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
