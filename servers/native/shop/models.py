"""Shop service: id and semantic types, records, state and pricing helpers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from servers.framework import Record, ServiceState
from servers.roles import ROLE_KEY, role
from servers.types import (
    City,
    CompanyName,
    Count,
    Currency,
    DateTime,
    EmailAddress,
    Flag,
    MoneyAmount,
    Note,
    Percentage,
    PersonName,
    PhoneNumber,
    ProductName,
    Quantity,
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
    price: MoneyAmount = Field(description="Selling price of one unit.", json_schema_extra={ROLE_KEY: "price"})
    currency: Currency
    stock: Quantity = Field(description="Units available to order (placed orders are already deducted).")
    status: ProductStatus
    updated_at: DateTime = Field(description="When the product or its stock last changed.")


class Customer(Record):
    email: EmailAddress = Field(
        description="Customer's email address (their identity in the store).", json_schema_extra={ROLE_KEY: "customer"}
    )
    name: Annotated[PersonName, role("customer")]
    phone: PhoneNumber | None = Field(
        default=None, description="Customer's phone number.", json_schema_extra={ROLE_KEY: "customer"}
    )
    company: CompanyName | None = Field(
        default=None, description="Company the customer buys for.", json_schema_extra={ROLE_KEY: "customer"}
    )
    address: StreetAddress | None = Field(default=None, description="Default shipping address.")
    city: City | None = Field(default=None, description="City of the shipping address.")
    accepts_marketing: Flag = Field(default=False, description="Whether the customer accepts marketing email.")
    created_at: DateTime = Field(description="When the customer account was created.")


class OrderLine(Record):
    sku: Sku
    name: ProductName = Field(description="Product name when ordered.")
    quantity: Quantity
    unit_price: MoneyAmount = Field(
        description="Price of one unit when ordered.", json_schema_extra={ROLE_KEY: "price"}
    )
    amount: MoneyAmount = Field(
        description="Line total: quantity × unit price.", json_schema_extra={ROLE_KEY: "amount_due"}
    )


class Order(Record):
    id: OrderId
    number: ReferenceCode = Field(description="Order number shown to the customer, e.g. ORD-1042.")
    customer_email: EmailAddress = Field(
        description="Email of the customer who placed the order.", json_schema_extra={ROLE_KEY: "customer"}
    )
    status: OrderStatus
    lines: list[OrderLine] = Field(description="Ordered products, one line per SKU.")
    currency: Currency
    subtotal: MoneyAmount = Field(default=0.0, description="Sum of the line amounts.")
    discount_code: DiscountCode | None = Field(default=None, description="Discount code applied, if any.")
    discount_amount: MoneyAmount = Field(default=0.0, description="Amount taken off by the discount code.")
    shipping: MoneyAmount = Field(default=0.0, description="Shipping fee (free from 250).")
    total: MoneyAmount = Field(default=0.0, description="Subtotal − discount + shipping.")
    refunded_amount: MoneyAmount = Field(
        default=0.0, description="Amount refunded so far.", json_schema_extra={ROLE_KEY: "amount_paid"}
    )
    restocked: Flag = Field(default=False, description="Whether the ordered units went back into stock.")
    shipping_address: StreetAddress = Field(description="Where the order ships to.")
    payment_reference: ReferenceCode | None = Field(default=None, description="Payment reference, once paid.")
    carrier: Carrier | None = Field(default=None, description="Carrier shipping the order.")
    tracking_number: TrackingNumber | None = Field(default=None, description="Tracking number, once fulfilled.")
    note: Note = Field(default="", description="Cancellation or refund notes.")
    created_at: DateTime = Field(description="When the order was placed.")
    paid_at: DateTime | None = Field(
        default=None, description="When it was paid.", json_schema_extra={ROLE_KEY: "event"}
    )
    fulfilled_at: DateTime | None = Field(
        default=None, description="When it was shipped.", json_schema_extra={ROLE_KEY: "event"}
    )
    delivered_at: DateTime | None = Field(
        default=None, description="When it was delivered.", json_schema_extra={ROLE_KEY: "event"}
    )
    cancelled_at: DateTime | None = Field(
        default=None, description="When it was cancelled.", json_schema_extra={ROLE_KEY: "event"}
    )


class Discount(Record):
    code: DiscountCode
    percent_off: Percentage = Field(description="Percentage taken off the subtotal.")
    minimum_subtotal: MoneyAmount = Field(
        default=0.0, description="Smallest subtotal the code applies to.", json_schema_extra={ROLE_KEY: "limit"}
    )
    usage_limit: Count | None = Field(default=None, description="How many orders may use it (null: no limit).")
    times_used: Count = Field(default=0, description="How many orders have used it.")
    expires_at: DateTime | None = Field(
        default=None, description="When it stops working (null: never).", json_schema_extra={ROLE_KEY: "end"}
    )
    active: Flag = Field(default=True, description="Whether the code is switched on.")


class ShopState(ServiceState):
    products: dict[str, Product] = Field(default_factory=dict)
    customers: dict[str, Customer] = Field(default_factory=dict)
    orders: dict[str, Order] = Field(default_factory=dict)
    discounts: dict[str, Discount] = Field(default_factory=dict)
    next_order_number: int = 1001


def round_money(value: float) -> float:
    return round(value, 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def price_order(order: Order, discount: Discount | None) -> None:
    order.subtotal = round_money(sum(line.amount for line in order.lines))
    order.discount_amount = round_money(order.subtotal * discount.percent_off / 100) if discount else 0.0
    order.shipping = 0.0 if order.subtotal >= FREE_SHIPPING_FROM else SHIPPING_FEE
    order.total = round_money(order.subtotal - order.discount_amount + order.shipping)
