"""Chat service: the seed state (users, channels, messages, threads, reactions, pins)."""

from __future__ import annotations

import datetime as dt
import random
import re

from servers.population import Population

from .models import GENERAL, Channel, ChatState, ChatUser, Message, Reaction


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


def seed(rng: random.Random, world: Population) -> ChatState:
    me = world.me
    state = ChatState(me=me.username, clock=world.now)
    for person in world.employees:
        user = ChatUser(
            username=person.username,
            name=person.name,
            email=person.email,
            title=person.title,
            department=person.department,
            company=person.company,
            account_type="member",
        )
        state.users[user.username] = user
    customers = [c for c in world.companies if c.relation == "customer"][:2]
    guests = [p for c in customers for p in world.contacts_of(c.id)[:2]]
    for index, person in enumerate([*guests, rng.choice(world.contacts)]):
        kind = "deactivated" if index == len(guests) else "guest"
        state.users[person.username] = ChatUser(
            username=person.username,
            name=person.name,
            email=person.email,
            title=person.title,
            department="External",
            company=person.company,
            account_type=kind,
        )
    staff = [p.username for p in world.employees]
    colleagues = [p for p in world.employees if p.id != me.id]
    heads = [p.username for p in world.employees if p.manager_id is None]

    def channel(name: str | None, kind: str, members: list[str], topic: str = "", archived: bool = False) -> Channel:
        created = world.now - dt.timedelta(days=rng.randint(30, 400), minutes=rng.randint(0, 1439))
        new = Channel(
            id=state.new_id("ch"),
            name=name,
            kind=kind,
            topic=topic,
            members=list(dict.fromkeys(members)),
            created_by=members[0],
            created_at=created,
            archived=archived,
        )
        state.channels[new.id] = new
        return new

    def post(ch: Channel, author: str, text: str, days: float, parent: Message | None = None) -> Message:
        when = world.now - dt.timedelta(minutes=int(days * 1440) + rng.randint(1, 300))
        if parent is not None:
            when = parent.posted_at + dt.timedelta(minutes=rng.randint(2, 90))
            parent.reply_count += 1
        message = Message(
            id=state.new_id("msg"),
            channel_id=ch.id,
            author=author,
            text=text,
            posted_at=when,
            thread_id=parent.id if parent else None,
        )
        if rng.random() < 0.3:
            fans = rng.sample([m for m in ch.members if m != author] or [author], 1)
            message.reactions.append(Reaction(emoji=rng.choice(("thumbsup", "eyes", "white_check_mark")), users=fans))
        state.messages[message.id] = message
        return message

    general = channel(GENERAL, "public", [heads[0], *staff], "Company-wide announcements")
    random_ch = channel("random", "public", [staff[1], *rng.sample(staff, 20)], "Watercooler")
    depts: dict[str, Channel] = {}
    for dept in sorted({p.department for p in world.employees}):
        members = [p.username for p in world.employees if p.department == dept]
        depts[dept] = channel(dept.lower(), "public", [*members, *rng.sample(staff, 2)], f"{dept} team")
    projects = [
        ("proj-atlas", "Atlas CRM migration", False),
        ("proj-atlas-launch", "Atlas go-live checklist", False),
        ("office-move", "Move to the new office in May", False),
        ("office-move-2025", "Last year's office move", True),
        ("vendor-onboarding", "Onboarding new suppliers", False),
        ("incident-2026-02", "Checkout outage postmortem", True),
        ("q3-offsite-2025", "Q3 offsite logistics", True),
    ]
    for name, topic, archived in projects:
        members = rng.sample(staff, rng.randint(5, 10)) + ([me.username] if rng.random() < 0.7 else [])
        ch = channel(name, "public", members, topic, archived)
        for _ in range(rng.randint(1, 2)):
            days = rng.uniform(60, 200) if archived else rng.uniform(1, 40)
            update = rng.choice(
                ("Notes from today's sync are in the doc.", "Blocked on vendor feedback.", "Next step due Friday.")
            )
            post(ch, rng.choice(ch.members), f"{topic}: {update}", days)
    leadership = channel("leadership", "private", heads, "Department heads only")
    hiring = channel("hiring-committee", "private", [p for p in rng.sample(staff, 6) if p != me.username])
    channel("people-confidential", "private", [p.username for p in world.employees if p.department == "People"])
    shared = []
    for company in customers:
        contacts = [p.username for p in guests if p.company == company.name]
        account = rng.sample(staff, 2)
        shared.append(channel(f"ext-{_slug(company.name)}", "private", [me.username, *account, *contacts]))
    dms = [channel(None, "direct", [me.username, p.username]) for p in rng.sample(colleagues, 4)]

    product = rng.choice(world.products)
    post(general, heads[0], "Reminder: expense reports for February are due Friday.", 6)
    post(general, heads[4], f"Welcome to our new {rng.choice(colleagues).title}s joining this week!", 3)
    notice = post(general, me.username, "The office will be closed on Monday for maintenance.", 2)
    notice.pinned = True
    for text in ("Who left a blue umbrella in the kitchen?", "Coffee machine on 3 is fixed.", "Lunch and learn at 12!"):
        post(random_ch, rng.choice(random_ch.members), text, rng.uniform(0.5, 9))
    for dept, ch in depts.items():
        members = [m for m in ch.members if m in state.users]
        for _ in range(rng.randint(1, 2)):
            author = rng.choice(members)
            contact = rng.choice(world.contacts)
            po = f"PO-{rng.randint(10000, 99999)}"
            text = rng.choice(
                (
                    f"{contact.company} asked about {po} for {rng.randint(2, 30)} x {product.name} ({product.sku}).",
                    f"Can someone check the status of {po}? {contact.name} is waiting on it.",
                    f"{dept} weekly numbers are in the shared drive.",
                    f"Heads up: {contact.name} from {contact.company} will call this afternoon.",
                )
            )
            top = post(ch, author, text, rng.uniform(0.1, 12))
            for _ in range(rng.choice((0, 0, 1, 2))):
                post(ch, rng.choice(members), rng.choice(("On it.", "Done, see the ticket.", "Thanks!")), 0, top)
            if rng.random() < 0.15:
                top.pinned = True
    post(leadership, heads[0], "Budget freeze for Q2 travel; exceptions need CFO sign-off.", 4)
    post(leadership, me.username, "Noted. Operations will postpone the offsite.", 3.9)
    post(hiring, hiring.members[0], "Shortlist for the Account Executive role is in the tracker.", 5)
    for ch in shared:
        guest = next(m for m in ch.members if state.users[m].account_type == "guest")
        ask = post(ch, guest, f"Could you confirm the delivery date for {product.name} ({product.sku})?", 1.5)
        post(ch, me.username, "Checking with the warehouse, back to you today.", 0, ask)
    for dm in dms:
        other = dm.members[1]
        post(dm, other, rng.choice(("Got a minute?", "Can you review my expense report?", "Lunch today?")), 1)
        post(dm, me.username, rng.choice(("Sure, ping me at 3.", "Will do.", "Yes!")), 0.9)
    return state
