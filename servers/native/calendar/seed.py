"""Calendar seed: meeting rooms in two buildings and about 50 events around the population's now."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import WORK_END, WORK_START, Attendee, CalendarState, Event, Room, room_clash


def seed(rng: random.Random, world: Population) -> CalendarState:
    me = world.me
    state = CalendarState(owner=me.email, clock=world.now)
    hq, annex = f"{world.org.city} HQ", f"{world.org.city} Annex"
    names = ["Everest", "Denali", "Fuji", "Kilimanjaro", "Matterhorn", "Olympus", "Rainier", "Whitney"]
    specs = [(n, hq) for n in names] + [("Everest", annex), ("Everest 2", hq), ("Fuji Lounge", annex)]
    specs += [(n, annex) for n in ("Vinson", "Aconcagua", "Shasta", "Hood")]
    specs += [(f"Booth {i}", hq) for i in (1, 2, 3, 4, 5)]
    extras = ["video", "whiteboard", "projector", "wheelchair_access"]
    for index, (name, building) in enumerate(specs):
        booth = name.startswith("Booth")
        room = Room(
            id=state.new_id("room"),
            name=name,
            building=building,
            capacity=2 if booth else rng.choice((4, 6, 8, 10, 12, 20)),
            features=["phone"] if booth else sorted(rng.sample(extras, 2)),
            in_service=index not in (6, 14),
        )
        state.rooms[room.id] = room
    rooms = list(state.rooms.values())
    colleagues = [p for p in world.employees if p.id != me.id]
    weekdays = [d for d in range(-14, 22) if (world.now + dt.timedelta(days=d)).weekday() < 5]
    midnight = world.now.replace(hour=0, minute=0)
    answers = ("accepted", "accepted", "tentative", "declined", "needs_action")

    def add(title: str, organizer: str, invitees: list[str], when: tuple[int, int, int], **kw: str) -> Event:
        day, at, minutes = when  # at: minutes after midnight
        start = midnight + dt.timedelta(days=day, minutes=at)
        end = start + dt.timedelta(minutes=minutes)
        fits = [r for r in rooms if r.in_service and r.capacity > len(invitees)]
        free = [r for r in fits if "location" not in kw and not room_clash(state, r.id, start, end)]
        room = rng.choice(free) if free else None
        past = end <= world.now
        attendees = [
            Attendee(email=e, response=rng.choice(answers[:2] + answers[3:4] if past else answers))
            for e in dict.fromkeys(invitees)
            if e != organizer
        ]
        event = Event(
            id=state.new_id("evt"),
            title=title,
            description=kw.get("description", ""),
            start=start,
            end=end,
            organizer=organizer,
            attendees=attendees,
            room_id=room.id if room else None,
            location=room.name if room else kw.get("location"),
            status="cancelled" if kw.get("cancelled") else "confirmed",
            series_id=kw.get("series_id"),
            recurrence="weekly" if "series_id" in kw else "none",
            updated_at=min(start, world.now) - dt.timedelta(days=rng.randint(1, 10)),
        )
        state.events[event.id] = event
        return event

    ops, sales, finance = (
        [p.email for p in world.employees if p.department == d] for d in ("Operations", "Sales", "Finance")
    )
    series = [
        ("Operations weekly sync", me.email, ops, 10),
        ("Sales pipeline review", sales[0], [*sales, me.email], 14),
        ("Finance close check-in", finance[0], [*finance[:3], me.email], 11),
        ("Leadership staff meeting", world.employees[0].email, [p.email for p in world.employees[:8]], 15),
    ]

    def slot(latest: int = WORK_END - 1) -> int:
        return rng.randint(WORK_START * 2, latest * 2) * 30

    for title, organizer, invitees, hour in series:
        series_id, first = state.new_id("ser"), rng.choice(weekdays[:5])
        for week in range(5):
            add(title, organizer, invitees, (first + 7 * week, hour * 60, 60), series_id=series_id)
    for colleague in rng.sample(colleagues, 5):
        when = (rng.choice(weekdays), slot(), 30)
        link = f"https://meet.example.com/{colleague.username.replace('.', '-')}"
        add(f"1:1 {me.first_name} / {colleague.first_name}", me.email, [colleague.email], when, location=link)
    kinds = ("quarterly review", "renewal call", "onboarding kickoff", "pricing discussion")
    for contact in rng.sample(list(world.contacts), 10):
        host = rng.choice([me, *rng.sample(colleagues, 2)])
        when = (rng.choice(weekdays), slot(WORK_END - 2), rng.choice((30, 45, 60)))
        about = f"Call with {contact.name} ({contact.title}, {contact.company})."
        link = f"https://meet.example.com/{contact.username.replace('.', '-')}"
        title = f"{contact.company} {rng.choice(kinds)}"
        add(title, host.email, [contact.email, me.email], when, location=link, description=about)
    topics = (
        "Q2 budget review|Q2 budget review - prep|Office move planning|Vendor review: cleaning|Hiring plan|"
        "Vendor review: catering|Hiring plan (follow-up)|Security training|Quarterly business review|"
        "Quarterly business review dry run|Inventory count|Offsite planning|Old roadmap review|Team lunch"
    )
    for topic in topics.split("|"):
        host = rng.choice(colleagues) if rng.random() < 0.8 else me
        invitees = [p.email for p in rng.sample(colleagues, rng.randint(2, 6))]
        invitees += [me.email] if rng.random() < 0.75 else []
        when = (rng.choice(weekdays), slot(WORK_END - 2), rng.choice((30, 60, 90)))
        cancelled = "yes" if rng.random() < 0.25 else ""
        add(topic, host.email, invitees, when, description=f"Agenda: {topic}.", cancelled=cancelled)
    return state
