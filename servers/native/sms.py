"""SMS: the organisation's SMS gateway — owned numbers, contacts, messages, delivery and opt-outs.

Tools: list_numbers, list_contacts, get_contact, create_contact, update_contact, delete_contact,
list_messages, get_message, list_conversations, send_message, schedule_message,
cancel_scheduled_message, resend_message, opt_out, opt_in.
State: owned numbers, contacts and messages by id.
Seed: six numbers owned by the organisation (the main line, team lines, one suspended pending
carrier registration, one voice-only line); about 45 contacts taken from the population's external
contacts and field staff (near-duplicate names, landlines, opted-out recipients, one who texted
START again); about 55 messages: customer conversations quoting orders, delivery failures to
landlines, STOP/START keywords, scheduled reminders and a cancelled one.
Rules: a recipient who opted out cannot be messaged (403) until they text START back (opt_in
without it is 403); a suspended number cannot send (403); voice-only numbers cannot send and a body
may use at most 10 segments (400); a message is scheduled 15 minutes to 35 days ahead (400); only
scheduled messages can be cancelled and only failed or undelivered ones resent (409); a contact's
phone is unique (409); opted-out contacts and contacts with scheduled messages cannot be deleted
(409). Outbound messages to mobiles are delivered, to landlines undelivered (error 30006).
Version history: 1 — first version.
"""

from __future__ import annotations

import datetime as dt
import math
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
    Currency,
    DateTime,
    EmailAddress,
    Flag,
    Limit,
    MessageText,
    MoneyAmount,
    Offset,
    PersonName,
    PhoneNumber,
    Query,
    Tag,
    Title,
    ident,
    sem,
)

NumberId = Annotated[str, ident("sms", "number")]
ContactId = Annotated[str, ident("sms", "contact")]
MessageId = Annotated[str, ident("sms", "message")]
Direction = Annotated[Literal["inbound", "outbound"], sem("sms.direction", "Whether a message was received or sent.")]
Status = Annotated[
    Literal["scheduled", "queued", "sent", "delivered", "undelivered", "failed", "received", "canceled"],
    sem("sms.message_status", "Delivery status of an SMS as reported by the carrier."),
]
NumberStatus = Annotated[
    Literal["active", "suspended"],
    sem("sms.number_status", "Active numbers can send; suspended ones (carrier registration pending) cannot."),
]
LineType = Annotated[
    Literal["mobile", "landline", "voip"], sem("sms.line_type", "Carrier line type of a phone number.")
]
ErrorCode = Annotated[
    int, sem("sms.error_code", "Carrier error code of a failed delivery, e.g. 30006 (landline).", ge=10000, le=99999)
]

PRICE_PER_SEGMENT = 0.0079
MAX_SEGMENTS = 10
START_WORDS = ("start", "unstop", "yes")
LANDLINE_ERROR, UNREACHABLE_ERROR = 30006, 30003


class OwnedNumber(Record):
    id: NumberId
    number: PhoneNumber = Field(description="The owned phone number.", json_schema_extra={ROLE_KEY: "sender"})
    label: Title = Field(description="What the number is used for.")
    owner: EmailAddress = Field(
        description="Employee responsible for the number.", json_schema_extra={ROLE_KEY: "owner"}
    )
    status: NumberStatus
    sms_enabled: Flag = Field(description="False for voice-only lines.")


class Contact(Record):
    id: ContactId
    phone: PhoneNumber = Field(
        description="Phone number of the contact (unique).", json_schema_extra={ROLE_KEY: "contact"}
    )
    name: Annotated[PersonName, role("contact")]
    email: EmailAddress | None = Field(
        default=None, description="Email address of the contact.", json_schema_extra={ROLE_KEY: "contact"}
    )
    company: CompanyName | None = Field(
        default=None, description="Company of the contact.", json_schema_extra={ROLE_KEY: "party"}
    )
    line_type: LineType
    tags: list[Tag] = Field(default_factory=list, description="Labels such as customer or vip.")
    opted_out: Flag = Field(default=False, description="Whether the contact replied STOP.")
    opted_out_at: DateTime | None = Field(
        default=None, description="When the contact opted out.", json_schema_extra={ROLE_KEY: "event"}
    )


class SmsMessage(Record):
    id: MessageId
    number_id: NumberId = Field(description="Owned number the message went through.")
    direction: Direction
    from_number: PhoneNumber = Field(description="Sender number.", json_schema_extra={ROLE_KEY: "sender"})
    to_number: PhoneNumber = Field(description="Recipient number.", json_schema_extra={ROLE_KEY: "recipient"})
    body: MessageText
    status: Status
    segments: Count = Field(description="Billed SMS segments.")
    price: MoneyAmount = Field(description="Price charged for the message.", json_schema_extra={ROLE_KEY: "cost"})
    currency: Currency
    error_code: ErrorCode | None = Field(default=None, description="Carrier error code when delivery failed.")
    created_at: DateTime
    scheduled_for: DateTime | None = Field(
        default=None, description="Send time of a scheduled message.", json_schema_extra={ROLE_KEY: "event"}
    )


class Conversation(Record):
    number_id: NumberId = Field(description="Owned number of the conversation.")
    phone: PhoneNumber = Field(description="Phone number of the other party.", json_schema_extra={ROLE_KEY: "contact"})
    contact_id: ContactId | None = Field(description="Contact with that phone, if any.")
    contact_name: PersonName | None = Field(
        description="Name of that contact, if any.", json_schema_extra={ROLE_KEY: "contact"}
    )
    messages: Count = Field(description="Messages exchanged.")
    last_message_at: DateTime = Field(description="Time of the latest message.", json_schema_extra={ROLE_KEY: "event"})
    last_message: MessageText = Field(description="Text of the latest message.")
    last_direction: Direction


class DeletedContact(Record):
    id: ContactId = Field(description="Id of the deleted contact.")
    deleted: Flag = Field(description="Always true.")


class SmsState(ServiceState):
    numbers: dict[str, OwnedNumber] = Field(default_factory=dict)
    contacts: dict[str, Contact] = Field(default_factory=dict)
    messages: dict[str, SmsMessage] = Field(default_factory=dict)


def segments_of(body: str) -> int:
    """SMS segments of a body: 160 GSM characters (70 for Unicode) alone, 153 (67) when split."""
    single, part = (160, 153) if all(ord(c) < 128 for c in body) else (70, 67)
    return 1 if len(body) <= single else math.ceil(len(body) / part)


def seed(rng: random.Random, world: Population) -> SmsState:
    state = SmsState(clock=world.now)
    used = {p.phone for p in world.people} | {c.phone for c in world.companies}
    heads = {p.department: p.email for p in world.employees if p.manager_id is None}

    def fresh_phone() -> str:
        while True:
            phone = f"+1{rng.randint(201, 989)}555{rng.randint(0, 9999):04d}"
            if phone not in used:
                used.add(phone)
                return phone

    lines = [
        ("Main line", world.org.phone, world.me.email, "active", True),
        ("Customer support", fresh_phone(), heads["Support"], "active", True),
        ("Sales team", fresh_phone(), heads["Sales"], "active", True),
        ("Operations alerts", fresh_phone(), world.me.email, "active", True),
        ("Marketing campaigns", fresh_phone(), heads["Marketing"], "suspended", True),
        ("Fax and voice", fresh_phone(), world.me.email, "active", False),
    ]
    for label, phone, owner, status, sms in lines:
        number = OwnedNumber(
            id=state.new_id("num"), number=phone, label=label, owner=owner, status=status, sms_enabled=sms
        )
        state.numbers[number.id] = number
    numbers = list(state.numbers.values())
    relations = {c.id: c.relation for c in world.companies}
    field_staff = [p for p in world.employees if p.department in ("Operations", "Support")]
    for person in [*world.contacts[:40], *field_staff[:6]]:
        tags = [relations.get(person.company_id, "staff") if not person.is_employee else "field-staff"]
        tags += ["vip"] if rng.random() < 0.1 else []
        line = rng.choices(("mobile", "landline", "voip"), (16, 2, 1))[0]
        contact = Contact(
            id=state.new_id("con"),
            phone=person.phone,
            name=person.name,
            email=person.email if rng.random() < 0.85 else None,
            company=person.company,
            line_type=line,
            tags=tags,
        )
        state.contacts[contact.id] = contact
    contacts = list(state.contacts.values())
    mobiles = [c for c in contacts if c.line_type == "mobile"]

    def add(number: OwnedNumber, phone: str, body: str, inbound: bool, minutes_ago: int, **kw: object) -> SmsMessage:
        status = "received" if inbound else str(kw.get("status", "delivered"))
        segments = segments_of(body)
        message = SmsMessage(
            id=state.new_id("sms"),
            number_id=number.id,
            direction="inbound" if inbound else "outbound",
            from_number=phone if inbound else number.number,
            to_number=number.number if inbound else phone,
            body=body,
            status=status,
            segments=segments,
            price=0.0 if status in ("scheduled", "canceled") else round(segments * PRICE_PER_SEGMENT, 4),
            currency="USD",
            error_code={"undelivered": LANDLINE_ERROR, "failed": UNREACHABLE_ERROR}.get(status),
            created_at=world.now - dt.timedelta(minutes=minutes_ago),
            scheduled_for=kw.get("scheduled_for"),
        )
        state.messages[message.id] = message
        return message

    senders = numbers[:4]
    rng.shuffle(mobiles)
    chatty, quitters, others = mobiles[:16], mobiles[16:20], mobiles[20:]
    for contact in chatty:
        number = rng.choice(senders)
        product = rng.choice(world.products)
        po = f"PO-{rng.randint(10000, 99999)}"
        ago = rng.randint(600, 20000)
        first = contact.name.split()[0]
        add(number, contact.phone, f"Hi, any update on {po} ({product.name})? - {first}", True, ago)
        text = f"Hi {first}, {po} ships tomorrow. Tracking to follow. - {world.org.name}"
        add(number, contact.phone, text, False, ago - rng.randint(5, 240))
        if rng.random() < 0.4:
            add(number, contact.phone, "Great, thanks!", True, ago - rng.randint(250, 500))
    reminder = "Reminder: your appointment is tomorrow at 10:00."
    for contact in [c for c in contacts if c.line_type == "landline"][:3]:
        add(numbers[0], contact.phone, reminder, False, rng.randint(1000, 9000), status="undelivered")
    for index, contact in enumerate(quitters):
        ago = rng.randint(3000, 30000)
        add(numbers[2], contact.phone, f"Spring offer: 20% off {rng.choice(world.products).name}!", False, ago + 60)
        add(numbers[2], contact.phone, "STOP", True, ago)
        contact.opted_out, contact.opted_out_at = True, world.now - dt.timedelta(minutes=ago)
        if index == 0:
            add(numbers[2], contact.phone, "START", True, ago // 2)
    for index, contact in enumerate(rng.sample([*chatty, *others], 4)):
        when = world.now + dt.timedelta(days=rng.randint(1, 10), hours=rng.randint(0, 8))
        status = "canceled" if index == 0 else "scheduled"
        body = f"Reminder from {world.org.name}: your delivery window is {when:%A %d %B}."
        add(numbers[3], contact.phone, body, False, rng.randint(60, 3000), status=status, scheduled_for=when)
    for contact in others[:3]:
        ago = rng.randint(100, 4000)
        add(numbers[1], contact.phone, "Your support ticket has been updated.", False, ago, status="failed")
    return state


service = Service(
    "sms",
    version=1,
    category="communication",
    description="SMS gateway: send and schedule texts from the organisation's numbers, track delivery and opt-outs.",
    modelled_on="Twilio Programmable Messaging API (messages, scheduling, opt-outs)",
    state=SmsState,
    seed=seed,
    system_fields=("created_at",),  # opted_out_at is the outcome of opt_out
)


def _by_phone(state: SmsState, phone: str) -> Contact | None:
    return next((c for c in state.contacts.values() if c.phone == phone), None)


def _check_send(state: SmsState, number_id: str, to: str, body: str) -> OwnedNumber:
    number = require(state.numbers, number_id, "number")
    if segments_of(body) > MAX_SEGMENTS:
        raise BadRequest(f"argument 'body': {segments_of(body)} segments exceed the limit of {MAX_SEGMENTS}")
    if any(n.number == to for n in state.numbers.values()):
        raise BadRequest(f"argument 'to': {to!r} is one of the organisation's own numbers")
    if not number.sms_enabled:
        raise BadRequest(f"argument 'from_number_id': number {number_id!r} ({number.label}) cannot send SMS")
    if number.status != "active":
        raise Forbidden(f"number {number_id!r} ({number.label}) is {number.status} and cannot send")
    contact = _by_phone(state, to)
    if contact is not None and contact.opted_out:
        raise Forbidden(f"{to!r} ({contact.name}) opted out of messages; they must text START first")
    return number


def _outbound(state: SmsState, number: OwnedNumber, to: str, body: str, scheduled: dt.datetime | None) -> SmsMessage:
    contact = _by_phone(state, to)
    segments = segments_of(body)
    if scheduled is not None:
        status = "scheduled"
    elif contact is None:
        status = "sent"
    else:
        status = "undelivered" if contact.line_type == "landline" else "delivered"
    message = SmsMessage(
        id=state.new_id("sms"),
        number_id=number.id,
        direction="outbound",
        from_number=number.number,
        to_number=to,
        body=body,
        status=status,
        segments=segments,
        price=0.0 if scheduled else round(segments * PRICE_PER_SEGMENT, 4),
        currency="USD",
        error_code=LANDLINE_ERROR if status == "undelivered" else None,
        created_at=state.tick(),
        scheduled_for=scheduled,
    )
    state.messages[message.id] = message
    return message


@service.read(op="list", entity="number", collection="numbers", reads=("status", "label", "number"))
def list_numbers(
    state: SmsState,
    status: NumberStatus | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[OwnedNumber]:
    """List the phone numbers the organisation owns.

    Args:
        status: Only numbers with this status.
        query: Case-insensitive text to find in the label or number.
        offset: Number of numbers to skip.
        limit: Maximum number of numbers to return.
    """
    rows = [
        n
        for n in state.numbers.values()
        if (status is None or n.status == status) and (contains(n.label, query) or contains(n.number, query))
    ]
    return paginate(rows, offset, limit)


@service.read(
    op="list", entity="contact", collection="contacts", reads=("name", "email", "phone", "tags", "company", "opted_out")
)
def list_contacts(
    state: SmsState,
    query: Query | None = None,
    phone: PhoneNumber | None = None,
    tag: Tag | None = None,
    company: CompanyName | None = None,
    opted_out: Flag | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Contact]:
    """List SMS contacts by name, with optional filters.

    Args:
        query: Case-insensitive text to find in the name, email or phone.
        phone: Only the contact with this phone number.
        tag: Only contacts with this tag.
        company: Only contacts of this company.
        opted_out: Only contacts who opted out (true) or did not (false).
        offset: Number of contacts to skip.
        limit: Maximum number of contacts to return.
    """
    rows = [
        c
        for c in state.contacts.values()
        if (query is None or contains(c.name, query) or contains(c.email, query) or contains(c.phone, query))
        and (phone is None or c.phone == phone)
        and (tag is None or tag in c.tags)
        and (company is None or (c.company or "").lower() == company.lower())
        and (opted_out is None or c.opted_out == opted_out)
    ]
    return paginate(sorted(rows, key=lambda c: (c.name, c.id)), offset, limit)


@service.read(op="get", entity="contact", collection="contacts")
def get_contact(state: SmsState, contact_id: ContactId) -> Contact:
    """Get one contact.

    Args:
        contact_id: Id of the contact.
    """
    return require(state.contacts, contact_id, "contact")


@service.write(
    op="create",
    entity="contact",
    collection="contacts",
    sets=("phone", "name", "email", "company", "line_type", "tags"),
)
def create_contact(
    state: SmsState,
    phone: PhoneNumber,
    name: PersonName,
    email: EmailAddress | None = None,
    company: CompanyName | None = None,
    tags: list[Tag] | None = None,
) -> Contact:
    """Add a contact; a phone number may belong to one contact only.

    Args:
        phone: Phone number in E.164 form.
        name: Full name.
        email: Email address.
        company: Company name.
        tags: Labels such as customer or vip.
    """
    clash = _by_phone(state, phone)
    if clash is not None:
        raise Conflict(f"phone {phone!r} already belongs to contact {clash.id!r} ({clash.name})")
    if any(n.number == phone for n in state.numbers.values()):
        raise BadRequest(f"argument 'phone': {phone!r} is one of the organisation's own numbers")
    contact = Contact(
        id=state.new_id("con"),
        phone=phone,
        name=name,
        email=email,
        company=company,
        line_type="mobile",
        tags=list(dict.fromkeys(tags or [])),
    )
    state.tick()
    state.contacts[contact.id] = contact
    return contact


@service.write(op="update", entity="contact", collection="contacts", sets=("name", "email", "company", "tags"))
def update_contact(
    state: SmsState,
    contact_id: ContactId,
    name: PersonName | None = None,
    email: EmailAddress | None = None,
    company: CompanyName | None = None,
    tags: list[Tag] | None = None,
) -> Contact:
    """Change a contact's name, email, company or tags; omitted fields stay as they are.

    Args:
        contact_id: Id of the contact.
        name: New full name.
        email: New email address.
        company: New company name.
        tags: New labels (replace the old ones).
    """
    contact = require(state.contacts, contact_id, "contact")
    changes = {"name": name, "email": email, "company": company, "tags": tags}
    for key, value in changes.items():
        if value is not None:
            setattr(contact, key, value)
    state.tick()
    return contact


@service.write(op="delete", entity="contact", collection="contacts")
def delete_contact(state: SmsState, contact_id: ContactId) -> DeletedContact:
    """Delete a contact that has no scheduled messages and has not opted out.

    Args:
        contact_id: Id of the contact.
    """
    contact = require(state.contacts, contact_id, "contact")
    if contact.opted_out:
        raise Conflict(f"contact {contact_id!r} opted out; the opt-out record must be kept")
    pending = [m.id for m in state.messages.values() if m.to_number == contact.phone and m.status == "scheduled"]
    if pending:
        raise Conflict(f"contact {contact_id!r} has scheduled messages {pending!r}; cancel them first")
    del state.contacts[contact_id]
    state.tick()
    return DeletedContact(id=contact_id, deleted=True)


@service.read(
    op="list",
    entity="message",
    collection="messages",
    reads=("number_id", "from_number", "to_number", "direction", "status", "body"),
)
def list_messages(
    state: SmsState,
    number_id: NumberId | None = None,
    phone: PhoneNumber | None = None,
    direction: Direction | None = None,
    status: Status | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[SmsMessage]:
    """List messages, newest first, with optional filters.

    Args:
        number_id: Only messages through this owned number.
        phone: Only messages to or from this phone number.
        direction: Only inbound or only outbound messages.
        status: Only messages with this delivery status.
        query: Case-insensitive text to find in the body.
        offset: Number of messages to skip.
        limit: Maximum number of messages to return.
    """
    rows = [
        m
        for m in state.messages.values()
        if (number_id is None or m.number_id == number_id)
        and (phone is None or phone in (m.from_number, m.to_number))
        and (direction is None or m.direction == direction)
        and (status is None or m.status == status)
        and contains(m.body, query)
    ]
    return paginate(sorted(rows, key=lambda m: (m.created_at, m.id), reverse=True), offset, limit)


@service.read(op="get", entity="message", collection="messages")
def get_message(state: SmsState, message_id: MessageId) -> SmsMessage:
    """Get one message with its delivery status.

    Args:
        message_id: Id of the message.
    """
    return require(state.messages, message_id, "message")


@service.read(op="aggregate", entity="message", collection="messages", reads=("number_id", "from_number", "to_number"))
def list_conversations(
    state: SmsState,
    number_id: NumberId | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Conversation]:
    """List conversations (one per owned number and other party), most recent first.

    Args:
        number_id: Only conversations on this owned number.
        query: Case-insensitive text to find in the contact's name or phone.
        offset: Number of conversations to skip.
        limit: Maximum number of conversations to return.
    """
    threads: dict[tuple[str, str], list[SmsMessage]] = {}
    for m in sorted(state.messages.values(), key=lambda m: (m.created_at, m.id)):
        other = m.from_number if m.direction == "inbound" else m.to_number
        if number_id is None or m.number_id == number_id:
            threads.setdefault((m.number_id, other), []).append(m)
    rows = []
    for (owned, phone), messages in threads.items():
        contact, last = _by_phone(state, phone), messages[-1]
        if query is None or contains(phone, query) or (contact is not None and contains(contact.name, query)):
            rows.append(
                Conversation(
                    number_id=owned,
                    phone=phone,
                    contact_id=contact.id if contact else None,
                    contact_name=contact.name if contact else None,
                    messages=len(messages),
                    last_message_at=last.created_at,
                    last_message=last.body,
                    last_direction=last.direction,
                )
            )
    return paginate(sorted(rows, key=lambda c: (c.last_message_at, c.phone), reverse=True), offset, limit)


#: What sending a message sets on the message it stores (a send and a resend alike).
SENT_MESSAGE_FIELDS = (
    "number_id", "direction", "from_number", "to_number", "body", "status", "segments", "price", "currency",
    "error_code",
)  # fmt: skip


@service.write(op="send", entity="message", collection="messages", sets=SENT_MESSAGE_FIELDS)
def send_message(state: SmsState, from_number_id: NumberId, to: PhoneNumber, body: MessageText) -> SmsMessage:
    """Send an SMS now from one of the organisation's numbers.

    Args:
        from_number_id: Id of the owned number to send from.
        to: Recipient phone number.
        body: Message text (at most 10 segments).
    """
    number = _check_send(state, from_number_id, to, body)
    return _outbound(state, number, to, body, None)


@service.write(
    op="send",
    entity="message",
    collection="messages",
    sets=(
        "number_id",
        "direction",
        "from_number",
        "to_number",
        "body",
        "status",
        "segments",
        "price",
        "currency",
        "scheduled_for",
    ),
)
def schedule_message(
    state: SmsState, from_number_id: NumberId, to: PhoneNumber, body: MessageText, send_at: DateTime
) -> SmsMessage:
    """Schedule an SMS for later (15 minutes to 35 days ahead).

    Args:
        from_number_id: Id of the owned number to send from.
        to: Recipient phone number.
        body: Message text (at most 10 segments).
        send_at: When to send it.
    """
    if send_at.tzinfo is None or send_at.utcoffset() is None:
        raise BadRequest("argument 'send_at': a time zone offset is required")
    if not 2000 <= send_at.astimezone(dt.UTC).year <= 2100:
        raise BadRequest(f"argument 'send_at': {send_at.isoformat()!r} is out of range")
    ahead = send_at - state.clock
    if not dt.timedelta(minutes=15) <= ahead <= dt.timedelta(days=35):
        raise BadRequest(f"argument 'send_at': {send_at.isoformat()!r} is not 15 minutes to 35 days ahead")
    number = _check_send(state, from_number_id, to, body)
    return _outbound(state, number, to, body, send_at.astimezone(dt.UTC))


@service.write(op="transition", entity="message", collection="messages", sets=("status",))
def cancel_scheduled_message(state: SmsState, message_id: MessageId) -> SmsMessage:
    """Cancel a scheduled message before it is sent.

    Args:
        message_id: Id of the scheduled message.
    """
    message = require(state.messages, message_id, "message")
    if message.status != "scheduled":
        raise Conflict(f"message {message_id!r} is {message.status}, only scheduled messages can be cancelled")
    message.status = "canceled"
    state.tick()
    return message


@service.write(op="send", entity="message", collection="messages", sets=SENT_MESSAGE_FIELDS)
def resend_message(state: SmsState, message_id: MessageId) -> SmsMessage:
    """Send a failed or undelivered outbound message again, as a new message.

    Args:
        message_id: Id of the failed or undelivered message.
    """
    original = require(state.messages, message_id, "message")
    if original.direction != "outbound" or original.status not in ("failed", "undelivered"):
        raise Conflict(f"message {message_id!r} is {original.direction} and {original.status}; nothing to resend")
    number = _check_send(state, original.number_id, original.to_number, original.body)
    return _outbound(state, number, original.to_number, original.body, None)


def _contact_by_phone(state: SmsState, phone: str) -> Contact:
    contact = _by_phone(state, phone)
    if contact is None:
        raise NotFound(f"contact with phone {phone!r} not found")
    return contact


@service.write(
    op="transition", entity="contact", collection="contacts", reads=("phone",), sets=("opted_out", "opted_out_at")
)
def opt_out(state: SmsState, phone: PhoneNumber) -> Contact:
    """Record that a contact asked to receive no more messages.

    Args:
        phone: Phone number of the contact.
    """
    contact = _contact_by_phone(state, phone)
    if contact.opted_out:
        raise Conflict(f"contact {contact.id!r} already opted out")
    contact.opted_out, contact.opted_out_at = True, state.tick()
    return contact


@service.write(
    op="transition", entity="contact", collection="contacts", reads=("phone",), sets=("opted_out", "opted_out_at")
)
def opt_in(state: SmsState, phone: PhoneNumber) -> Contact:
    """Lift an opt-out; allowed only after the contact texted START (or UNSTOP, YES) back.

    Args:
        phone: Phone number of the contact.
    """
    contact = _contact_by_phone(state, phone)
    if not contact.opted_out or contact.opted_out_at is None:
        raise Conflict(f"contact {contact.id!r} has not opted out")
    since = contact.opted_out_at
    restarted = any(
        m.direction == "inbound"
        and m.from_number == phone
        and m.created_at > since
        and m.body.strip().lower() in START_WORDS
        for m in state.messages.values()
    )
    if not restarted:
        raise Forbidden(f"{phone!r} has not texted START since opting out; only the recipient can opt back in")
    contact.opted_out, contact.opted_out_at = False, None
    state.tick()
    return contact
