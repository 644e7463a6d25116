"""Email: the user's mailbox — folders, threads, labels, drafts, send, reply and forward.

Tools: list_messages, get_message, get_thread, list_labels, send_message, reply_to_message,
forward_message, create_draft, update_draft, send_draft, delete_draft, mark_read,
add_label, remove_label, move_message, delete_message.
State: messages and drafts by id; the mailbox owner's address.
Seed: about 45 messages for the population's user ("me"): customer requests quoting order
amounts and PO numbers, meeting requests from colleagues, vendor invoices, newsletters,
a re-sent near-duplicate and stale archived threads; a few sent messages and two drafts.
Rules: messages can only be sent to syntactically valid addresses; a message in the trash is
deleted for good by ``delete_message``; a sent draft disappears from the drafts.
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
    Count,
    DateTime,
    DocumentText,
    EmailAddress,
    FileName,
    Flag,
    Limit,
    Offset,
    PersonName,
    Query,
    Tag,
    Title,
    ident,
    sem,
)

MessageId = Annotated[str, ident("email", "message")]
ThreadId = Annotated[str, ident("email", "thread")]
DraftId = Annotated[str, ident("email", "draft")]
Folder = Annotated[Literal["inbox", "sent", "archive", "trash"], sem("email.folder", "Mailbox folder.")]


class Message(Record):
    id: MessageId
    thread_id: ThreadId
    folder: Folder
    from_address: EmailAddress = Field(description="Sender address.", json_schema_extra={ROLE_KEY: "sender"})
    from_name: PersonName = Field(description="Sender display name.", json_schema_extra={ROLE_KEY: "sender"})
    to: list[EmailAddress] = Field(description="Recipient addresses.", json_schema_extra={ROLE_KEY: "recipient"})
    cc: list[EmailAddress] = Field(
        default_factory=list, description="Carbon-copy addresses.", json_schema_extra={ROLE_KEY: "recipient"}
    )
    subject: Title
    body: DocumentText
    sent_at: Annotated[DateTime, role("event")]
    read: Flag = Field(description="Whether the user has read the message.")
    labels: list[Tag] = Field(default_factory=list, description="Labels on the message.")
    attachments: list[FileName] = Field(default_factory=list, description="Names of attached files.")


class Draft(Record):
    id: DraftId
    to: list[EmailAddress] = Field(description="Recipient addresses.", json_schema_extra={ROLE_KEY: "recipient"})
    cc: list[EmailAddress] = Field(
        default_factory=list, description="Carbon-copy addresses.", json_schema_extra={ROLE_KEY: "recipient"}
    )
    subject: Title
    body: DocumentText
    reply_to: MessageId | None = Field(default=None, description="Message this draft answers, if any.")
    updated_at: DateTime


class LabelCount(Record):
    label: Tag
    messages: Count = Field(description="Messages carrying the label.")


class Deleted(Record):
    id: MessageId | DraftId = Field(description="Id of the deleted record.")
    deleted: Flag = Field(description="Always true.")


class EmailState(ServiceState):
    owner: str = ""
    owner_name: str = ""
    messages: dict[str, Message] = {}
    drafts: dict[str, Draft] = {}


def _sorted(messages: list[Message]) -> list[Message]:
    return sorted(messages, key=lambda m: (m.sent_at, m.id), reverse=True)


def seed(rng: random.Random, world: Population) -> EmailState:
    me = world.me
    state = EmailState(owner=me.email, owner_name=me.name, clock=world.now)
    colleagues = [p for p in world.employees if p.id != me.id]

    def add(
        sender_email: str, sender: str, to: list[str], subject: str, body: str, days_ago: float, **kw: object
    ) -> Message:
        thread = kw.pop("thread_id", None) or state.new_id("thr")
        message = Message(
            id=state.new_id("msg"),
            thread_id=str(thread),
            folder=kw.pop("folder", "inbox"),
            from_address=sender_email,
            from_name=sender,
            to=to,
            subject=subject,
            body=body,
            sent_at=world.now - dt.timedelta(minutes=int(days_ago * 1440) + rng.randint(0, 600)),
            read=bool(kw.pop("read", rng.random() < 0.5)),
            labels=list(kw.pop("labels", [])),  # type: ignore[call-overload]
            attachments=list(kw.pop("attachments", [])),  # type: ignore[call-overload]
        )
        state.messages[message.id] = message
        return message

    for contact in rng.sample(list(world.contacts), 14):
        company = world.company(contact.company_id)
        product = rng.choice(world.products)
        qty = rng.randint(2, 40)
        po = f"PO-{rng.randint(10000, 99999)}"
        kind = rng.choice(("order", "invoice", "meeting", "support"))
        if kind == "order":
            subject = f"Order request: {qty} x {product.name}"
            body = (
                f"Hi {me.first_name},\n\nWe would like to order {qty} units of {product.name} ({product.sku}) "
                f"under purchase order {po}. Please confirm the total of {qty * product.unit_price:.2f} "
                f"{company.currency} and the delivery date.\n\nBest,\n{contact.name}\n{company.name}"
            )
            labels = ["orders"]
        elif kind == "invoice":
            amount = round(rng.uniform(300, 9000), 2)
            subject = f"Invoice {po} from {company.name}"
            body = (
                f"Hello,\n\nPlease find attached our invoice {po} for {amount:.2f} {company.currency}, "
                f"due in 30 days. Bank details are on the invoice.\n\nRegards,\n{contact.name}"
            )
            labels = ["finance"]
        elif kind == "meeting":
            subject = f"Meeting request: {company.name} quarterly review"
            body = (
                f"Hi {me.first_name},\n\nCould we meet next week to review the account? I am free "
                f"Tuesday or Thursday afternoon.\n\nThanks,\n{contact.name} ({contact.phone})"
            )
            labels = []
        else:
            subject = f"Problem with {product.name}"
            body = (
                f"Hi,\n\nOur {product.name} ({product.sku}) stopped working after two days. "
                f"Can you open a ticket and advise?\n\n{contact.name}, {contact.title} at {company.name}"
            )
            labels = ["support"]
        attachments = [f"{po}.pdf"] if kind == "invoice" else []
        first = add(
            contact.email,
            contact.name,
            [me.email],
            subject,
            body,
            rng.uniform(0.1, 20),
            labels=labels,
            attachments=attachments,
        )
        if rng.random() < 0.25:  # a re-sent near-duplicate in the same thread
            add(
                contact.email,
                contact.name,
                [me.email],
                f"Re: {subject}",
                body + "\n\n(resending in case this got lost)",
                rng.uniform(0.05, 0.1),
                thread_id=first.thread_id,
                labels=labels,
                read=False,
            )

    for colleague in rng.sample(colleagues, 10):
        topic = rng.choice(("budget", "offsite", "hiring", "vendor", "roadmap"))
        add(
            colleague.email,
            colleague.name,
            [me.email],
            f"Quick question about the {topic}",
            f"Hi {me.first_name}, do you have five minutes today to talk about the {topic}? — {colleague.first_name}",
            rng.uniform(0.2, 10),
        )
    for _ in range(6):  # stale archived mail
        person = rng.choice(world.people)
        add(
            person.email,
            person.name,
            [me.email],
            f"Old thread: {rng.choice(('Q3 plan', 'holiday cover', 'renewal'))}",
            "Archived for reference.",
            rng.uniform(60, 200),
            folder="archive",
            read=True,
        )
    for _ in range(4):
        add(
            "news@industry-digest.com",
            "Industry Digest",
            [me.email],
            "This week in operations",
            "Top stories of the week. Unsubscribe any time.",
            rng.uniform(1, 30),
            labels=["newsletter"],
        )
    for colleague in rng.sample(colleagues, 4):
        add(
            me.email,
            me.name,
            [colleague.email],
            f"Follow-up: {rng.choice(('supplier review', 'office move'))}",
            f"Hi {colleague.first_name}, following up on our chat. — {me.first_name}",
            rng.uniform(1, 15),
            folder="sent",
            read=True,
        )
    for contact in rng.sample(list(world.contacts), 2):
        draft = Draft(
            id=state.new_id("dft"),
            to=[contact.email],
            subject=f"Proposal for {contact.company}",
            body="Draft — numbers to be confirmed.",
            updated_at=world.now - dt.timedelta(days=1),
        )
        state.drafts[draft.id] = draft
    return state


service = Service(
    "email",
    version=1,
    category="communication",
    description="The user's mailbox: read, search, label, send, reply to and forward email.",
    modelled_on="Gmail API (users.messages, threads, labels, drafts)",
    state=EmailState,
    seed=seed,
    system_fields=("updated_at",),  # a message's sent_at is the outcome of sending it
)


@service.read(
    op="list",
    entity="message",
    collection="messages",
    reads=("folder", "from_address", "to", "cc", "labels", "subject", "body", "read"),
)
def list_messages(
    state: EmailState,
    folder: Folder | None = None,
    from_address: EmailAddress | None = None,
    to_address: EmailAddress | None = None,
    label: Tag | None = None,
    query: Query | None = None,
    unread_only: Flag = False,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Message]:
    """List messages, newest first, with optional filters.

    Args:
        folder: Only messages in this folder.
        from_address: Only messages sent by this address.
        to_address: Only messages sent to (or copied to) this address.
        label: Only messages carrying this label.
        query: Case-insensitive text to find in subject or body.
        unread_only: Only unread messages.
        offset: Number of messages to skip.
        limit: Maximum number of messages to return.
    """
    rows = [
        m
        for m in state.messages.values()
        if (folder is None or m.folder == folder)
        and (from_address is None or m.from_address.lower() == from_address.lower())
        and (to_address is None or to_address.lower() in [a.lower() for a in m.to + m.cc])
        and (label is None or label in m.labels)
        and (query is None or contains(m.subject, query) or contains(m.body, query))
        and (not unread_only or not m.read)
    ]
    return paginate(_sorted(rows), offset, limit)


@service.read(op="get", entity="message", collection="messages")
def get_message(state: EmailState, message_id: MessageId) -> Message:
    """Get one message with its full body.

    Args:
        message_id: Id of the message.
    """
    return require(state.messages, message_id, "message")


@service.read(op="list", entity="message", collection="messages", reads=("thread_id",))
def get_thread(state: EmailState, thread_id: ThreadId) -> list[Message]:
    """Get every message of a thread, oldest first.

    Args:
        thread_id: Id of the thread.
    """
    rows = sorted((m for m in state.messages.values() if m.thread_id == thread_id), key=lambda m: (m.sent_at, m.id))
    if not rows:
        raise NotFound(f"thread {thread_id!r} not found")
    return rows


@service.read(op="aggregate", entity="message", collection="messages", reads=("labels",))
def list_labels(state: EmailState) -> list[LabelCount]:
    """List the labels in use with how many messages carry each."""
    counts: dict[str, int] = {}
    for message in state.messages.values():
        for label in message.labels:
            counts[label] = counts.get(label, 0) + 1
    return [LabelCount(label=k, messages=v) for k, v in sorted(counts.items())]


def _send(state: EmailState, to: list[str], cc: list[str], subject: str, body: str, thread_id: str | None) -> Message:
    now = state.tick()
    message = Message(
        id=state.new_id("msg"),
        thread_id=thread_id or state.new_id("thr"),
        folder="sent",
        from_address=state.owner,
        from_name=state.owner_name,
        to=to,
        cc=cc,
        subject=subject,
        body=body,
        sent_at=now,
        read=True,
    )
    state.messages[message.id] = message
    return message


def _check_recipients(to: list[str]) -> None:
    if not to:
        raise BadRequest("argument 'to': at least one recipient is required")


@service.write(
    op="send",
    entity="message",
    collection="messages",
    sets=("thread_id", "folder", "from_address", "from_name", "to", "cc", "subject", "body", "sent_at", "read"),
)
def send_message(
    state: EmailState,
    to: list[EmailAddress],
    subject: Title,
    body: DocumentText,
    cc: list[EmailAddress] | None = None,
) -> Message:
    """Send a new message from the user's mailbox.

    Args:
        to: Recipient addresses (at least one).
        subject: Subject line.
        body: Message body.
        cc: Carbon-copy addresses.
    """
    _check_recipients(to)
    return _send(state, to, cc or [], subject, body, None)


@service.write(
    op="send",
    entity="message",
    collection="messages",
    sets=("thread_id", "folder", "from_address", "from_name", "to", "cc", "subject", "body", "sent_at", "read"),
)
def reply_to_message(state: EmailState, message_id: MessageId, body: DocumentText, reply_all: Flag = False) -> Message:
    """Reply to a message in its thread.

    Args:
        message_id: Id of the message to answer.
        body: Reply text.
        reply_all: Also reply to every other recipient of the original.
    """
    original = require(state.messages, message_id, "message")
    to = [original.from_address] if original.from_address != state.owner else list(original.to)
    cc = [a for a in original.to + original.cc if a not in to and a != state.owner] if reply_all else []
    subject = original.subject if original.subject.startswith("Re:") else f"Re: {original.subject}"
    return _send(state, to, cc, subject, body, original.thread_id)


@service.write(
    op="send",
    entity="message",
    collection="messages",
    sets=("thread_id", "folder", "from_address", "from_name", "to", "cc", "subject", "body", "sent_at", "read"),
)
def forward_message(
    state: EmailState, message_id: MessageId, to: list[EmailAddress], note: DocumentText = ""
) -> Message:
    """Forward a message, with an optional note above the original.

    Args:
        message_id: Id of the message to forward.
        to: Recipient addresses (at least one).
        note: Text written above the forwarded message.
    """
    original = require(state.messages, message_id, "message")
    _check_recipients(to)
    body = f"{note}\n\n---------- Forwarded message ----------\nFrom: {original.from_name} <{original.from_address}>\n"
    body += f"Subject: {original.subject}\n\n{original.body}"
    return _send(state, to, [], f"Fwd: {original.subject}", body.lstrip(), None)


@service.write(op="create", entity="draft", collection="drafts", sets=("to", "cc", "subject", "body", "reply_to"))
def create_draft(
    state: EmailState,
    to: list[EmailAddress],
    subject: Title,
    body: DocumentText,
    cc: list[EmailAddress] | None = None,
    reply_to: MessageId | None = None,
) -> Draft:
    """Save a draft without sending it.

    Args:
        to: Recipient addresses.
        subject: Subject line.
        body: Draft body.
        cc: Carbon-copy addresses.
        reply_to: Id of the message this draft answers.
    """
    if reply_to is not None:
        require(state.messages, reply_to, "message")
    draft = Draft(
        id=state.new_id("dft"),
        to=to,
        cc=cc or [],
        subject=subject,
        body=body,
        reply_to=reply_to,
        updated_at=state.tick(),
    )
    state.drafts[draft.id] = draft
    return draft


@service.write(op="update", entity="draft", collection="drafts", sets=("to", "subject", "body"))
def update_draft(
    state: EmailState,
    draft_id: DraftId,
    to: list[EmailAddress] | None = None,
    subject: Title | None = None,
    body: DocumentText | None = None,
) -> Draft:
    """Change the recipients, subject or body of a draft; omitted fields stay as they are.

    Args:
        draft_id: Id of the draft.
        to: New recipient addresses.
        subject: New subject line.
        body: New body.
    """
    draft = require(state.drafts, draft_id, "draft")
    update = {k: v for k, v in {"to": to, "subject": subject, "body": body}.items() if v is not None}
    updated = draft.model_copy(update={**update, "updated_at": state.tick()})
    state.drafts[draft_id] = updated
    return updated


@service.write(
    op="send",
    entity="message",
    collection="messages",
    sets=("thread_id", "folder", "from_address", "from_name", "to", "cc", "subject", "body", "sent_at", "read"),
)
def send_draft(state: EmailState, draft_id: DraftId) -> Message:
    """Send a draft; it leaves the drafts and appears in the sent folder.

    Args:
        draft_id: Id of the draft.
    """
    draft = require(state.drafts, draft_id, "draft")
    if not draft.to:
        raise BadRequest(f"draft {draft_id!r} has no recipients")
    thread = state.messages[draft.reply_to].thread_id if draft.reply_to in state.messages else None
    del state.drafts[draft_id]
    return _send(state, draft.to, draft.cc, draft.subject, draft.body, thread)


@service.write(op="delete", entity="draft", collection="drafts")
def delete_draft(state: EmailState, draft_id: DraftId) -> Deleted:
    """Discard a draft.

    Args:
        draft_id: Id of the draft.
    """
    require(state.drafts, draft_id, "draft")
    del state.drafts[draft_id]
    return Deleted(id=draft_id, deleted=True)


@service.write(op="update", entity="message", collection="messages", sets=("read",))
def mark_read(state: EmailState, message_id: MessageId, read: Flag = True) -> Message:
    """Mark a message as read or unread.

    Args:
        message_id: Id of the message.
        read: True for read, false for unread.
    """
    message = require(state.messages, message_id, "message")
    message.read = read
    return message


@service.write(op="append", entity="message", collection="messages", sets=("labels",))
def add_label(state: EmailState, message_id: MessageId, label: Tag) -> Message:
    """Add a label to a message (adding a label it already has is a conflict).

    Args:
        message_id: Id of the message.
        label: Label to add.
    """
    message = require(state.messages, message_id, "message")
    if label in message.labels:
        raise Conflict(f"message {message_id!r} already has label {label!r}")
    message.labels.append(label)
    return message


@service.write(op="remove", entity="message", collection="messages", sets=("labels",))
def remove_label(state: EmailState, message_id: MessageId, label: Tag) -> Message:
    """Remove a label from a message.

    Args:
        message_id: Id of the message.
        label: Label to remove.
    """
    message = require(state.messages, message_id, "message")
    if label not in message.labels:
        raise BadRequest(f"message {message_id!r} has no label {label!r}")
    message.labels.remove(label)
    return message


@service.write(op="update", entity="message", collection="messages", sets=("folder",))
def move_message(state: EmailState, message_id: MessageId, folder: Folder) -> Message:
    """Move a message to another folder (archive it, trash it or bring it back to the inbox).

    Args:
        message_id: Id of the message.
        folder: Destination folder; only the user's own messages can go to sent.
    """
    message = require(state.messages, message_id, "message")
    if folder == "sent" and message.from_address != state.owner:
        raise BadRequest(f"message {message_id!r} was not sent by the user and cannot move to 'sent'")
    message.folder = folder
    return message


@service.write(op="delete", entity="message", collection="messages")
def delete_message(state: EmailState, message_id: MessageId) -> Deleted:
    """Delete a message that is already in the trash (move it there first).

    Args:
        message_id: Id of the message.
    """
    message = require(state.messages, message_id, "message")
    if message.folder != "trash":
        raise Conflict(f"message {message_id!r} is in {message.folder!r}; move it to 'trash' before deleting")
    del state.messages[message_id]
    return Deleted(id=message_id, deleted=True)
