"""Business roles: declared on every ambiguous field, refused when missing or unknown."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from servers.conformance import check_service, missing_roles
from servers.construction.lint import role_problems
from servers.construction.spec import ServiceSpec
from servers.framework import Record, Service, ServiceState
from servers.population import Population
from servers.registry import all_services
from servers.roles import ROLE_KEY, role
from servers.types import DateTime, EmailAddress, MoneyAmount

BOOKLOG = json.loads((Path(__file__).parent / "specs" / "booklog.json").read_text())


class Invoice(Record):
    id: str
    total: Annotated[MoneyAmount, role("amount_due")]
    customer: EmailAddress = Field(description="Who is billed.", json_schema_extra={ROLE_KEY: "customer"})
    paid: MoneyAmount = 0.0
    created_at: DateTime


class BillingState(ServiceState):
    invoices: dict[str, Invoice] = {}


def _billing() -> Service[BillingState]:
    def seed(rng: random.Random, world: Population) -> BillingState:
        return BillingState(clock=world.now)

    service = Service("billing_roles", version=1, category="test", description="Roles test.", state=BillingState,
                      seed=seed, system_fields=("created_at",))  # fmt: skip

    @service.read(op="get", entity="invoice", collection="invoices")
    def get_invoice(state: BillingState, invoice_id: str) -> Invoice:
        """Get one invoice.

        Args:
            invoice_id: Id of the invoice.
        """
        return state.invoices[invoice_id]

    return service


def test_conformance_names_the_field_without_a_role_and_skips_system_fields() -> None:
    problems = missing_roles(_billing())
    assert [p.message for p in problems] == [
        "Invoice.paid: a money_amount field needs a role (one of " + problems[0].message.split("one of ")[1]
    ]
    assert any(p.check == "role" for p in check_service(_billing(), examples=1).problems)


def test_a_role_declared_on_a_field_reaches_its_schema() -> None:
    props = Invoice.model_json_schema()["properties"]
    assert props["total"][ROLE_KEY] == "amount_due" and props["total"]["x-semantic-type"] == "money_amount"
    assert props["customer"][ROLE_KEY] == "customer"


def test_an_unknown_role_is_refused_where_it_is_declared() -> None:
    with pytest.raises(ValueError, match="unknown role 'buyer'"):
        role("buyer")
    data: dict[str, Any] = copy.deepcopy(BOOKLOG)
    data["entities"]["book"]["fields"]["borrower"]["role"] = "salary"
    with pytest.raises(ValueError, match="role 'salary' is not a role of email_address"):
        ServiceSpec.model_validate(data)


def test_spec_lint_names_a_field_without_its_role() -> None:
    data: dict[str, Any] = copy.deepcopy(BOOKLOG)
    del data["entities"]["book"]["fields"]["borrower"]["role"]
    (problem,) = role_problems(ServiceSpec.model_validate(data))
    assert problem.startswith("entity 'book' field 'borrower': an email_address field needs a role")


def test_every_registered_service_declares_every_role() -> None:
    missing = {name: missing_roles(s) for name, s in all_services().items()}
    assert {n: [p.message for p in m] for n, m in missing.items() if m} == {}
