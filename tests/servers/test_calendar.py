"""The calendar service: events, rooms, free/busy, RSVPs and the organizer/room rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from servers.native.calendar import CalendarState, Event
from servers.native.calendar import service as svc
from servers.population import Population


@pytest.fixture
def state() -> CalendarState:
    return svc.seed_state(7)


def call(state: CalendarState, tool: str, **args: Any) -> dict[str, Any]:
    return svc.call(state, tool, args)


def iso(value: dt.datetime) -> str:
    return value.isoformat()


def future_own(state: CalendarState, with_room: bool = True) -> Event:
    return next(
        e
        for e in sorted(state.events.values(), key=lambda e: e.start)
        if e.organizer == state.owner
        and e.status != "cancelled"
        and e.start > state.clock
        and (e.room_id is not None) == with_room
    )


def free_room(state: CalendarState, start: dt.datetime, end: dt.datetime, seats: int = 2) -> str:
    rooms = call(state, "find_free_rooms", start=iso(start), end=iso(end), min_capacity=seats)["data"]
    return str(rooms[0]["id"])


def next_monday(state: CalendarState, hour: int = 9, weeks: int = 4) -> dt.datetime:
    return state.clock.replace(hour=hour, minute=0) + dt.timedelta(days=7 * weeks - state.clock.weekday())


def test_list_events_filters_by_attendee_and_paginates(state: CalendarState) -> None:
    page = call(state, "list_events", attendee=state.owner, limit=5)["data"]
    mine = [
        e for e in state.events.values() if e.organizer == state.owner or state.owner in [a.email for a in e.attendees]
    ]
    assert page["total"] == len(mine) and len(page["items"]) == 5 and page["next_offset"] == 5
    starts = [item["start"] for item in page["items"]]
    assert starts == sorted(starts)
    rest = call(state, "list_events", attendee=state.owner, offset=5, limit=200)["data"]
    assert rest["next_offset"] is None and len(rest["items"]) == len(mine) - 5


def test_list_events_by_series_returns_the_weekly_occurrences(state: CalendarState) -> None:
    series_id = next(e.series_id for e in state.events.values() if e.series_id)
    items = call(state, "list_events", series_id=series_id)["data"]["items"]
    assert len(items) == 5 and {i["recurrence"] for i in items} == {"weekly"}
    assert len({i["title"] for i in items}) == 1


def test_get_event_returns_attendees(state: CalendarState) -> None:
    event = future_own(state)
    data = call(state, "get_event", event_id=event.id)["data"]
    assert data["id"] == event.id and data["organizer"] == state.owner
    assert [a["email"] for a in data["attendees"]] == [a.email for a in event.attendees]


def test_get_event_unknown_id_is_404_quoting_it(state: CalendarState) -> None:
    env = call(state, "get_event", event_id="evt_9999")
    assert env["error"]["code"] == 404 and "'evt_9999'" in env["error"]["message"]


def test_list_rooms_filters_by_capacity_and_feature(state: CalendarState) -> None:
    items = call(state, "list_rooms", min_capacity=10, feature="video")["data"]["items"]
    assert items and all(r["capacity"] >= 10 and "video" in r["features"] for r in items)


def test_create_event_books_a_free_room_and_invites_people(state: CalendarState) -> None:
    start = next_monday(state)
    room_id = free_room(state, start, start + dt.timedelta(hours=1), seats=3)
    guests = [p.email for p in Population.generate(7).employees[:2]]
    env = call(
        state,
        "create_event",
        title="Supplier review",
        start=iso(start),
        end=iso(start + dt.timedelta(hours=1)),
        attendees=guests,
        room_id=room_id,
    )
    assert env["success"], env
    event = env["data"]
    assert event["organizer"] == state.owner and event["room_id"] == room_id
    assert event["location"] == state.rooms[room_id].name
    assert [a["response"] for a in event["attendees"]] == ["needs_action", "needs_action"]


def test_create_event_in_a_booked_room_is_409_and_changes_nothing(state: CalendarState) -> None:
    booked = future_own(state)
    before = svc.state_hash(state)
    env = call(
        state, "create_event", title="Clash", start=iso(booked.start), end=iso(booked.end), room_id=booked.room_id
    )
    assert env["error"]["code"] == 409 and repr(booked.id) in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_create_event_in_a_room_out_of_service_is_409(state: CalendarState) -> None:
    room = next(r for r in state.rooms.values() if not r.in_service)
    start = next_monday(state)
    env = call(
        state, "create_event", title="X", start=iso(start), end=iso(start + dt.timedelta(hours=1)), room_id=room.id
    )
    assert env["error"]["code"] == 409 and "out of service" in env["error"]["message"]


def test_create_event_over_room_capacity_is_400_naming_room_id(state: CalendarState) -> None:
    start = next_monday(state, hour=7)
    booth = next(r for r in state.rooms.values() if r.capacity == 2)
    guests = [p.email for p in Population.generate(7).employees[:4]]
    env = call(
        state,
        "create_event",
        title="Crowd",
        start=iso(start),
        end=iso(start + dt.timedelta(hours=1)),
        attendees=guests,
        room_id=booth.id,
    )
    assert env["error"]["code"] == 400 and "'room_id'" in env["error"]["message"]


def test_create_event_ending_before_it_starts_is_400_naming_end(state: CalendarState) -> None:
    start = next_monday(state)
    env = call(state, "create_event", title="Backwards", start=iso(start), end=iso(start - dt.timedelta(hours=1)))
    assert env["error"]["code"] == 400 and "'end'" in env["error"]["message"]


def test_create_event_without_time_zone_is_400(state: CalendarState) -> None:
    env = call(state, "create_event", title="Naive", start="2026-04-01T10:00:00", end="2026-04-01T11:00:00")
    assert env["error"]["code"] == 400 and "'start'" in env["error"]["message"]


def test_reschedule_of_someone_elses_event_is_403_and_changes_nothing(state: CalendarState) -> None:
    event = next(e for e in state.events.values() if e.organizer != state.owner and e.start > state.clock)
    before = svc.state_hash(state)
    start = next_monday(state)
    env = call(state, "reschedule_event", event_id=event.id, start=iso(start), end=iso(start + dt.timedelta(hours=1)))
    assert env["error"]["code"] == 403 and event.organizer in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_reschedule_moves_the_event_and_resets_answers(state: CalendarState) -> None:
    event = future_own(state, with_room=False)
    start = next_monday(state, hour=16)
    env = call(
        state, "reschedule_event", event_id=event.id, start=iso(start), end=iso(start + dt.timedelta(minutes=30))
    )
    assert env["success"], env
    assert dt.datetime.fromisoformat(env["data"]["start"]) == start
    assert {a["response"] for a in env["data"]["attendees"]} == {"needs_action"}


def test_cancel_series_cancels_this_and_later_occurrences_only(state: CalendarState) -> None:
    event = future_own(state)
    assert event.series_id
    env = call(state, "cancel_event", event_id=event.id, scope="series")
    assert env["success"], env
    cancelled = {e["id"] for e in env["data"]}
    for other in state.events.values():
        if other.series_id == event.series_id:
            assert (other.status == "cancelled") == (other.start >= event.start)
            assert (other.id in cancelled) == (other.start >= event.start)


def test_cancel_an_already_cancelled_event_is_409(state: CalendarState) -> None:
    event = future_own(state, with_room=False)
    assert call(state, "cancel_event", event_id=event.id)["success"]
    before = svc.state_hash(state)
    env = call(state, "cancel_event", event_id=event.id)
    assert env["error"]["code"] == 409 and "cancelled" in env["error"]["message"]
    assert svc.state_hash(state) == before


def test_cancel_series_of_a_single_event_is_400_naming_scope(state: CalendarState) -> None:
    event = future_own(state, with_room=False)
    env = call(state, "cancel_event", event_id=event.id, scope="series")
    assert env["error"]["code"] == 400 and "'scope'" in env["error"]["message"]


def test_respond_to_an_invitation_records_the_answer(state: CalendarState) -> None:
    event = next(
        e
        for e in state.events.values()
        if e.organizer != state.owner
        and e.status == "confirmed"
        and e.start > state.clock
        and state.owner in [a.email for a in e.attendees]
    )
    env = call(state, "respond_to_event", event_id=event.id, response="declined")
    mine = next(a for a in env["data"]["attendees"] if a["email"] == state.owner)
    assert mine["response"] == "declined"


def test_respond_when_not_invited_is_403(state: CalendarState) -> None:
    event = next(
        e
        for e in state.events.values()
        if state.owner not in [a.email for a in e.attendees] and e.organizer != state.owner
    )
    assert call(state, "respond_to_event", event_id=event.id, response="accepted")["error"]["code"] == 403


def test_organizer_cannot_rsvp_to_own_event(state: CalendarState) -> None:
    event = future_own(state)
    assert call(state, "respond_to_event", event_id=event.id, response="accepted")["error"]["code"] == 409


def test_add_an_already_invited_attendee_is_409(state: CalendarState) -> None:
    event = future_own(state)
    env = call(state, "add_attendees", event_id=event.id, emails=[event.attendees[0].email])
    assert env["error"]["code"] == 409 and event.attendees[0].email in env["error"]["message"]


def test_remove_an_attendee_who_is_not_invited_is_404(state: CalendarState) -> None:
    event = future_own(state)
    env = call(state, "remove_attendee", event_id=event.id, email="nobody@example.com")
    assert env["error"]["code"] == 404 and "'nobody@example.com'" in env["error"]["message"]


def test_change_room_to_a_free_room_moves_the_booking(state: CalendarState) -> None:
    event = future_own(state)
    room_id = free_room(state, event.start, event.end, seats=len(event.attendees) + 1)
    env = call(state, "change_room", event_id=event.id, room_id=room_id)
    assert env["data"]["room_id"] == room_id and env["data"]["location"] == state.rooms[room_id].name


def test_update_location_of_an_event_with_a_room_is_400(state: CalendarState) -> None:
    event = future_own(state)
    env = call(state, "update_event", event_id=event.id, location="Cafe downstairs")
    assert env["error"]["code"] == 400 and "'location'" in env["error"]["message"]


def test_free_busy_lists_the_users_meetings(state: CalendarState) -> None:
    start, end = state.clock, state.clock + dt.timedelta(days=7)
    blocks = call(state, "free_busy", emails=[state.owner], start=iso(start), end=iso(end))["data"]
    own = future_own(state)
    assert own.start < end
    assert any(dt.datetime.fromisoformat(b["start"]) == own.start for b in blocks)
    assert {b["email"] for b in blocks} == {state.owner}


def test_find_meeting_times_avoids_busy_periods(state: CalendarState) -> None:
    people = [state.owner, future_own(state).attendees[0].email]
    start, end = state.clock, state.clock + dt.timedelta(days=5)
    slots = call(
        state, "find_meeting_times", attendees=people, duration_minutes=60, window_start=iso(start), window_end=iso(end)
    )["data"]
    busy = call(state, "free_busy", emails=people, start=iso(start), end=iso(end))["data"]
    assert len(slots) == 5
    for slot in slots:
        assert all(not (slot["start"] < b["end"] and b["start"] < slot["end"]) for b in busy)
        assert 9 <= dt.datetime.fromisoformat(slot["start"]).hour < 17


def test_find_free_rooms_skips_booked_and_closed_rooms(state: CalendarState) -> None:
    event = future_own(state)
    rooms = call(state, "find_free_rooms", start=iso(event.start), end=iso(event.end))["data"]
    ids = {r["id"] for r in rooms}
    assert event.room_id not in ids and all(r["in_service"] for r in rooms)


def test_every_person_in_the_calendar_comes_from_the_population(state: CalendarState) -> None:
    people = {p.email for p in Population.generate(7).people}
    for event in state.events.values():
        assert event.organizer in people
        assert {a.email for a in event.attendees} <= people


def test_same_seed_gives_the_same_state() -> None:
    assert svc.state_hash(svc.seed_state(11)) == svc.state_hash(svc.seed_state(11))
