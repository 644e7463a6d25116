"""Business roles: what a value *means* where its semantic type alone is ambiguous.

A ``money_amount`` may be a price, an amount due, an amount paid, a salary, a budget, a fee, a
balance or a limit; a ``date_time`` a due time, a start, an end, the moment of an event, a birth or
a *system* stamp (created/updated: never carried into another service, never asked for). Linking
tools by type alone pairs "the salary of an employee" with "the price of a product"; linking them
by type *and role* does not. So every record field whose type is in :data:`ROLES` names its role,
declared once here and written into every JSON schema as ``x-role``:

- spec-run services: ``"role": "amount_due"`` on the field in the catalog spec (the engine adds it
  to the field's schema; fields the engine stamps itself are ``system``);
- hand-written services: ``Annotated[MoneyAmount, role("salary")]`` or
  ``Field(..., json_schema_extra={ROLE_KEY: "salary"})`` on the record field.

The conformance checker fails a record field of such a type without a known role (fields a
service declares in ``system_fields`` are ``system`` whatever they say).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

ROLE_KEY: Final = "x-role"
SYSTEM: Final = "system"

_PEOPLE = {
    "customer": "A customer or client of the organisation.",
    "employee": "A member of staff of the organisation.",
    "assignee": "The person a piece of work is assigned to.",
    "requester": "The person who asked for something.",
    "owner": "The person responsible for or owning the record.",
    "approver": "The person who approved (or must approve) something.",
    "sender": "The person or mailbox a message comes from.",
    "recipient": "The person or mailbox a message goes to.",
    "contact": "A contact person at another organisation.",
    "vendor": "A supplier or vendor (or their contact).",
    "patient": "A patient of a care provider.",
    "student": "A student or learner.",
    "member": "A member of a group, club, plan or team.",
    "guest": "A guest, visitor or attendee.",
    "driver": "A driver or operator of a vehicle.",
    "candidate": "A job candidate or applicant.",
    "manager": "A manager or supervisor.",
    "provider": "A professional providing a service (clinician, tutor, technician, agent).",
    "guardian": "A parent or guardian of someone else.",
    "signer": "A person who signs a document.",
    "author": "The person who wrote or created the record's content.",
    "reviewer": "A person reviewing or inspecting something.",
    "party": "Any other person involved in the record.",
}

ROLES: Final[dict[str, dict[str, str]]] = {
    "money_amount": {
        "price": "What one unit or the item costs (a list or unit price, a rate).",
        "amount_due": "What is owed or billed and not yet paid (an invoice total, a balance due).",
        "amount_paid": "What was paid, refunded or transferred.",
        "salary": "Pay of a person (salary, wage, hourly rate, compensation).",
        "budget": "An amount planned or allotted to spend.",
        "fee": "A charge for a service, penalty or commission.",
        "balance": "What an account holds or a running total stands at.",
        "limit": "A cap or threshold an amount may not pass.",
        "cost": "What something cost the organisation (an expense, a spend, an estimate of cost).",
        "value": "What something is worth (a valuation, a deal or contract value, a donation pledged).",
        "tax": "A tax or duty amount.",
        SYSTEM: "Computed by the service itself; never carried or asked for.",
    },
    "date": {
        "due": "When something must be done or paid by.",
        "start": "When something begins (a start date, an effective date).",
        "end": "When something ends or expires.",
        "event": "When something happened or is scheduled to happen (a visit, a delivery, an issue date).",
        "birth": "A person's date of birth.",
        SYSTEM: "Stamped by the service itself; never carried or asked for.",
    },
    "date_time": {
        "due": "When something must be done by.",
        "start": "When something begins or began.",
        "end": "When something ends or ended.",
        "event": "When something happened or is scheduled to happen (sent, paid, closed, booked for).",
        SYSTEM: "Stamped by the service itself (created, updated); never carried or asked for.",
    },
    "email_address": _PEOPLE,
    "person_name": _PEOPLE,
    "phone_number": _PEOPLE,
    "company_name": {
        "customer": "A customer or client organisation.",
        "vendor": "A supplier or vendor organisation.",
        "partner": "A partner, agency or affiliate organisation.",
        "employer": "The organisation a person works for.",
        "carrier": "A carrier, shipper or logistics provider.",
        "insurer": "An insurer or payer.",
        "party": "Any other organisation involved in the record.",
    },
}
"""Semantic type → role → what the role means, for every type that needs a role."""


def role(name: str) -> Any:
    """The field annotation that gives a record field its role: ``Annotated[MoneyAmount, role("salary")]``."""
    if not any(name in roles for roles in ROLES.values()):
        raise ValueError(f"unknown role {name!r}")
    return Field(json_schema_extra={ROLE_KEY: name})


def role_problem(semantic: str | None, declared: str | None) -> str | None:
    """Why a field of type ``semantic`` declaring role ``declared`` is wrong, or None when it is fine."""
    if semantic not in ROLES:
        return None
    if declared is None:
        article = "an" if semantic[0] in "aeiou" else "a"
        return f"{article} {semantic} field needs a role (one of {', '.join(ROLES[semantic])})"
    if declared not in ROLES[semantic]:
        return f"role {declared!r} is not a role of {semantic} (one of {', '.join(ROLES[semantic])})"
    return None
