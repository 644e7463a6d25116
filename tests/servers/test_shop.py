"""The shop service: products and stock, customers, the order lifecycle, discounts and refunds."""

from __future__ import annotations

from typing import Any

import pytest

from servers.native.shop import ShopState
from servers.native.shop import service as svc
from servers.population import Population


@pytest.fixture
def state() -> ShopState:
    return svc.seed_state(7)


def call(state: ShopState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def in_stock(state: ShopState, at_least: int = 5) -> str:
    return next(p.sku for p in state.products.values() if p.status == "active" and p.stock >= at_least)


def customer(state: ShopState) -> str:
    return next(iter(state.customers))


def order_in(state: ShopState, status: str) -> str:
    return next(o.id for o in state.orders.values() if o.status == status)


def place(state: ShopState, quantity: int = 2, **extra: Any) -> dict[str, Any]:
    env = call(state, "create_order", customer_email=customer(state), sku=in_stock(state), quantity=quantity, **extra)
    assert env["success"], env
    return dict(env["data"])


def test_list_products_filters_and_paginates(state: ShopState) -> None:
    page = call(state, "list_products", status="active", in_stock_only=True, limit=4)["data"]
    assert len(page["items"]) == 4 and page["next_offset"] == 4
    assert all(p["status"] == "active" and p["stock"] > 0 for p in page["items"])
    expected = sum(p.status == "active" and p.stock > 0 for p in state.products.values())
    assert page["total"] == expected


def test_list_products_query_finds_near_duplicates(state: ShopState) -> None:
    names = [p["name"] for p in call(state, "list_products", query="laptop stand")["data"]["items"]]
    assert "Laptop Stand" in names and "Laptop Stand (Refurbished)" in names


def test_get_product_and_unknown_sku_is_a_404(state: ShopState) -> None:
    assert call(state, "get_product", sku="SKU-100")["data"]["name"] == "Laptop Stand"
    env = call(state, "get_product", sku="SKU-999")
    assert env["error"]["code"] == 404 and "'SKU-999'" in env["error"]["message"]


def test_get_customer_by_email_is_case_insensitive(state: ShopState) -> None:
    email = customer(state)
    assert call(state, "get_customer", email=email.upper())["data"]["email"] == email


def test_create_customer_with_a_taken_email_is_a_conflict(state: ShopState) -> None:
    before = svc.state_hash(state)
    env = call(state, "create_customer", email=customer(state), name="Someone Else", address="1 Main St")
    assert env["error"]["code"] == 409
    assert svc.state_hash(state) == before


def test_list_orders_by_customer_and_status(state: ShopState) -> None:
    email = next(iter(state.orders.values())).customer_email
    items = call(state, "list_orders", customer_email=email, limit=200)["data"]["items"]
    assert items and all(o["customer_email"] == email for o in items)
    delivered = call(state, "list_orders", status="delivered", limit=200)["data"]
    assert delivered["total"] == sum(o.status == "delivered" for o in state.orders.values())


def test_create_order_reserves_stock(state: ShopState) -> None:
    sku = in_stock(state)
    stock = state.products[sku].stock
    order = place(state, quantity=3)
    assert order["status"] == "pending" and order["number"].startswith("ORD-")
    assert state.products[sku].stock == stock - 3


def test_ordering_more_than_stock_is_a_conflict_and_changes_nothing(state: ShopState) -> None:
    sku = in_stock(state)
    before = svc.state_hash(state)
    env = call(state, "create_order", customer_email=customer(state), sku=sku, quantity=state.products[sku].stock + 1)
    assert env["error"]["code"] == 409 and repr(sku) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_unknown_customer_is_a_404_quoting_the_email(state: ShopState) -> None:
    env = call(state, "create_order", customer_email="nobody@nowhere.io", sku=in_stock(state), quantity=1)
    assert env["error"]["code"] == 404 and "'nobody@nowhere.io'" in env["error"]["message"]


def test_zero_quantity_is_a_400_naming_quantity(state: ShopState) -> None:
    env = call(state, "create_order", customer_email=customer(state), sku=in_stock(state), quantity=0)
    assert env["error"]["code"] == 400 and "'quantity'" in env["error"]["message"]


def test_archived_product_cannot_be_ordered(state: ShopState) -> None:
    sku = next(p.sku for p in state.products.values() if p.status == "archived")
    env = call(state, "create_order", customer_email=customer(state), sku=sku, quantity=1)
    assert env["error"]["code"] == 409


def test_discount_code_is_applied_and_counted(state: ShopState) -> None:
    used = state.discounts["WELCOME10"].times_used
    order = place(state, discount_code="WELCOME10")
    assert order["discount_amount"] == round(order["subtotal"] * 0.10, 2)
    assert state.discounts["WELCOME10"].times_used == used + 1


def test_expired_discount_code_is_a_conflict(state: ShopState) -> None:
    env = call(
        state, "create_order", customer_email=customer(state), sku=in_stock(state), quantity=1, discount_code="SUMMER15"
    )
    assert env["error"]["code"] == 409 and "'SUMMER15'" in env["error"]["message"]


def test_add_order_line_merges_a_sku(state: ShopState) -> None:
    order = place(state, quantity=1)
    sku = order["lines"][0]["sku"]
    lines = call(state, "add_order_line", order_id=order["id"], sku=sku, quantity=2)["data"]["lines"]
    assert [(line["sku"], line["quantity"]) for line in lines] == [(sku, 3)]


def test_full_lifecycle_pending_paid_fulfilled_delivered(state: ShopState) -> None:
    order_id = place(state)["id"]
    assert call(state, "mark_order_paid", order_id=order_id, payment_reference="PAY-123456")["data"]["status"] == "paid"
    shipped = call(state, "fulfill_order", order_id=order_id, tracking_number="1Z999AA10123456784", carrier="UPS")
    assert shipped["data"]["status"] == "fulfilled" and shipped["data"]["tracking_number"] == "1Z999AA10123456784"
    assert call(state, "mark_order_delivered", order_id=order_id)["data"]["status"] == "delivered"


def test_fulfilling_an_unpaid_order_is_a_conflict(state: ShopState) -> None:
    env = call(
        state, "fulfill_order", order_id=order_in(state, "pending"), tracking_number="ABC12345678", carrier="DHL"
    )
    assert env["error"]["code"] == 409


def test_cancel_a_paid_order_refunds_and_restocks(state: ShopState) -> None:
    order = state.orders[order_in(state, "paid")]
    line = order.lines[0]
    stock = state.products[line.sku].stock
    data = call(state, "cancel_order", order_id=order.id, reason="customer request")["data"]
    assert data["status"] == "cancelled" and data["refunded_amount"] == data["total"]
    assert state.products[line.sku].stock == stock + line.quantity


def test_cancelling_after_fulfilment_is_a_conflict(state: ShopState) -> None:
    before = svc.state_hash(state)
    env = call(state, "cancel_order", order_id=order_in(state, "fulfilled"), reason="too late")
    assert env["error"]["code"] == 409 and "'fulfilled'" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_partial_then_full_refund_marks_the_order_refunded(state: ShopState) -> None:
    order = state.orders[order_in(state, "delivered")]
    call(state, "refund_order", order_id=order.id, amount=1, reason="scratch")
    assert state.orders[order.id].status == "delivered" and state.orders[order.id].refunded_amount == 1
    rest = round(order.total - 1, 2)
    data = call(state, "refund_order", order_id=order.id, amount=rest, reason="returned", restock=True)["data"]
    assert data["status"] == "refunded" and data["restocked"] is True


def test_refund_more_than_paid_is_a_400(state: ShopState) -> None:
    order = state.orders[order_in(state, "delivered")]
    env = call(state, "refund_order", order_id=order.id, amount=order.total + 1, reason="x")
    assert env["error"]["code"] == 400 and "'amount'" in env["error"]["message"]


def test_restock_adds_units_and_archived_is_a_conflict(state: ShopState) -> None:
    stock = state.products["SKU-100"].stock
    assert call(state, "restock_product", sku="SKU-100", quantity=10)["data"]["stock"] == stock + 10
    archived = next(p.sku for p in state.products.values() if p.status == "archived")
    assert call(state, "restock_product", sku=archived, quantity=10)["error"]["code"] == 409


def test_update_product_archives_it(state: ShopState) -> None:
    data = call(state, "update_product", sku="SKU-100", status="archived", price=45.5)["data"]
    assert data["status"] == "archived" and data["price"] == 45.5


def test_create_discount_code_and_duplicate_is_a_conflict(state: ShopState) -> None:
    data = call(state, "create_discount_code", code="EASTER12", percent_off=12, valid_days=30)["data"]
    assert data["code"] == "EASTER12" and data["expires_at"] is not None
    assert call(state, "create_discount_code", code="EASTER12", percent_off=5)["error"]["code"] == 409


def test_usable_discount_codes_exclude_expired_and_used_up(state: ShopState) -> None:
    codes = {d["code"] for d in call(state, "list_discount_codes", usable_only=True)["data"]["items"]}
    assert "WELCOME10" in codes and not codes & {"SUMMER15", "BLACKFRIDAY30", "STAFF40", "SPRING20"}


def test_catalogue_and_customers_come_from_the_population() -> None:
    world = Population.generate(7)
    state = svc.seed_state(7)
    assert {p.sku for p in world.products} <= set(state.products)
    assert set(state.customers) == {p.email for p in world.contacts}
    assert all(o.customer_email in state.customers for o in state.orders.values())


def test_get_order_returns_lines_and_totals(state: ShopState) -> None:
    order = next(iter(state.orders.values()))
    data = call(state, "get_order", order_id=order.id)["data"]
    assert data["number"] == order.number and data["total"] == order.total and data["lines"]


def test_list_customers_by_company(state: ShopState) -> None:
    company = next(c.company for c in state.customers.values() if c.company)
    page = call(state, "list_customers", company=company, limit=200)["data"]
    assert page["total"] >= 2 and all(c["company"] == company for c in page["items"])


def test_create_customer_then_order_for_them(state: ShopState) -> None:
    env = call(state, "create_customer", email="New.Buyer@Example.com", name="New Buyer", address="5 Elm St")
    assert env["data"]["email"] == "new.buyer@example.com"
    order = call(state, "create_order", customer_email="new.buyer@example.com", sku=in_stock(state), quantity=1)
    assert order["data"]["shipping_address"] == "5 Elm St"
