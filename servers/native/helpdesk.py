"""Helpdesk: customer support tickets with agents, comments, SLAs, escalation and merging.

Tools: list_tickets, get_ticket, create_ticket, update_ticket, assign_ticket, set_ticket_status,
add_comment, list_comments, escalate_ticket, merge_tickets, delete_ticket, list_users,
list_agents, sla_report.
State: tickets and comments by id; the helpdesk users (every person of the population, the
Support department as agents) by email; the signed-in user's email.
Seed: about 50 tickets from customers' contacts and a few colleagues about the population's
products, orders and invoices, in every status and priority: re-filed near-duplicate tickets
waiting to be merged, tickets past their SLA, unassigned ones, old closed ones and two spam
tickets; about 60 public replies and internal notes.
Rules: status moves open → pending → solved → closed (pending and open may swap; solved may
reopen); only a solved ticket can be closed and a closed ticket never changes again (409);
solving needs an assignee (409); only Support agents can be assigned (403); escalation raises
the priority one level, resets the SLA and hands the ticket to the Support lead; merging needs
two different, unclosed tickets from the same requester; only spam tickets can be deleted (403).
SLA targets: urgent 4 h, high 8 h, normal 24 h, low 72 h from creation (or escalation).
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
    NotFound,
    Page,
    Record,
    Service,
    ServiceState,
    contains,
    paginate,
    require,
)
from servers.population import Population
from servers.roles import ROLE_KEY, role
from servers.types import (
    CompanyName,
    Count,
    DateTime,
    DocumentText,
    EmailAddress,
    Flag,
    Hours,
    JobTitle,
    Limit,
    Note,
    Offset,
    PersonName,
    Priority,
    Query,
    ReferenceCode,
    Sku,
    Tag,
    Title,
    ident,
    sem,
)

TicketId = Annotated[str, ident("helpdesk", "ticket")]
CommentId = Annotated[str, ident("helpdesk", "comment")]
TicketStatus = Annotated[
    Literal["open", "pending", "solved", "closed"],
    sem("helpdesk.ticket_status", "Ticket status: open, pending (waiting on the requester), solved or closed."),
]
Channel = Annotated[Literal["email", "web", "phone", "chat"], sem("helpdesk.channel", "Channel a ticket came in by.")]
UserRole = Annotated[
    Literal["end_user", "agent", "lead"], sem("helpdesk.user_role", "Helpdesk role: end user, agent or team lead.")
]

SLA_HOURS = {"urgent": 4, "high": 8, "normal": 24, "low": 72}
ESCALATE: dict[str, Priority] = {"low": "normal", "normal": "high", "high": "urgent", "urgent": "urgent"}
MOVES = {"open": ("pending", "solved"), "pending": ("open", "solved"), "solved": ("open", "closed"), "closed": ()}
SPAM = "spam"


class Ticket(Record):
    id: TicketId
    subject: Title
    description: DocumentText
    requester: EmailAddress = Field(
        description="Email of the person who asked for help.", json_schema_extra={ROLE_KEY: "requester"}
    )
    requester_name: PersonName = Field(description="Name of the requester.", json_schema_extra={ROLE_KEY: "requester"})
    company: CompanyName | None = Field(
        default=None, description="Requester's company, if any.", json_schema_extra={ROLE_KEY: "customer"}
    )
    assignee: EmailAddress | None = Field(
        default=None, description="Email of the Support agent working on it.", json_schema_extra={ROLE_KEY: "assignee"}
    )
    status: TicketStatus
    priority: Priority
    channel: Channel
    tags: list[Tag] = Field(default_factory=list, description="Labels on the ticket.")
    product_sku: Sku | None = Field(default=None, description="Product the ticket is about.")
    reference: ReferenceCode | None = Field(default=None, description="Order, PO or invoice number it concerns.")
    escalated: Flag = Field(default=False, description="Whether the ticket was escalated.")
    merged_into: TicketId | None = Field(default=None, description="Ticket this one was merged into.")
    sla_due_at: DateTime = Field(description="When the ticket must be solved to meet its SLA.")
    created_at: DateTime
    updated_at: DateTime


class Comment(Record):
    id: CommentId
    ticket_id: TicketId
    author: EmailAddress = Field(description="Email of the comment's author.", json_schema_extra={ROLE_KEY: "author"})
    body: DocumentText
    public: Flag = Field(description="True when the requester can see it; false for an internal note.")
    created_at: DateTime


class User(Record):
    email: Annotated[EmailAddress, role("requester")]
    name: Annotated[PersonName, role("requester")]
    company: CompanyName | None = Field(
        default=None, description="Company of the user.", json_schema_extra={ROLE_KEY: "customer"}
    )
    title: JobTitle
    role: UserRole


class AgentLoad(Record):
    email: EmailAddress = Field(description="Email of the agent.", json_schema_extra={ROLE_KEY: "assignee"})
    name: Annotated[PersonName, role("assignee")]
    role: UserRole
    open_tickets: Count = Field(description="Open or pending tickets assigned to the agent.")
    breached: Count = Field(description="Of those, tickets past their SLA.")


class SlaLine(Record):
    priority: Priority
    target_hours: Hours = Field(description="SLA target for this priority.")
    unsolved: Count = Field(description="Open or pending tickets of this priority.")
    breached: Count = Field(description="Unsolved tickets past their SLA.")


class HelpdeskState(ServiceState):
    me: str = ""
    users: dict[str, User] = Field(default_factory=dict)
    tickets: dict[str, Ticket] = Field(default_factory=dict)
    comments: dict[str, Comment] = Field(default_factory=dict)


ISSUES = (  # subject, description, kind of reference, tag
    (
        "{product} stopped working",
        "Our {product} ({sku}) stopped working after a week. Can you help?",
        "ORD",
        "hardware",
    ),
    ("Wrong amount on invoice {ref}", "Invoice {ref} charges more than agreed. Please correct it.", "INV", "billing"),
    ("Delivery for {ref} is late", "We are still waiting for the {product} ordered under {ref}.", "PO", "shipping"),
    (
        "How do I set up the {product}?",
        "The manual for the {product} is unclear about the first setup.",
        "",
        "onboarding",
    ),
    ("Refund request for {product}", "We returned the {product} ({sku}); please refund order {ref}.", "ORD", "billing"),
    ("Cannot log in to the portal", "Since this morning none of our users can log in. This blocks us.", "", "access"),
)


def seed(rng: random.Random, world: Population) -> HelpdeskState:
    now = world.now
    state = HelpdeskState(me=world.me.email, clock=now)
    for p in world.people:
        role = "end_user" if p.department != "Support" else "lead" if p.manager_id is None else "agent"
        company = None if p.is_employee else p.company
        state.users[p.email] = User(email=p.email, name=p.name, company=company, title=p.title, role=role)
    agents = [p.email for p in world.employees if p.department == "Support"]
    requesters = list(world.contacts) + rng.sample(list(world.employees), 5)

    def add_comment(ticket: Ticket, author: str, body: str, public: bool, at: dt.datetime) -> None:
        comment = Comment(
            id=state.new_id("cmt"),
            ticket_id=ticket.id,
            author=author,
            body=body,
            public=public,
            created_at=min(at, now),
        )
        state.comments[comment.id] = comment

    def ticket(
        subject: str, body: str, email: str, status: str, priority: str, age_hours: int, tags: list[str], **refs: str
    ) -> Ticket:
        user = state.users[email]
        created = now - dt.timedelta(minutes=age_hours * 60 + rng.randint(0, 59))
        new = Ticket(
            id=state.new_id("tkt"), subject=subject, description=body, requester=user.email,
            requester_name=user.name, company=user.company, status=status, priority=priority,
            assignee=None if status == "open" and rng.random() < 0.3 else rng.choice(agents),
            channel=rng.choice(("email", "web", "phone", "chat")), tags=tags, product_sku=refs.get("sku"),
            reference=refs.get("ref"), sla_due_at=created + dt.timedelta(hours=SLA_HOURS[priority]),
            created_at=created, updated_at=created + dt.timedelta(hours=rng.randint(1, 30) if age_hours > 99 else 0),
        )  # fmt: skip
        state.tickets[new.id] = new
        if new.assignee:
            reply = f"Hi {user.name.split()[0]}, thanks for reaching out. We are on it."
            add_comment(new, new.assignee, reply, True, created + dt.timedelta(minutes=rng.randint(10, 180)))
            if rng.random() < 0.4:
                note = "Checked the account history; looks like a known issue."
                add_comment(new, new.assignee, note, False, created + dt.timedelta(minutes=rng.randint(200, 400)))
        return new

    for _ in range(44):
        person, (subject, body, kind, tag) = rng.choice(requesters), rng.choice(ISSUES)
        product = rng.choice([p for p in world.products if tag == "billing" or p.category == "hardware"])
        ref = f"{kind}-{rng.randint(10000, 99999)}"
        fill = {"product": product.name, "sku": product.sku, "ref": ref}
        refs = {"sku": product.sku} if "{product}" in subject + body else {}
        refs |= {"ref": ref} if "{ref}" in subject + body else {}
        status = rng.choice(("open", "open", "pending", "solved", "closed"))
        priority = rng.choice(("low", "normal", "normal", "high", "urgent"))
        unsolved = status in ("open", "pending")  # young enough that about a third are past their SLA
        age = rng.randint(1, SLA_HOURS[priority] * 3 // 2) if unsolved else rng.randint(100, 2000)
        tags = [tag, "vip"] if person.title in ("CEO", "CFO") else [tag]
        first = ticket(subject.format(**fill), body.format(**fill), person.email, status, priority, age, tags, **refs)
        if status == "open" and rng.random() < 0.3:  # the requester filed the same issue again
            again = f"Second request. {first.description}"
            ticket(f"URGENT: {first.subject}", again, person.email, "open", priority, max(age - 1, 0), tags, **refs)
    for sender in ("promo@seo-boost-offers.biz", "winner@lucky-prize-draw.net"):
        state.users[sender] = User(email=sender, name="Unknown sender", title="External sender", role="end_user")
        ticket("You have been selected!!!", "Click here to claim your prize.", sender, "open", "low", 5, [SPAM])
    return state


service = Service(
    "helpdesk",
    version=1,
    category="support",
    description="Customer support tickets: triage, assign, reply, escalate, merge and solve within SLA.",
    modelled_on="Zendesk Support API (tickets, comments, SLA policies)",
    state=HelpdeskState,
    seed=seed,
    # sla_due_at follows from created_at (or the escalation time) and the priority
    system_fields=("created_at", "updated_at", "sla_due_at"),
)


def _breached(state: HelpdeskState, ticket: Ticket) -> bool:
    return ticket.status in ("open", "pending") and ticket.sla_due_at < state.clock


def _unclosed(state: HelpdeskState, ticket_id: str) -> Ticket:
    ticket = require(state.tickets, ticket_id, "ticket")
    if ticket.status == "closed":
        raise Conflict(f"ticket {ticket_id!r} is closed and cannot be changed; open a follow-up ticket instead")
    return ticket


def _comment(state: HelpdeskState, ticket: Ticket, body: str, public: bool) -> Comment:
    now = state.tick()
    comment = Comment(id=state.new_id("cmt"), ticket_id=ticket.id, author=state.me, body=body, public=public,
                      created_at=now)  # fmt: skip
    state.comments[comment.id] = comment
    ticket.updated_at = now
    return comment


@service.read(
    op="list",
    entity="ticket",
    collection="tickets",
    reads=("status", "priority", "assignee", "requester", "tags", "subject", "description", "reference", "sla_due_at"),
)
def list_tickets(
    state: HelpdeskState,
    status: TicketStatus | None = None,
    priority: Priority | None = None,
    assignee: EmailAddress | None = None,
    requester: EmailAddress | None = None,
    tag: Tag | None = None,
    query: Query | None = None,
    breached_only: Flag = False,
    unassigned_only: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Ticket]:
    """List tickets, soonest SLA deadline first, with optional filters.

    Args:
        status: Only tickets in this status.
        priority: Only tickets of this priority.
        assignee: Only tickets assigned to this agent.
        requester: Only tickets from this requester.
        tag: Only tickets carrying this tag.
        query: Case-insensitive text to find in the subject, description or reference.
        breached_only: Only unsolved tickets already past their SLA.
        unassigned_only: Only tickets nobody is assigned to.
        offset: Number of tickets to skip.
        limit: Maximum number of tickets to return.
    """
    rows = [
        t
        for t in state.tickets.values()
        if (status is None or t.status == status)
        and (priority is None or t.priority == priority)
        and (assignee is None or (t.assignee or "").lower() == assignee.lower())
        and (requester is None or t.requester.lower() == requester.lower())
        and (tag is None or tag in t.tags)
        and any(contains(v, query) for v in (t.subject, t.description, t.reference))
        and (not breached_only or _breached(state, t))
        and (not unassigned_only or t.assignee is None)
    ]
    return paginate(sorted(rows, key=lambda t: (t.sla_due_at, t.id)), offset, limit)


@service.read(op="get", entity="ticket", collection="tickets")
def get_ticket(state: HelpdeskState, ticket_id: TicketId) -> Ticket:
    """Get one ticket.

    Args:
        ticket_id: Id of the ticket.
    """
    return require(state.tickets, ticket_id, "ticket")


@service.write(
    op="create",
    entity="ticket",
    collection="tickets",
    sets=(
        "subject",
        "description",
        "requester",
        "requester_name",
        "company",
        "status",
        "priority",
        "channel",
        "tags",
        "product_sku",
        "reference",
    ),
)
def create_ticket(
    state: HelpdeskState,
    requester: EmailAddress,
    subject: Title,
    description: DocumentText,
    priority: Priority = "normal",
    channel: Channel = "email",
    tags: list[Tag] | None = None,
    product_sku: Sku | None = None,
    reference: ReferenceCode | None = None,
) -> Ticket:
    """Open a ticket on behalf of a known requester; its SLA deadline follows from the priority.

    Args:
        requester: Email of the person asking for help (a known helpdesk user).
        subject: Short summary of the problem.
        description: Full description of the problem.
        priority: Priority; sets the SLA target.
        channel: Channel the request came in by.
        tags: Labels for the ticket.
        product_sku: Product the ticket is about.
        reference: Order, PO or invoice number it concerns.
    """
    user = state.users.get(requester.lower())
    if user is None:
        raise NotFound(f"requester {requester!r} not found; requesters must be known helpdesk users")
    now = state.tick()
    ticket = Ticket(
        id=state.new_id("tkt"), subject=subject, description=description, requester=user.email,
        requester_name=user.name, company=user.company, status="open", priority=priority, channel=channel,
        tags=sorted(set(tags or [])), product_sku=product_sku, reference=reference,
        sla_due_at=now + dt.timedelta(hours=SLA_HOURS[priority]), created_at=now, updated_at=now,
    )  # fmt: skip
    state.tickets[ticket.id] = ticket
    return ticket


@service.write(
    op="update", entity="ticket", collection="tickets", sets=("subject", "priority", "tags", "product_sku", "reference")
)
def update_ticket(
    state: HelpdeskState,
    ticket_id: TicketId,
    subject: Title | None = None,
    priority: Priority | None = None,
    tags: list[Tag] | None = None,
    product_sku: Sku | None = None,
    reference: ReferenceCode | None = None,
) -> Ticket:
    """Change the subject, priority, tags, product or reference of a ticket that is not closed.

    Args:
        ticket_id: Id of the ticket.
        subject: New subject.
        priority: New priority; the SLA deadline is recomputed from the creation time.
        tags: New full list of tags (replaces the old list).
        product_sku: Product the ticket is about.
        reference: Order, PO or invoice number it concerns.
    """
    ticket = _unclosed(state, ticket_id)
    update = {"subject": subject, "product_sku": product_sku, "reference": reference}
    changes: dict[str, object] = {k: v for k, v in update.items() if v is not None}
    if priority is not None:
        changes |= {"priority": priority, "sla_due_at": ticket.created_at + dt.timedelta(hours=SLA_HOURS[priority])}
    if tags is not None:
        changes["tags"] = sorted(set(tags))
    updated = ticket.model_copy(update={**changes, "updated_at": state.tick()})
    state.tickets[ticket_id] = updated
    return updated


@service.write(op="update", entity="ticket", collection="tickets", sets=("assignee",))
def assign_ticket(state: HelpdeskState, ticket_id: TicketId, assignee: EmailAddress) -> Ticket:
    """Assign a ticket to a Support agent.

    Args:
        ticket_id: Id of the ticket.
        assignee: Email of the agent; only members of the Support team can be assigned.
    """
    ticket = _unclosed(state, ticket_id)
    user = state.users.get(assignee.lower())
    if user is None or user.role == "end_user":
        raise Forbidden(f"{assignee!r} is not a Support agent; only agents can be assigned tickets")
    if ticket.assignee == user.email:
        raise Conflict(f"ticket {ticket_id!r} is already assigned to {assignee!r}")
    ticket.assignee = user.email
    ticket.updated_at = state.tick()
    return ticket


@service.write(op="transition", entity="ticket", collection="tickets", sets=("status",))
def set_ticket_status(state: HelpdeskState, ticket_id: TicketId, status: TicketStatus) -> Ticket:
    """Move a ticket along its workflow: open ⇄ pending → solved → closed (solved may reopen).

    Args:
        ticket_id: Id of the ticket.
        status: New status; solving needs an assignee, and only a solved ticket can be closed.
    """
    ticket = _unclosed(state, ticket_id)
    if status not in MOVES[ticket.status]:
        allowed = list(MOVES[ticket.status])
        raise Conflict(f"ticket {ticket_id!r} cannot go from {ticket.status!r} to {status!r}; allowed: {allowed}")
    if status == "solved" and ticket.assignee is None:
        raise Conflict(f"ticket {ticket_id!r} has no assignee; assign it before solving it")
    ticket.status = status
    ticket.updated_at = state.tick()
    return ticket


@service.write(op="create", entity="comment", collection="comments", sets=("ticket_id", "author", "body", "public"))
def add_comment(state: HelpdeskState, ticket_id: TicketId, body: DocumentText, public: Flag = True) -> Comment:
    """Reply to the requester (public) or leave an internal note for agents (not public).

    Args:
        ticket_id: Id of the ticket.
        body: Text of the comment.
        public: True to reply to the requester, false for an internal note.
    """
    ticket = _unclosed(state, ticket_id)
    if not body.strip():
        raise BadRequest("argument 'body': a comment cannot be empty")
    return _comment(state, ticket, body, public)


@service.read(op="list", entity="comment", collection="comments", reads=("ticket_id", "public"))
def list_comments(state: HelpdeskState, ticket_id: TicketId, public_only: Flag = False) -> list[Comment]:
    """List the comments of a ticket, oldest first.

    Args:
        ticket_id: Id of the ticket.
        public_only: Only comments the requester can see.
    """
    require(state.tickets, ticket_id, "ticket")
    rows = [c for c in state.comments.values() if c.ticket_id == ticket_id and (c.public or not public_only)]
    return sorted(rows, key=lambda c: (c.created_at, c.id))


@service.write(op="transition", entity="ticket", collection="tickets", sets=("priority", "escalated", "assignee"))
def escalate_ticket(state: HelpdeskState, ticket_id: TicketId, reason: Note) -> Ticket:
    """Escalate an unsolved ticket: priority up one level, a fresh SLA, handed to the Support lead.

    Args:
        ticket_id: Id of the ticket.
        reason: Why it needs escalation (kept as an internal note).
    """
    ticket = require(state.tickets, ticket_id, "ticket")
    if ticket.status not in ("open", "pending"):
        raise Conflict(f"ticket {ticket_id!r} is {ticket.status}; only open or pending tickets can be escalated")
    if ticket.escalated:
        raise Conflict(f"ticket {ticket_id!r} is already escalated")
    if not reason.strip():
        raise BadRequest("argument 'reason': say why the ticket is escalated")
    lead = next((u.email for u in state.users.values() if u.role == "lead"), ticket.assignee)
    _comment(state, ticket, f"Escalated: {reason}", public=False)
    ticket.priority, ticket.escalated, ticket.assignee = ESCALATE[ticket.priority], True, lead
    ticket.sla_due_at = state.clock + dt.timedelta(hours=SLA_HOURS[ticket.priority])
    return ticket


@service.write(op="action", entity="ticket", collection="tickets", sets=("tags", "status", "merged_into"))
def merge_tickets(state: HelpdeskState, source_ticket_id: TicketId, target_ticket_id: TicketId) -> Ticket:
    """Merge a duplicate ticket into another from the same requester; the duplicate is closed.

    Args:
        source_ticket_id: Id of the duplicate ticket, which gets closed.
        target_ticket_id: Id of the ticket that stays open and receives the duplicate's tags.
    """
    source = require(state.tickets, source_ticket_id, "ticket")
    target = require(state.tickets, target_ticket_id, "ticket")
    if source.id == target.id:
        raise BadRequest("argument 'target_ticket_id': a ticket cannot be merged into itself")
    for ticket in (source, target):
        if ticket.status == "closed":
            raise Conflict(f"ticket {ticket.id!r} is closed and cannot take part in a merge")
    if source.requester != target.requester:
        raise Conflict(
            f"tickets {source.id!r} and {target.id!r} have different requesters "
            f"({source.requester!r}, {target.requester!r}); only duplicates from one requester merge"
        )
    _comment(state, target, f"Merged ticket {source.id!r}: {source.subject}\n\n{source.description}", public=False)
    _comment(state, source, f"This request was merged into ticket {target.id!r}.", public=True)
    target.tags = sorted(set(target.tags) | set(source.tags))
    source.status, source.merged_into = "closed", target.id
    return target


@service.write(op="delete", entity="ticket", collection="tickets")
def delete_ticket(state: HelpdeskState, ticket_id: TicketId) -> Ticket:
    """Delete a spam ticket (tagged spam) with its comments and return it; real tickets are kept.

    Args:
        ticket_id: Id of the ticket.
    """
    ticket = require(state.tickets, ticket_id, "ticket")
    if SPAM not in ticket.tags:
        raise Forbidden(f"ticket {ticket_id!r} is not tagged {SPAM!r}; only spam can be deleted, solve it instead")
    del state.tickets[ticket_id]
    for comment_id in [c.id for c in state.comments.values() if c.ticket_id == ticket_id]:
        del state.comments[comment_id]
    return ticket


@service.read(op="list", entity="user", collection="users", reads=("name", "email", "company", "role"))
def list_users(
    state: HelpdeskState,
    query: Query | None = None,
    role: UserRole | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[User]:
    """List helpdesk users (requesters and agents) sorted by name.

    Args:
        query: Case-insensitive text to find in the name, email or company.
        role: Only users with this role.
        offset: Number of users to skip.
        limit: Maximum number of users to return.
    """
    rows = [
        u
        for u in state.users.values()
        if any(contains(v, query) for v in (u.name, u.email, u.company)) and (role is None or u.role == role)
    ]
    return paginate(sorted(rows, key=lambda u: (u.name.lower(), u.email)), offset, limit)


@service.read(op="aggregate", entity="user", collection="users", reads=("role",))
def list_agents(state: HelpdeskState) -> list[AgentLoad]:
    """List the Support agents with their current workload, lightest first."""
    rows = []
    for user in state.users.values():
        if user.role == "end_user":
            continue
        mine = [t for t in state.tickets.values() if t.assignee == user.email and t.status in ("open", "pending")]
        breached = sum(_breached(state, t) for t in mine)
        rows.append(AgentLoad(email=user.email, name=user.name, role=user.role, open_tickets=len(mine),
                              breached=breached))  # fmt: skip
    return sorted(rows, key=lambda a: (a.open_tickets, a.email))


@service.read(
    op="aggregate", entity="ticket", collection="tickets", reads=("priority", "status", "assignee", "sla_due_at")
)
def sla_report(state: HelpdeskState, assignee: EmailAddress | None = None) -> list[SlaLine]:
    """Count unsolved and SLA-breached tickets per priority.

    Args:
        assignee: Only tickets assigned to this agent.
    """
    lines = []
    for priority, hours in SLA_HOURS.items():
        rows = [
            t
            for t in state.tickets.values()
            if t.priority == priority
            and t.status in ("open", "pending")
            and (assignee is None or (t.assignee or "").lower() == assignee.lower())
        ]
        breached = sum(_breached(state, t) for t in rows)
        lines.append(SlaLine(priority=priority, target_hours=hours, unsolved=len(rows), breached=breached))
    return lines
