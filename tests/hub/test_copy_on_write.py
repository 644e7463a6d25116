"""Copy-on-write worlds: field-level lazy copies, on-demand slots, checkpoints, refused writes."""

from __future__ import annotations

from typing import Any

import pytest

from hub.core import Hub
from servers.registry import get_service
from servers.state import snapshot, stable_hash
from servers.values import state_values


def _message(hub: Hub, seed: int) -> str:
    values = state_values(get_service("email"), get_service("email").seed_state(seed))
    return str(values["email.message_id"][0])


def _fields(state: Any) -> dict[str, Any]:
    return dict(state.__dict__)  # the raw values, without taking a private copy of any


@pytest.mark.parametrize("name", ["email", "crm", "calendar", "hr", "tracker"])
def test_a_lazy_copy_snapshots_and_restores_like_a_whole_copy(name: str) -> None:
    service = get_service(name)
    source = service.seed_state(7)
    data = snapshot(source)
    copy = service.copy_state(source, data)
    assert copy is not source and type(copy) is type(source)
    assert snapshot(copy) == data
    for field in type(copy).model_fields:
        getattr(copy, field)  # takes a private copy of every field
    assert copy.model_dump(mode="json") == data == service.restore(data).model_dump(mode="json")
    assert snapshot(source) == data


def test_a_write_copies_only_the_fields_it_touches(hub: Hub) -> None:
    base = hub.seeded_slot("email", 8).read_state()
    before = stable_hash(snapshot(base))
    world = hub.open_world(services=["email"], seed=8)
    world.call("email__mark_read", {"message_id": _message(hub, 8), "read": True})
    state = world.slot("email").read_state()
    assert state is not base
    raw, shared = _fields(state), _fields(base)
    assert raw["messages"] is not shared["messages"]  # touched: private
    assert any(raw[k] is shared[k] and isinstance(raw[k], dict | list) for k in raw if k != "messages")
    assert stable_hash(snapshot(base)) == before  # the seeded state never changes
    assert world.slot("email").snapshot() == state.model_dump(mode="json")


def test_in_place_changes_to_a_record_stay_in_their_world(hub: Hub) -> None:
    message = _message(hub, 9)
    one, two = hub.open_world(services=["email"], seed=9), hub.open_world(services=["email"], seed=9)
    fresh = two.hash()
    one.call("email__add_label", {"message_id": message, "label": "vip"})
    child = one.fork()
    child.call("email__add_label", {"message_id": message, "label": "later"})
    labels = {w.id: w.slot("email").read_state().messages[message].labels for w in (one, two, child)}  # type: ignore[attr-defined]
    assert "vip" in labels[one.id] and "later" not in labels[one.id]
    assert {"vip", "later"} <= set(labels[child.id])
    assert "vip" not in labels[two.id] and two.hash() == fresh == hub.open_world(services=["email"], seed=9).hash()


def test_a_checkpoint_keeps_the_state_while_its_world_writes_in_place(hub: Hub) -> None:
    world = hub.open_world(services=["email", "crm"], seed=10)
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "first", "body": "x"})
    state = world.slot("email").read_state()
    kept = world.states()
    checkpoint = world.checkpoint()
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "second", "body": "x"})
    assert world.slot("email").read_state() is state  # still its own: not copied again
    assert checkpoint.states() == kept
    checkpoint.call("email__send_message", {"to": ["c@d.co"], "subject": "branch", "body": "y"})
    subjects = {m["subject"] for m in world.states()["email"]["messages"].values()}
    assert "branch" not in subjects and {"first", "second"} <= subjects


def test_slots_are_taken_from_the_seeded_cache_on_first_use(hub: Hub) -> None:
    world = hub.open_world(seed=11)
    assert world.stateful_services == frozenset({"email", "crm", "calendar"})
    assert not world._slots  # nothing touched yet
    world.call("crm__list_deals", {})
    assert set(world._slots) == {"crm"}
    assert list(world.states()) == list(hub.open_world(seed=11).states()) == ["email", "crm", "calendar"]
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    fork = world.fork()
    world.reset()
    assert not world._slots and world.hash() == hub.open_world(seed=11).hash() != fork.hash()


def test_a_write_refused_for_its_arguments_copies_nothing(hub: Hub) -> None:
    world = hub.open_world(services=["email"], seed=12)
    slot = world.slot("email")
    cached = slot.snapshot()
    envelope = world.call("email__send_message", {"to": ["a@b.co"], "subject": 5})
    assert envelope["error"]["code"] == 400
    assert not slot.owned and slot.snapshot() is cached
