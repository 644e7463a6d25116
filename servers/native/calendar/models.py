"""Calendar types, records and state, and the helpers shared by the seed and the tools."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from servers.framework import Record, ServiceState
from servers.roles import ROLE_KEY
from servers.types import DateTime, DocumentText, EmailAddress, Flag, Location, Title, ident, sem

EventId = Annotated[str, ident("calendar", "event")]
RoomId = Annotated[str, ident("calendar", "room")]
SeriesId = Annotated[str, ident("calendar", "series")]
EventStatus = Annotated[
    Literal["confirmed", "tentative", "cancelled"], sem("calendar.event_status", "Status of a calendar event.")
]
Response = Annotated[
    Literal["needs_action", "accepted", "tentative", "declined"],
    sem("calendar.response_status", "An attendee's answer to an invitation."),
]
Reply = Annotated[Literal["accepted", "tentative", "declined"], sem("calendar.rsvp", "Answer to an invitation.")]
Recurrence = Annotated[
    Literal["none", "weekly"],
    sem("calendar.recurrence", "How an event repeats; every occurrence is its own event sharing one series id."),
]
RoomFeature = Annotated[
    Literal["video", "whiteboard", "projector", "phone", "wheelchair_access"],
    sem("calendar.room_feature", "Equipment or property of a meeting room."),
]
CancelScope = Annotated[
    Literal["this", "series"], sem("calendar.cancel_scope", "Cancel one occurrence or the rest of its series.")
]
Capacity = Annotated[int, sem("calendar.capacity", "Number of seats in a meeting room.", ge=1, le=500)]

WORK_START, WORK_END = 9, 17  # working hours (UTC) searched by find_meeting_times
MAX_EVENT = dt.timedelta(hours=24)


class Attendee(Record):
    email: EmailAddress = Field(description="Address of the invited person.", json_schema_extra={ROLE_KEY: "guest"})
    response: Response
    optional: Flag = Field(default=False, description="Whether attendance is optional.")


class Event(Record):
    id: EventId
    title: Title
    description: DocumentText = Field(default="", description="Agenda or notes of the event.")
    start: DateTime = Field(description="When the event starts.", json_schema_extra={ROLE_KEY: "start"})
    end: DateTime = Field(description="When the event ends.", json_schema_extra={ROLE_KEY: "end"})
    organizer: EmailAddress = Field(
        description="Address of the person who organises the event.", json_schema_extra={ROLE_KEY: "owner"}
    )
    attendees: list[Attendee] = Field(description="Invited people (the organizer excluded) and their answers.")
    room_id: RoomId | None = Field(default=None, description="Booked meeting room, if any.")
    location: Location | None = Field(default=None, description="Room name, address or video link.")
    status: EventStatus
    series_id: SeriesId | None = Field(default=None, description="Series shared by the occurrences of a repeat.")
    recurrence: Recurrence = "none"
    updated_at: DateTime = Field(description="Last change of the event.")


class Room(Record):
    id: RoomId
    name: Location = Field(description="Name of the room.")
    building: Location = Field(description="Building the room is in.")
    capacity: Capacity
    features: list[RoomFeature] = Field(description="Equipment of the room.")
    in_service: Flag = Field(description="False while the room cannot be booked (repairs, renovation).")


class BusyBlock(Record):
    email: EmailAddress = Field(description="Person who is busy.", json_schema_extra={ROLE_KEY: "party"})
    start: DateTime = Field(description="Start of the busy period.", json_schema_extra={ROLE_KEY: "start"})
    end: DateTime = Field(description="End of the busy period.", json_schema_extra={ROLE_KEY: "end"})


class TimeSlot(Record):
    start: DateTime = Field(description="Start of a slot when everyone is free.", json_schema_extra={ROLE_KEY: "start"})
    end: DateTime = Field(description="End of the slot.", json_schema_extra={ROLE_KEY: "end"})


class CalendarState(ServiceState):
    owner: str = ""
    events: dict[str, Event] = Field(default_factory=dict)
    rooms: dict[str, Room] = Field(default_factory=dict)


def overlaps(a_start: dt.datetime, a_end: dt.datetime, b_start: dt.datetime, b_end: dt.datetime) -> bool:
    return a_start < b_end and b_start < a_end


def room_clash(
    state: CalendarState, room_id: str, start: dt.datetime, end: dt.datetime, skip: str = ""
) -> Event | None:
    for event in state.events.values():
        if (
            event.room_id == room_id
            and event.id != skip
            and event.status != "cancelled"
            and overlaps(start, end, event.start, event.end)
        ):
            return event
    return None


def involves(event: Event, email: str) -> bool:
    email = email.lower()
    return event.organizer.lower() == email or any(a.email.lower() == email for a in event.attendees)


def is_busy(event: Event, email: str) -> bool:
    """Whether ``email`` is blocked by ``event`` (organizer, or an attendee who has not declined)."""
    if event.status == "cancelled":
        return False
    email = email.lower()
    return event.organizer.lower() == email or any(
        a.email.lower() == email and a.response != "declined" for a in event.attendees
    )
