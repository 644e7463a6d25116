"""System fields: what each service maintains itself on writes, declared per service, never guessed."""

from __future__ import annotations

import random
from typing import Any

import pytest

from servers.construction.spec import SYSTEM_FIELDS
from servers.framework import Record, Service, ServiceState
from servers.native.chat import service as chat
from servers.native.helpdesk import service as helpdesk
from servers.population import Population
from servers.registry import all_services
from servers.state import field_names

HAND_WRITTEN = ("automation", "calendar", "chat", "crm", "directory", "email", "expenses", "files", "helpdesk", "hr",
                "invoicing", "shop", "sms", "spreadsheet", "tracker", "wiki")  # fmt: skip
BASE = {"seq", "clock"}


class Note(Record):
    id: str
    title: str
    created_at: str = ""


class NotesState(ServiceState):
    notes: dict[str, Note] = {}
    next_number: int = 1


def _seed(rng: random.Random, world: Population) -> NotesState:
    return NotesState()


def _notes(**kwargs: Any) -> Service[NotesState]:
    return Service("notes", version=1, category="test", description="Notes.", state=NotesState, seed=_seed, **kwargs)


def test_base_fields_come_from_the_service_state_model() -> None:
    assert set(ServiceState.model_fields) == BASE
    assert _notes().system_fields == BASE
    declared = _notes(system_fields=("created_at", "next_number")).system_fields
    assert declared == BASE | {"created_at", "next_number"}
    assert isinstance(declared, frozenset)


def test_an_unknown_system_field_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="modified_at"):
        _notes(system_fields=("created_at", "modified_at"))


def test_field_names_cover_the_state_its_records_and_nested_records() -> None:
    from servers.native.calendar.models import CalendarState

    names = field_names(CalendarState)
    assert {"seq", "clock", "owner", "events", "updated_at", "capacity"} <= names
    assert "response" in names  # Attendee, a record inside Event.attendees
    assert "free_slots" not in names


def test_every_service_declares_seq_and_clock() -> None:
    services = all_services()
    assert set(HAND_WRITTEN) <= set(services)
    for service in services.values():
        assert service.system_fields >= BASE, service.name


def test_hand_written_services_declare_only_fields_of_their_models() -> None:
    services = all_services()
    for name in HAND_WRITTEN:
        service = services[name]
        assert service.source == "hand-written"
        declared = service.system_fields - BASE
        assert declared, f"{name} declares no system field of its own"
        missing = declared - field_names(service.state_type)
        assert not missing, f"{name}: {sorted(missing)}"


def test_spec_services_declare_what_the_engine_stamps() -> None:
    built = [s for s in all_services().values() if s.source == "spec"]
    assert built
    for service in built:
        assert service.system_fields == BASE | set(SYSTEM_FIELDS), service.name
        for name, field in service.state_type.model_fields.items():
            if name in BASE:
                continue
            record = next(iter(getattr(field.annotation, "__args__", ())[1:]), None)
            assert isinstance(record, type) and issubclass(record, Record), service.name
            assert set(SYSTEM_FIELDS) <= set(record.model_fields), (service.name, record.__name__)


def _touched(service: Service[Any], before: dict[str, Any], state: ServiceState) -> dict[str, set[str]]:
    """Changed field names by record path (``/tickets/tkt_0001``); top-level fields under ``""``."""
    out: dict[str, set[str]] = {}
    for change in service.diff(before, state):
        parts = change.path.split("/")[1:]
        if len(parts) == 1:
            out.setdefault("", set()).add(parts[0])
        elif change.op == "change" or len(parts) > 2:
            out.setdefault("/" + "/".join(parts[:2]), set()).add(parts[2])
        else:
            out.setdefault("created" if change.op == "add" else "deleted", set()).add(change.path)
    return out


def _open_ticket(state: Any) -> str:
    return next(t.id for t in state.tickets.values() if t.status in ("open", "pending") and not t.escalated)


def test_a_comment_changes_its_ticket_only_in_system_fields() -> None:
    state = helpdesk.seed_state(7)
    ticket_id = _open_ticket(state)
    before = helpdesk.snapshot(state)
    made = helpdesk.call(state, "add_comment", {"ticket_id": ticket_id, "body": "Looking into it."})
    assert made["success"], made
    touched = _touched(helpdesk, before, state)
    assert touched.pop("created") == {f"/comments/{made['data']['id']}"}
    assert touched.pop(f"/tickets/{ticket_id}") == {"updated_at"}  # a naive comparison flags this
    assert touched.pop("") <= helpdesk.system_fields
    assert touched == {}


def test_the_declaration_separates_business_fields_from_maintained_ones() -> None:
    state = helpdesk.seed_state(7)
    ticket_id = _open_ticket(state)
    priority = "low" if state.tickets[ticket_id].priority != "low" else "high"
    before = helpdesk.snapshot(state)
    assert helpdesk.call(state, "update_ticket", {"ticket_id": ticket_id, "priority": priority})["success"]
    changed = _touched(helpdesk, before, state)[f"/tickets/{ticket_id}"]
    assert changed == {"priority", "sla_due_at", "updated_at"}
    assert changed - helpdesk.system_fields == {"priority"}


def test_a_thread_reply_bumps_only_system_fields_of_its_parent() -> None:
    state = chat.seed_state(7)
    parent = next(
        m
        for m in sorted(state.messages.values(), key=lambda m: m.id)
        if m.thread_id is None
        and not state.channels[m.channel_id].archived
        and state.me in state.channels[m.channel_id].members
    )
    before = chat.snapshot(state)
    reply = chat.call(state, "post_message", {"channel_id": parent.channel_id, "text": "+1", "thread_id": parent.id})
    assert reply["success"], reply
    touched = _touched(chat, before, state)
    assert touched[f"/messages/{parent.id}"] == {"reply_count"} <= chat.system_fields
