"""CRM: accounts, contacts, deals through the sales pipeline, and logged activities.

Tools: list_accounts, get_account, create_account, update_account, archive_account,
list_contacts, create_contact, list_deals, get_deal, create_deal,
update_deal, move_deal_stage, delete_deal, log_activity, list_activities.
State: accounts, contacts, deals and activities by id; the CRM users (the employees) by email;
the signed-in user's email.
Seed: one account per population company plus regional divisions and stale archived
duplicates; every external contact of the population at their company's account (a few opted
out of contact); about 40 deals in every stage with amounts in the account's currency
(near-duplicate renewal titles, zero-amount early deals, old won and lost deals); about 50
calls, emails, meetings and notes.
Rules: a won or lost deal cannot change stage or fields (409); closing a deal won needs an
amount above 0 (400) and closing it lost needs a reason (400); only the owner of a deal may
delete it and won deals are never deleted; an owner is always a CRM user (an employee); a
contact email is unique; an account with open deals cannot be archived and archived accounts
are read-only; calls and emails to an opted-out contact are refused (403).
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
    Forbidden,
    Page,
    Record,
    Service,
    ServiceState,
    contains,
    paginate,
    require,
)
from servers.population import Company, Population
from servers.roles import ROLE_KEY, role
from servers.types import (
    City,
    CompanyName,
    CountryCode,
    Currency,
    Date,
    DateTime,
    Domain,
    EmailAddress,
    Flag,
    JobTitle,
    Limit,
    MoneyAmount,
    Note,
    Offset,
    Percentage,
    PersonName,
    PhoneNumber,
    Query,
    ReferenceCode,
    Title,
    ident,
    sem,
)

AccountId = Annotated[str, ident("crm", "account")]
ContactId = Annotated[str, ident("crm", "contact")]
DealId = Annotated[str, ident("crm", "deal")]
ActivityId = Annotated[str, ident("crm", "activity")]
AccountType = Annotated[
    Literal["customer", "prospect", "partner", "vendor"], sem("crm.account_type", "Relationship of an account to us.")
]
AccountStatus = Annotated[Literal["active", "archived"], sem("crm.account_status", "Whether an account is active.")]
DealStage = Annotated[
    Literal["prospecting", "qualification", "proposal", "negotiation", "won", "lost"],
    sem("crm.deal_stage", "Pipeline stage: prospecting, qualification, proposal, negotiation, then won or lost."),
]
ActivityKind = Annotated[
    Literal["call", "email", "meeting", "note", "task"], sem("crm.activity_kind", "Kind of logged sales activity.")
]
Industry = Annotated[str, sem("crm.industry", "Industry of an account, e.g. Logistics.", min_length=1, max_length=80)]

MINUTE = dt.timedelta(minutes=1)
OPEN_STAGES = ("prospecting", "qualification", "proposal", "negotiation")
PROBABILITY = {"prospecting": 10, "qualification": 25, "proposal": 50, "negotiation": 75, "won": 100}


class Account(Record):
    id: AccountId
    name: Annotated[CompanyName, role("customer")]
    domain: Domain
    industry: Industry
    type: AccountType
    status: AccountStatus
    city: City | None = Field(default=None, description="City of the head office.")
    country: CountryCode
    phone: PhoneNumber | None = Field(
        default=None, description="Main switchboard number.", json_schema_extra={ROLE_KEY: "customer"}
    )
    currency: Currency = Field(description="Currency the account is billed in.")
    owner: EmailAddress = Field(
        description="Email of the employee who owns the account.", json_schema_extra={ROLE_KEY: "owner"}
    )
    created_at: DateTime
    updated_at: DateTime


class Contact(Record):
    id: ContactId
    account_id: AccountId
    company: CompanyName = Field(description="Name of the contact's account.", json_schema_extra={ROLE_KEY: "customer"})
    name: Annotated[PersonName, role("contact")]
    email: EmailAddress = Field(
        description="Work email of the contact (unique in the CRM).", json_schema_extra={ROLE_KEY: "contact"}
    )
    phone: PhoneNumber | None = Field(
        default=None, description="Direct phone number.", json_schema_extra={ROLE_KEY: "contact"}
    )
    title: JobTitle
    do_not_contact: Flag = Field(description="The contact opted out of calls and emails.")
    created_at: DateTime
    updated_at: DateTime


class Deal(Record):
    id: DealId
    title: Title
    account_id: AccountId
    company: CompanyName = Field(description="Name of the deal's account.", json_schema_extra={ROLE_KEY: "customer"})
    contact_id: ContactId | None = Field(default=None, description="Main contact of the deal.")
    contact_email: EmailAddress | None = Field(
        default=None, description="Email of the main contact.", json_schema_extra={ROLE_KEY: "contact"}
    )
    owner: EmailAddress = Field(
        description="Email of the employee who owns the deal.", json_schema_extra={ROLE_KEY: "owner"}
    )
    stage: DealStage
    amount: MoneyAmount = Field(
        description="Expected (or booked) value of the deal.", json_schema_extra={ROLE_KEY: "value"}
    )
    currency: Currency
    probability: Percentage = Field(description="Chance of winning the deal.")
    close_date: Date = Field(description="Expected or actual close date.", json_schema_extra={ROLE_KEY: "event"})
    reference: ReferenceCode | None = Field(default=None, description="Quote or purchase-order number.")
    lost_reason: Note | None = Field(default=None, description="Why the deal was lost.")
    created_at: DateTime
    updated_at: DateTime
    closed_at: DateTime | None = Field(
        default=None, description="When the deal was won or lost.", json_schema_extra={ROLE_KEY: "event"}
    )


class Activity(Record):
    id: ActivityId
    kind: ActivityKind
    subject: Title
    body: Note
    account_id: AccountId
    deal_id: DealId | None = Field(default=None, description="Deal the activity belongs to.")
    contact_id: ContactId | None = Field(default=None, description="Contact the activity was with.")
    author: EmailAddress = Field(
        description="Employee who logged the activity.", json_schema_extra={ROLE_KEY: "author"}
    )
    occurred_at: Annotated[DateTime, role("event")]


class CrmState(ServiceState):
    me: str = ""
    users: dict[str, str] = Field(default_factory=dict)
    accounts: dict[str, Account] = Field(default_factory=dict)
    contacts: dict[str, Contact] = Field(default_factory=dict)
    deals: dict[str, Deal] = Field(default_factory=dict)
    activities: dict[str, Activity] = Field(default_factory=dict)


DEAL_TITLES = ("Annual renewal {year}", "Expansion: {product}", "{qty} x {product}", "Pilot: {product}")
LOST_REASONS = ("Chose a competitor", "No budget this year", "Went silent")


def seed(rng: random.Random, world: Population) -> CrmState:
    now, today = world.now, world.now.date()
    state = CrmState(me=world.me.email, clock=now)
    state.users = {p.email: p.name for p in world.employees}
    sellers = [p.email for p in world.employees if p.department == "Sales"] + [world.me.email]

    def ago(low_days: int, high_days: int) -> dt.datetime:
        return now - dt.timedelta(minutes=rng.randint(low_days * 1440, high_days * 1440))

    def account(name: str, company: Company, status: str, created: dt.datetime) -> Account:
        acc = Account(
            id=state.new_id("acc"), name=name, domain=company.domain, industry=company.industry,
            type=company.relation, status=status, city=company.city, country=company.country,
            phone=company.phone, currency=company.currency, owner=rng.choice(sellers),
            created_at=created, updated_at=created + dt.timedelta(days=rng.randint(0, 30)),
        )  # fmt: skip
        state.accounts[acc.id] = acc
        return acc

    main = {c.id: account(c.name, c, "active", ago(200, 700)) for c in world.companies}
    for company in rng.sample(list(world.companies), 6):  # regional divisions with near-identical names
        account(f"{company.name} ({rng.choice(('EMEA', 'APAC', 'LATAM'))})", company, "active", ago(60, 300))
    for company in rng.sample(list(world.companies), 3):  # stale duplicates someone once created
        name = company.name.replace("-", " ") if "-" in company.name else f"{company.name} Inc."
        account(name, company, "archived", ago(500, 900))
    for p in world.contacts:
        acc, created = main[p.company_id], ago(30, 400)
        contact = Contact(
            id=state.new_id("con"), account_id=acc.id, company=acc.name, name=p.name, email=p.email,
            phone=p.phone, title=p.title, do_not_contact=rng.random() < 0.08, created_at=created,
            updated_at=created + dt.timedelta(days=rng.randint(0, 20)),
        )  # fmt: skip
        state.contacts[contact.id] = contact

    for acc in [a for a in state.accounts.values() if a.status == "active" and a.type != "vendor"]:
        people = [c for c in state.contacts.values() if c.account_id == acc.id]
        for index in range(rng.randint(2, 4)):
            product, qty = rng.choice(world.products), rng.randint(2, 60)
            year = 2026 if index % 2 == 0 else 2025  # renewal titles that differ only by year
            title = rng.choice(DEAL_TITLES).format(year=year, product=product.name, qty=qty)
            stage = rng.choice(("prospecting", "qualification", "proposal", "negotiation", "won", "lost"))
            empty = stage in ("prospecting", "qualification") and rng.random() < 0.5  # not sized yet
            created = ago(20, 300)
            closed_at = created + dt.timedelta(days=rng.randint(5, 19)) if stage in ("won", "lost") else None
            main_contact = rng.choice(people) if people and rng.random() < 0.85 else None
            deal = Deal(
                id=state.new_id("deal"), title=title, account_id=acc.id, company=acc.name,
                contact_id=main_contact.id if main_contact else None,
                contact_email=main_contact.email if main_contact else None,
                owner=acc.owner if rng.random() < 0.7 else rng.choice(sellers), stage=stage,
                amount=0.0 if empty else round(qty * product.unit_price, 2), currency=acc.currency,
                probability=PROBABILITY.get(stage, 0),
                close_date=closed_at.date() if closed_at else today + dt.timedelta(days=rng.randint(-10, 90)),
                reference=f"QT-{rng.randint(10000, 99999)}" if stage != "prospecting" else None,
                lost_reason=rng.choice(LOST_REASONS) if stage == "lost" else None,
                created_at=created, updated_at=closed_at or created, closed_at=closed_at,
            )  # fmt: skip
            state.deals[deal.id] = deal

    deals = list(state.deals.values())
    for _ in range(50):
        deal, kind = rng.choice(deals), rng.choice(("call", "email", "meeting", "note", "task"))
        verb = {"call": "Call about", "email": "Sent pricing for", "meeting": "Meeting on", "note": "Note on"}
        activity = Activity(
            id=state.new_id("act"), kind=kind, subject=f"{verb.get(kind, 'Follow up on')} {deal.title}",
            body=f"Discussed {deal.amount:.2f} {deal.currency} with {deal.company}.", account_id=deal.account_id,
            deal_id=deal.id, contact_id=deal.contact_id, author=deal.owner,
            occurred_at=deal.created_at + dt.timedelta(minutes=rng.randint(1, (now - deal.created_at) // MINUTE)),
        )  # fmt: skip
        state.activities[activity.id] = activity
    return state


service = Service(
    "crm",
    version=1,
    category="sales",
    description="Customer relationship management: accounts, contacts, deals and activities.",
    modelled_on="HubSpot CRM API (companies, contacts, deals, engagements) / Salesforce",
    state=CrmState,
    seed=seed,
    system_fields=("created_at", "updated_at"),  # closed_at and occurred_at are outcomes
)


def _is(value: object, wanted: object) -> bool:
    """An optional equality filter (emails compare case-insensitively)."""
    if wanted is None:
        return True
    return value.lower() == wanted.lower() if isinstance(value, str) and isinstance(wanted, str) else value == wanted


def _check_user(state: CrmState, email: str | None, field: str) -> None:
    if email is not None and email.lower() not in state.users:
        raise BadRequest(f"argument {field!r}: {email!r} is not a CRM user (owners must be employees)")


def _active_account(state: CrmState, account_id: str) -> Account:
    acc = require(state.accounts, account_id, "account")
    if acc.status == "archived":
        raise Conflict(f"account {account_id!r} is archived and read-only")
    return acc


def _open_deal(state: CrmState, deal_id: str) -> Deal:
    deal = require(state.deals, deal_id, "deal")
    if deal.stage in ("won", "lost"):
        raise Conflict(f"deal {deal_id!r} is already {deal.stage} and cannot be changed")
    return deal


def _contact_at(state: CrmState, contact_id: str | None, account_id: str) -> Contact | None:
    if contact_id is None:
        return None
    contact = require(state.contacts, contact_id, "contact")
    if contact.account_id != account_id:
        raise BadRequest(f"argument 'contact_id': contact {contact_id!r} is not at account {account_id!r}")
    return contact


def _check_email_free(state: CrmState, email: str, except_id: str | None = None) -> None:
    for other in state.contacts.values():
        if other.email.lower() == email.lower() and other.id != except_id:
            raise Conflict(f"email {email!r} already belongs to contact {other.id!r}")


@service.read(op="list", entity="account", collection="accounts", reads=("name", "domain", "type", "status", "owner"))
def list_accounts(
    state: CrmState,
    query: Query | None = None,
    type: AccountType | None = None,
    status: AccountStatus | None = None,
    owner: EmailAddress | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Account]:
    """List accounts sorted by name, with optional filters.

    Args:
        query: Case-insensitive text to find in the account name or domain.
        type: Only accounts of this relationship type.
        status: Only active or only archived accounts.
        owner: Only accounts owned by this employee.
        offset: Number of accounts to skip.
        limit: Maximum number of accounts to return.
    """
    rows = [
        a
        for a in state.accounts.values()
        if (contains(a.name, query) or contains(a.domain, query))
        and _is(a.type, type)
        and _is(a.status, status)
        and _is(a.owner, owner)
    ]
    return paginate(sorted(rows, key=lambda a: (a.name.lower(), a.id)), offset, limit)


@service.read(op="get", entity="account", collection="accounts")
def get_account(state: CrmState, account_id: AccountId) -> Account:
    """Get one account.

    Args:
        account_id: Id of the account.
    """
    return require(state.accounts, account_id, "account")


@service.write(
    op="create",
    entity="account",
    collection="accounts",
    sets=("name", "domain", "industry", "type", "status", "country", "currency", "owner"),
)
def create_account(
    state: CrmState,
    name: CompanyName,
    type: AccountType,
    owner: EmailAddress,
    domain: Domain,
    industry: Industry,
    country: CountryCode,
    currency: Currency,
) -> Account:
    """Create an account; an active account with the same name is a conflict.

    Args:
        name: Company name.
        type: Relationship type.
        owner: Email of the employee who owns the account.
        domain: Web domain of the company.
        industry: Industry of the company.
        country: Country of the head office.
        currency: Billing currency.
    """
    _check_user(state, owner, "owner")
    for other in state.accounts.values():
        if other.status == "active" and other.name.lower() == name.lower():
            raise Conflict(f"an active account named {name!r} already exists: {other.id!r}")
    now = state.tick()
    acc = Account(
        id=state.new_id("acc"), name=name, domain=domain, industry=industry, type=type, status="active",
        country=country, currency=currency, owner=owner.lower(), created_at=now, updated_at=now,
    )  # fmt: skip
    state.accounts[acc.id] = acc
    return acc


@service.write(op="update", entity="account", collection="accounts", sets=("owner", "type"))
def update_account(
    state: CrmState, account_id: AccountId, owner: EmailAddress | None = None, type: AccountType | None = None
) -> Account:
    """Hand an active account to another owner or change its type (e.g. a prospect became a customer).

    Args:
        account_id: Id of the account.
        owner: Email of the new owning employee.
        type: New relationship type.
    """
    acc = _active_account(state, account_id)
    _check_user(state, owner, "owner")
    acc.owner, acc.type = owner.lower() if owner else acc.owner, type or acc.type
    acc.updated_at = state.tick()
    return acc


@service.write(op="transition", entity="account", collection="accounts", sets=("status",))
def archive_account(state: CrmState, account_id: AccountId) -> Account:
    """Archive an account (e.g. a duplicate); accounts with open deals cannot be archived.

    Args:
        account_id: Id of the account.
    """
    acc = _active_account(state, account_id)
    open_deals = sorted(d.id for d in state.deals.values() if d.account_id == account_id and d.stage in OPEN_STAGES)
    if open_deals:
        raise Conflict(f"account {account_id!r} has open deals {open_deals!r}; close or move them first")
    acc.status = "archived"
    acc.updated_at = state.tick()
    return acc


@service.read(
    op="list", entity="contact", collection="contacts", reads=("name", "email", "title", "company", "account_id")
)
def list_contacts(
    state: CrmState,
    query: Query | None = None,
    account_id: AccountId | None = None,
    email: EmailAddress | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Contact]:
    """List contacts sorted by name, with optional filters.

    Args:
        query: Case-insensitive text to find in the name, email, title or company.
        account_id: Only contacts at this account.
        email: Only the contact with this email.
        offset: Number of contacts to skip.
        limit: Maximum number of contacts to return.
    """
    rows = [
        c
        for c in state.contacts.values()
        if any(contains(v, query) for v in (c.name, c.email, c.title, c.company))
        and _is(c.account_id, account_id)
        and _is(c.email, email)
    ]
    return paginate(sorted(rows, key=lambda c: (c.name.lower(), c.id)), offset, limit)


@service.write(
    op="create",
    entity="contact",
    collection="contacts",
    sets=("account_id", "company", "name", "email", "phone", "title", "do_not_contact"),
)
def create_contact(
    state: CrmState,
    account_id: AccountId,
    name: PersonName,
    email: EmailAddress,
    title: JobTitle,
    phone: PhoneNumber | None = None,
) -> Contact:
    """Add a contact to an active account; contact emails are unique.

    Args:
        account_id: Id of the account the contact works at.
        name: Full name.
        email: Work email.
        title: Job title.
        phone: Direct phone number.
    """
    acc = _active_account(state, account_id)
    _check_email_free(state, email)
    now = state.tick()
    contact = Contact(
        id=state.new_id("con"), account_id=acc.id, company=acc.name, name=name, email=email.lower(), phone=phone,
        title=title, do_not_contact=False, created_at=now, updated_at=now,
    )  # fmt: skip
    state.contacts[contact.id] = contact
    return contact


@service.read(
    op="list",
    entity="deal",
    collection="deals",
    reads=("title", "company", "reference", "account_id", "stage", "owner"),
)
def list_deals(
    state: CrmState,
    query: Query | None = None,
    account_id: AccountId | None = None,
    stage: DealStage | None = None,
    owner: EmailAddress | None = None,
    open_only: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Deal]:
    """List deals, soonest close date first, with optional filters.

    Args:
        query: Case-insensitive text to find in the deal title, company or reference.
        account_id: Only deals of this account.
        stage: Only deals in this stage.
        owner: Only deals owned by this employee.
        open_only: Only deals that are neither won nor lost.
        offset: Number of deals to skip.
        limit: Maximum number of deals to return.
    """
    rows = [
        d
        for d in state.deals.values()
        if any(contains(v, query) for v in (d.title, d.company, d.reference))
        and _is(d.account_id, account_id)
        and _is(d.stage, stage)
        and _is(d.owner, owner)
        and (not open_only or d.stage in OPEN_STAGES)
    ]
    return paginate(sorted(rows, key=lambda d: (d.close_date, d.id)), offset, limit)


@service.read(op="get", entity="deal", collection="deals")
def get_deal(state: CrmState, deal_id: DealId) -> Deal:
    """Get one deal.

    Args:
        deal_id: Id of the deal.
    """
    return require(state.deals, deal_id, "deal")


@service.write(
    op="create",
    entity="deal",
    collection="deals",
    sets=(
        "title",
        "account_id",
        "company",
        "contact_id",
        "contact_email",
        "owner",
        "stage",
        "amount",
        "currency",
        "probability",
        "close_date",
        "reference",
    ),
)
def create_deal(
    state: CrmState,
    account_id: AccountId,
    title: Title,
    owner: EmailAddress,
    close_date: Date,
    amount: MoneyAmount = 0.0,
    stage: DealStage = "prospecting",
    contact_id: ContactId | None = None,
    reference: ReferenceCode | None = None,
) -> Deal:
    """Open a deal on an active account, in an open stage and in the account's currency.

    Args:
        account_id: Id of the account.
        title: Deal title.
        owner: Email of the employee who owns the deal.
        close_date: Expected close date.
        amount: Expected value of the deal, in the account's currency.
        stage: Starting stage (prospecting, qualification, proposal or negotiation).
        contact_id: Id of the main contact, who must work at the account.
        reference: Quote or purchase-order number.
    """
    acc = _active_account(state, account_id)
    _check_user(state, owner, "owner")
    if stage not in OPEN_STAGES:
        raise BadRequest(f"argument 'stage': a new deal starts in an open stage, not {stage!r}")
    contact = _contact_at(state, contact_id, account_id)
    now = state.tick()
    deal = Deal(
        id=state.new_id("deal"), title=title, account_id=acc.id, company=acc.name, contact_id=contact_id,
        contact_email=contact.email if contact else None, owner=owner.lower(), stage=stage, amount=amount,
        currency=acc.currency, probability=PROBABILITY[stage], close_date=close_date, reference=reference,
        created_at=now, updated_at=now,
    )  # fmt: skip
    state.deals[deal.id] = deal
    return deal


@service.write(
    op="update",
    entity="deal",
    collection="deals",
    sets=("title", "amount", "close_date", "owner", "contact_id", "contact_email", "reference"),
)
def update_deal(
    state: CrmState,
    deal_id: DealId,
    title: Title | None = None,
    amount: MoneyAmount | None = None,
    close_date: Date | None = None,
    owner: EmailAddress | None = None,
    contact_id: ContactId | None = None,
    reference: ReferenceCode | None = None,
) -> Deal:
    """Change fields of an open deal (won and lost deals are locked); omitted fields stay.

    Args:
        deal_id: Id of the deal.
        title: New title.
        amount: New expected value, in the deal's currency.
        close_date: New expected close date.
        owner: Email of the new owning employee.
        contact_id: Id of the new main contact, who must work at the deal's account.
        reference: Quote or purchase-order number.
    """
    deal = _open_deal(state, deal_id)
    _check_user(state, owner, "owner")
    contact = _contact_at(state, contact_id, deal.account_id)
    update = {
        "title": title, "amount": amount, "close_date": close_date, "owner": owner.lower() if owner else None,
        "reference": reference, "contact_id": contact_id, "contact_email": contact.email if contact else None,
    }  # fmt: skip
    changes = {k: v for k, v in update.items() if v is not None}
    updated = deal.model_copy(update={**changes, "updated_at": state.tick()})
    state.deals[deal_id] = updated
    return updated


@service.write(
    op="transition",
    entity="deal",
    collection="deals",
    sets=("stage", "probability", "close_date", "closed_at", "lost_reason"),
)
def move_deal_stage(state: CrmState, deal_id: DealId, stage: DealStage, lost_reason: Note | None = None) -> Deal:
    """Move an open deal to another stage, or close it as won or lost.

    Args:
        deal_id: Id of the deal.
        stage: Target stage; won needs an amount above 0, lost needs a lost_reason.
        lost_reason: Why the deal was lost (required when stage is lost).
    """
    deal = _open_deal(state, deal_id)
    if stage == deal.stage:
        raise Conflict(f"deal {deal_id!r} is already in stage {stage!r}")
    if stage == "won" and deal.amount <= 0:
        raise BadRequest(f"argument 'stage': deal {deal_id!r} has amount 0; set an amount above 0 to close it won")
    if stage == "lost" and not (lost_reason or "").strip():
        raise BadRequest("argument 'lost_reason': a reason is required to close a deal as lost")
    now = state.tick()
    deal.stage, deal.probability, deal.updated_at = stage, PROBABILITY.get(stage, 0), now
    if stage in ("won", "lost"):
        deal.closed_at, deal.close_date = now, now.date()
        deal.lost_reason = lost_reason if stage == "lost" else None
    return deal


@service.write(op="delete", entity="deal", collection="deals")
def delete_deal(state: CrmState, deal_id: DealId) -> Deal:
    """Delete a deal you own (e.g. a duplicate) and return it; won deals are booked revenue and stay.

    Args:
        deal_id: Id of the deal.
    """
    deal = require(state.deals, deal_id, "deal")
    if deal.owner.lower() != state.me.lower():
        raise Forbidden(f"deal {deal_id!r} is owned by {deal.owner!r}; only its owner may delete it")
    if deal.stage == "won":
        raise Conflict(f"deal {deal_id!r} is won and cannot be deleted")
    del state.deals[deal_id]
    for activity in state.activities.values():
        if activity.deal_id == deal_id:
            activity.deal_id = None
    return deal


@service.write(
    op="create",
    entity="activity",
    collection="activities",
    sets=("kind", "subject", "body", "account_id", "deal_id", "contact_id", "author", "occurred_at"),
)
def log_activity(
    state: CrmState,
    kind: ActivityKind,
    subject: Title,
    body: Note = "",
    deal_id: DealId | None = None,
    contact_id: ContactId | None = None,
) -> Activity:
    """Log a call, email, meeting, note or task against a deal, a contact or both.

    Args:
        kind: Kind of activity.
        subject: Short subject line.
        body: What happened or what was agreed.
        deal_id: Id of the deal it concerns.
        contact_id: Id of the contact it was with (must work at the deal's account).
    """
    deal = require(state.deals, deal_id, "deal") if deal_id is not None else None
    contact = require(state.contacts, contact_id, "contact") if contact_id is not None else None
    if deal is None and contact is None:
        raise BadRequest("argument 'deal_id': give a deal_id, a contact_id or both")
    if deal and contact and deal.account_id != contact.account_id:
        raise BadRequest(f"argument 'contact_id': contact {contact_id!r} is not at the account of deal {deal_id!r}")
    if contact and contact.do_not_contact and kind in ("call", "email"):
        raise Forbidden(f"contact {contact_id!r} opted out of contact; a {kind} cannot be logged")
    account_id = deal.account_id if deal else contact.account_id if contact else ""
    activity = Activity(
        id=state.new_id("act"), kind=kind, subject=subject, body=body, account_id=account_id, deal_id=deal_id,
        contact_id=contact_id, author=state.me, occurred_at=state.tick(),
    )  # fmt: skip
    state.activities[activity.id] = activity
    return activity


@service.read(
    op="list", entity="activity", collection="activities", reads=("deal_id", "account_id", "contact_id", "kind")
)
def list_activities(
    state: CrmState,
    deal_id: DealId | None = None,
    account_id: AccountId | None = None,
    contact_id: ContactId | None = None,
    kind: ActivityKind | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Activity]:
    """List logged activities, newest first, with optional filters.

    Args:
        deal_id: Only activities of this deal.
        account_id: Only activities of this account.
        contact_id: Only activities with this contact.
        kind: Only activities of this kind.
        offset: Number of activities to skip.
        limit: Maximum number of activities to return.
    """
    rows = [
        a
        for a in state.activities.values()
        if _is(a.deal_id, deal_id)
        and _is(a.account_id, account_id)
        and _is(a.contact_id, contact_id)
        and _is(a.kind, kind)
    ]
    return paginate(sorted(rows, key=lambda a: (a.occurred_at, a.id), reverse=True), offset, limit)
