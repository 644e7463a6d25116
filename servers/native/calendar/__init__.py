"""Calendar: the user's work calendar — events, attendees, meeting rooms, free/busy and RSVPs.

Tools: list_events, get_event, list_rooms, find_free_rooms, free_busy, find_meeting_times,
create_event, update_event, reschedule_event, change_room, add_attendees, remove_attendee,
respond_to_event, cancel_event.
State: events and meeting rooms by id; the calendar owner's address.
Seed: about 20 meeting rooms in two buildings (near-duplicate names, rooms out of service) and
about 50 events from two weeks ago to three weeks ahead: weekly series whose occurrences share a
series id, one-to-ones, customer calls with external contacts, near-duplicate titles, events of
colleagues the user is not invited to, cancelled meetings and declined or unanswered invitations.
Rules: only the organizer may change, reschedule, re-room or cancel an event (403); a room cannot be
double-booked and a room out of service cannot be booked (409); everyone invited must fit in the
room (400); cancelled or past events cannot change (409); an event lasts at most 24 hours and
starts in the future; the organizer does not RSVP to their own event (409); rescheduling resets
every attendee's answer to needs_action.
Version history: 1 — first version.
"""

from __future__ import annotations

import datetime as dt

from servers.framework import BadRequest, Conflict, Forbidden, NotFound, Page, Service, contains, paginate, require
from servers.types import DateTime, DocumentText, EmailAddress, Flag, Limit, Location, Minutes, Offset, Query, Title

from .models import (
    MAX_EVENT,
    WORK_END,
    WORK_START,
    Attendee,
    BusyBlock,
    CalendarState,
    CancelScope,
    Capacity,
    Event,
    EventId,
    EventStatus,
    Reply,
    Room,
    RoomFeature,
    RoomId,
    SeriesId,
    TimeSlot,
    involves,
    is_busy,
    overlaps,
    room_clash,
)
from .seed import seed

service = Service(
    "calendar",
    version=1,
    category="productivity",
    description="The user's work calendar: events, invitations, meeting rooms and free/busy.",
    modelled_on="Google Calendar API (events, freeBusy, resources) and Microsoft Graph calendar",
    state=CalendarState,
    seed=seed,
    system_fields=("updated_at",),
)


def _utc(value: dt.datetime, name: str) -> dt.datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise BadRequest(f"argument {name!r}: {value.isoformat()!r} has no time zone offset")
    value = value.astimezone(dt.UTC)
    if not 2000 <= value.year <= 2100:
        raise BadRequest(f"argument {name!r}: {value.isoformat()!r} is outside the years 2000-2100")
    return value


def _span(
    start: dt.datetime, end: dt.datetime, names: tuple[str, str], max_span: dt.timedelta
) -> tuple[dt.datetime, dt.datetime]:
    start, end = _utc(start, names[0]), _utc(end, names[1])
    if end <= start:
        raise BadRequest(f"argument {names[1]!r}: {end.isoformat()!r} is not after {names[0]} {start.isoformat()!r}")
    if end - start > max_span:
        raise BadRequest(f"argument {names[1]!r}: the span from {names[0]} exceeds {max_span.days or 1} day(s)")
    return start, end


def _future_span(state: CalendarState, start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    start, end = _span(start, end, ("start", "end"), MAX_EVENT)
    if start < state.clock:
        raise BadRequest(f"argument 'start': {start.isoformat()!r} is in the past")
    return start, end


def _own(state: CalendarState, event_id: str, action: str) -> Event:
    """The event, checked to be the user's own, still on and not over."""
    event = require(state.events, event_id, "event")
    if event.organizer.lower() != state.owner.lower():
        raise Forbidden(f"only the organizer {event.organizer!r} may {action} event {event_id!r}")
    if event.status == "cancelled":
        raise Conflict(f"event {event_id!r} is cancelled")
    if event.end <= state.clock:
        raise Conflict(f"event {event_id!r} is already over")
    return event


def _check_room(
    state: CalendarState, room_id: str, start: dt.datetime, end: dt.datetime, people: int, skip: str = ""
) -> Room:
    room = require(state.rooms, room_id, "room")
    if not room.in_service:
        raise Conflict(f"room {room_id!r} ({room.name}) is out of service")
    if people > room.capacity:
        raise BadRequest(f"argument 'room_id': room {room_id!r} ({room.name}) seats {room.capacity}, not {people}")
    clash = room_clash(state, room_id, start, end, skip)
    if clash is not None:
        raise Conflict(f"room {room_id!r} ({room.name}) is already booked by event {clash.id!r} at that time")
    return room


@service.read(
    op="list",
    entity="event",
    collection="events",
    reads=("organizer", "attendees.email", "room_id", "series_id", "status", "title", "description", "start"),
)
def list_events(
    state: CalendarState,
    attendee: EmailAddress | None = None,
    organizer: EmailAddress | None = None,
    room_id: RoomId | None = None,
    series_id: SeriesId | None = None,
    status: EventStatus | None = None,
    query: Query | None = None,
    starts_after: DateTime | None = None,
    starts_before: DateTime | None = None,
    offset: Offset = 0,
    limit: Limit = 20,
) -> Page[Event]:
    """List events by start time, with optional filters.

    Args:
        attendee: Only events this person organises or is invited to.
        organizer: Only events organised by this address.
        room_id: Only events in this room.
        series_id: Only occurrences of this series.
        status: Only events with this status.
        query: Case-insensitive text to find in the title or description.
        starts_after: Only events starting at or after this time.
        starts_before: Only events starting before this time.
        offset: Number of events to skip.
        limit: Maximum number of events to return.
    """
    after = _utc(starts_after, "starts_after") if starts_after else None
    before = _utc(starts_before, "starts_before") if starts_before else None
    rows = [
        e
        for e in state.events.values()
        if (attendee is None or involves(e, attendee))
        and (organizer is None or e.organizer.lower() == organizer.lower())
        and (room_id is None or e.room_id == room_id)
        and (series_id is None or e.series_id == series_id)
        and (status is None or e.status == status)
        and (query is None or contains(e.title, query) or contains(e.description, query))
        and (after is None or e.start >= after)
        and (before is None or e.start < before)
    ]
    return paginate(sorted(rows, key=lambda e: (e.start, e.id)), offset, limit)


@service.read(op="get", entity="event", collection="events")
def get_event(state: CalendarState, event_id: EventId) -> Event:
    """Get one event with its attendees and their answers.

    Args:
        event_id: Id of the event.
    """
    return require(state.events, event_id, "event")


@service.read(op="list", entity="room", collection="rooms", reads=("building", "capacity", "features", "name"))
def list_rooms(
    state: CalendarState,
    building: Location | None = None,
    min_capacity: Capacity | None = None,
    feature: RoomFeature | None = None,
    query: Query | None = None,
    offset: Offset = 0,
    limit: Limit = 50,
) -> Page[Room]:
    """List meeting rooms, with optional filters.

    Args:
        building: Only rooms in this building.
        min_capacity: Only rooms with at least this many seats.
        feature: Only rooms with this equipment.
        query: Case-insensitive text to find in the room name.
        offset: Number of rooms to skip.
        limit: Maximum number of rooms to return.
    """
    rows = [
        r
        for r in state.rooms.values()
        if (building is None or r.building.lower() == building.lower())
        and (min_capacity is None or r.capacity >= min_capacity)
        and (feature is None or feature in r.features)
        and contains(r.name, query)
    ]
    return paginate(rows, offset, limit)


@service.read(op="list", entity="room", collection="rooms", reads=("in_service", "capacity", "features"))
def find_free_rooms(
    state: CalendarState,
    start: DateTime,
    end: DateTime,
    min_capacity: Capacity = 1,
    feature: RoomFeature | None = None,
) -> list[Room]:
    """Find rooms in service that are free for the whole period, smallest first.

    Args:
        start: Start of the period.
        end: End of the period.
        min_capacity: Seats needed.
        feature: Equipment needed.
    """
    start, end = _span(start, end, ("start", "end"), MAX_EVENT)
    rows = [
        r
        for r in state.rooms.values()
        if r.in_service
        and r.capacity >= min_capacity
        and (feature is None or feature in r.features)
        and room_clash(state, r.id, start, end) is None
    ]
    return sorted(rows, key=lambda r: (r.capacity, r.id))


@service.read(
    op="lookup",
    entity="event",
    collection="events",
    reads=("organizer", "attendees.email", "attendees.response", "status", "start", "end"),
)
def free_busy(state: CalendarState, emails: list[EmailAddress], start: DateTime, end: DateTime) -> list[BusyBlock]:
    """Get the busy periods of people between two times (event details stay private).

    Args:
        emails: Addresses of the people to check (1 to 20).
        start: Start of the period.
        end: End of the period (at most 62 days after start).
    """
    if not 1 <= len(emails) <= 20:
        raise BadRequest(f"argument 'emails': give 1 to 20 addresses, not {len(emails)}")
    start, end = _span(start, end, ("start", "end"), dt.timedelta(days=62))
    blocks = [
        BusyBlock(email=email, start=e.start, end=e.end)
        for email in dict.fromkeys(emails)
        for e in sorted(state.events.values(), key=lambda e: (e.start, e.id))
        if is_busy(e, email) and overlaps(start, end, e.start, e.end)
    ]
    return blocks


@service.read(
    op="lookup",
    entity="event",
    collection="events",
    reads=("organizer", "attendees.email", "attendees.response", "status", "start", "end"),
)
def find_meeting_times(
    state: CalendarState,
    attendees: list[EmailAddress],
    duration_minutes: Minutes,
    window_start: DateTime,
    window_end: DateTime,
    limit: Limit = 5,
) -> list[TimeSlot]:
    """Suggest upcoming slots in working hours (09:00-17:00 UTC, Monday-Friday) when everyone is free.

    Args:
        attendees: Addresses of everyone who must attend (1 to 20).
        duration_minutes: Length of the meeting (15 to 480 minutes).
        window_start: Earliest start to consider.
        window_end: Latest end to consider (at most 31 days after window_start).
        limit: Maximum number of slots to return.
    """
    if not 1 <= len(attendees) <= 20:
        raise BadRequest(f"argument 'attendees': give 1 to 20 addresses, not {len(attendees)}")
    if not 15 <= duration_minutes <= 480:
        raise BadRequest(f"argument 'duration_minutes': {duration_minutes} is not between 15 and 480")
    begin, finish = _span(window_start, window_end, ("window_start", "window_end"), dt.timedelta(days=31))
    busy = [(e.start, e.end) for e in state.events.values() if any(is_busy(e, a) for a in attendees)]
    length = dt.timedelta(minutes=duration_minutes)
    cursor = max(begin, state.clock).replace(second=0, microsecond=0)
    cursor += dt.timedelta(minutes=(-cursor.minute) % 30)
    slots: list[TimeSlot] = []
    while cursor + length <= finish and len(slots) < limit:
        end = cursor + length
        in_hours = cursor.weekday() < 5 and cursor.hour >= WORK_START and end <= cursor.replace(hour=WORK_END, minute=0)
        if in_hours and not any(overlaps(cursor, end, s, e) for s, e in busy):
            slots.append(TimeSlot(start=cursor, end=end))
        cursor += dt.timedelta(minutes=30)
    return slots


@service.write(
    op="create",
    entity="event",
    collection="events",
    sets=("title", "description", "start", "end", "organizer", "attendees", "room_id", "location", "status"),
)
def create_event(
    state: CalendarState,
    title: Title,
    start: DateTime,
    end: DateTime,
    attendees: list[EmailAddress] | None = None,
    room_id: RoomId | None = None,
    location: Location | None = None,
    description: DocumentText = "",
) -> Event:
    """Create an event organised by the user and invite people by email address.

    Args:
        title: Title of the event.
        start: Start time (in the future).
        end: End time (after start, at most 24 hours later).
        attendees: Addresses to invite; the user is the organizer and is not listed.
        room_id: Meeting room to book; it must be free, in service and big enough.
        location: Address or video link when no room is booked.
        description: Agenda or notes.
    """
    start, end = _future_span(state, start, end)
    invitees = [e for e in dict.fromkeys(attendees or []) if e.lower() != state.owner.lower()]
    room = _check_room(state, room_id, start, end, len(invitees) + 1) if room_id is not None else None
    if room is not None and location is not None:
        raise BadRequest("argument 'location': give either a room_id or a location, not both")
    event = Event(
        id=state.new_id("evt"),
        title=title,
        description=description,
        start=start,
        end=end,
        organizer=state.owner,
        attendees=[Attendee(email=e, response="needs_action") for e in invitees],
        room_id=room_id,
        location=room.name if room else location,
        status="confirmed",
        updated_at=state.tick(),
    )
    state.events[event.id] = event
    return event


@service.write(op="update", entity="event", collection="events", sets=("title", "description", "location"))
def update_event(
    state: CalendarState,
    event_id: EventId,
    title: Title | None = None,
    description: DocumentText | None = None,
    location: Location | None = None,
) -> Event:
    """Change the title, description or location of one of the user's events.

    Args:
        event_id: Id of the event (the user must be its organizer).
        title: New title.
        description: New agenda or notes.
        location: New address or video link (only for events without a booked room).
    """
    event = _own(state, event_id, "update")
    if location is not None and event.room_id is not None:
        raise BadRequest(f"argument 'location': event {event_id!r} has a booked room; use change_room")
    changes = {"title": title, "description": description, "location": location}
    for key, value in changes.items():
        if value is not None:
            setattr(event, key, value)
    event.updated_at = state.tick()
    return event


@service.write(op="update", entity="event", collection="events", sets=("start", "end", "attendees.response"))
def reschedule_event(state: CalendarState, event_id: EventId, start: DateTime, end: DateTime) -> Event:
    """Move one of the user's events to a new time; every attendee must answer again.

    Args:
        event_id: Id of the event (the user must be its organizer).
        start: New start time (in the future).
        end: New end time (after start, at most 24 hours later).
    """
    start, end = _future_span(state, start, end)
    event = _own(state, event_id, "reschedule")
    if event.room_id is not None:
        _check_room(state, event.room_id, start, end, len(event.attendees) + 1, skip=event.id)
    event.start, event.end = start, end
    for attendee in event.attendees:
        attendee.response = "needs_action"
    event.updated_at = state.tick()
    return event


@service.write(op="update", entity="event", collection="events", sets=("room_id", "location"))
def change_room(state: CalendarState, event_id: EventId, room_id: RoomId | None = None) -> Event:
    """Book another room for one of the user's events, or release its room.

    Args:
        event_id: Id of the event (the user must be its organizer).
        room_id: Room to book instead; omit to release the current room.
    """
    event = _own(state, event_id, "change the room of")
    if room_id is not None and room_id == event.room_id:
        raise Conflict(f"event {event_id!r} is already in room {room_id!r}")
    room = None
    if room_id is not None:
        room = _check_room(state, room_id, event.start, event.end, len(event.attendees) + 1, skip=event.id)
    elif event.room_id is None:
        raise Conflict(f"event {event_id!r} has no room to release")
    event.room_id = room_id
    event.location = room.name if room else None
    event.updated_at = state.tick()
    return event


@service.write(op="append", entity="event", collection="events", sets=("attendees",))
def add_attendees(state: CalendarState, event_id: EventId, emails: list[EmailAddress], optional: Flag = False) -> Event:
    """Invite more people to one of the user's events.

    Args:
        event_id: Id of the event (the user must be its organizer).
        emails: Addresses to invite (none of them already invited).
        optional: Whether their attendance is optional.
    """
    event = _own(state, event_id, "invite people to")
    new = list(dict.fromkeys(emails))
    if not new:
        raise BadRequest("argument 'emails': at least one address is required")
    invited = {a.email.lower() for a in event.attendees} | {event.organizer.lower()}
    for email in new:
        if email.lower() in invited:
            raise Conflict(f"{email!r} is already invited to event {event_id!r}")
    if event.room_id is not None:
        room = state.rooms[event.room_id]
        if len(event.attendees) + len(new) + 1 > room.capacity:
            raise BadRequest(f"argument 'emails': room {room.id!r} ({room.name}) seats only {room.capacity}")
    event.attendees.extend(Attendee(email=e, response="needs_action", optional=optional) for e in new)
    event.updated_at = state.tick()
    return event


@service.write(op="remove", entity="event", collection="events", sets=("attendees",))
def remove_attendee(state: CalendarState, event_id: EventId, email: EmailAddress) -> Event:
    """Uninvite one person from one of the user's events.

    Args:
        event_id: Id of the event (the user must be its organizer).
        email: Address of the attendee to remove.
    """
    event = _own(state, event_id, "uninvite people from")
    keep = [a for a in event.attendees if a.email.lower() != email.lower()]
    if len(keep) == len(event.attendees):
        raise NotFound(f"attendee {email!r} not found on event {event_id!r}")
    event.attendees = keep
    event.updated_at = state.tick()
    return event


@service.write(
    op="update", entity="event", collection="events", reads=("attendees.email",), sets=("attendees.response",)
)
def respond_to_event(state: CalendarState, event_id: EventId, response: Reply) -> Event:
    """Answer an invitation on behalf of the user (accept, decline or maybe).

    Args:
        event_id: Id of the event the user is invited to.
        response: The user's answer.
    """
    event = require(state.events, event_id, "event")
    if event.organizer.lower() == state.owner.lower():
        raise Conflict(f"the user organises event {event_id!r}; organizers do not RSVP")
    mine = next((a for a in event.attendees if a.email.lower() == state.owner.lower()), None)
    if mine is None:
        raise Forbidden(f"the user is not invited to event {event_id!r}")
    if event.status == "cancelled":
        raise Conflict(f"event {event_id!r} is cancelled")
    if event.end <= state.clock:
        raise Conflict(f"event {event_id!r} is already over")
    mine.response = response
    event.updated_at = state.tick()
    return event


@service.write(op="transition", entity="event", collection="events", reads=("series_id",), sets=("status",))
def cancel_event(state: CalendarState, event_id: EventId, scope: CancelScope = "this") -> list[Event]:
    """Cancel one of the user's events, or this and every later occurrence of its series.

    Args:
        event_id: Id of the event (the user must be its organizer).
        scope: 'this' for this occurrence only, 'series' for it and all later occurrences.
    """
    event = _own(state, event_id, "cancel")
    if scope == "series" and event.series_id is None:
        raise BadRequest(f"argument 'scope': event {event_id!r} is not part of a series")
    targets = [event]
    if scope == "series":
        targets = sorted(
            (
                e
                for e in state.events.values()
                if e.series_id == event.series_id and e.start >= event.start and e.status != "cancelled"
            ),
            key=lambda e: (e.start, e.id),
        )
    now = state.tick()
    for target in targets:
        target.status = "cancelled"
        target.updated_at = now
    return targets
