"""Worlds: isolation under concurrency, fork, snapshot/restore, reset, hash and diff."""

from __future__ import annotations

import random
import threading
from typing import Any

from hub.core import Hub
from servers.registry import get_service
from servers.values import state_values


def _calls(hub: Hub, seed: int, rng: random.Random, n: int) -> list[tuple[str, dict[str, Any]]]:
    """A random mix of reads and writes over seeded records of email and crm."""
    values = state_values(get_service("email"), get_service("email").seed_state(seed))
    messages = values["email.message_id"]
    people = values["email_address"]
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.3:
            calls.append(("email__mark_read", {"message_id": rng.choice(messages), "read": rng.random() < 0.5}))
        elif roll < 0.5:
            label = rng.choice(["urgent", "later", "vip"])
            calls.append(("email__add_label", {"message_id": rng.choice(messages), "label": label}))
        elif roll < 0.7:
            body = f"note {i} {rng.random():.6f}"
            calls.append(("email__send_message", {"to": [rng.choice(people)], "subject": f"s{i}", "body": body}))
        elif roll < 0.8:
            calls.append(("email__move_message", {"message_id": rng.choice(messages), "folder": "archive"}))
        else:
            calls.append(("email__list_messages", {"limit": 3, "offset": rng.randrange(10)}))
    return calls


def test_concurrent_worlds_end_as_sequential_runs_do(hub: Hub) -> None:
    plans = {i: _calls(hub, 1, random.Random(i), 15) for i in range(200)}
    worlds = {i: hub.open_world(services=["email", "crm"], seed=1) for i in plans}
    barrier = threading.Barrier(len(plans))

    def run(i: int) -> None:
        barrier.wait()
        for tool, args in plans[i]:
            worlds[i].call(tool, args)

    threads = [threading.Thread(target=run, args=(i,)) for i in plans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    fresh = Hub.native([get_service("email"), get_service("crm")])
    for i, plan in plans.items():
        alone = fresh.open_world(seed=1)
        for tool, args in plan:
            alone.call(tool, args)
        assert worlds[i].hash() == alone.hash(), f"world {i} diverged from its sequential replay"
    assert len({w.hash() for w in worlds.values()}) > 150  # the plans really differ


def test_forked_world_diverges_independently(hub: Hub) -> None:
    parent = hub.open_world(services=["email"], seed=2)
    parent.call("email__send_message", {"to": ["a@b.co"], "subject": "before fork", "body": "x"})
    child = parent.fork()
    assert child.hash() == parent.hash() and child.id != parent.id
    child.call("email__send_message", {"to": ["a@b.co"], "subject": "child only", "body": "x"})
    parent.call("email__send_message", {"to": ["c@d.co"], "subject": "parent only", "body": "y"})
    child_subjects = {m.subject for m in child.slot("email").read_state().messages.values()}  # type: ignore[attr-defined]
    parent_subjects = {m.subject for m in parent.slot("email").read_state().messages.values()}  # type: ignore[attr-defined]
    assert "child only" in child_subjects and "parent only" not in child_subjects
    assert "parent only" in parent_subjects and "child only" not in parent_subjects
    assert "before fork" in child_subjects & parent_subjects


def test_writes_in_one_world_are_invisible_in_another(hub: Hub) -> None:
    one, two = hub.open_world(seed=3), hub.open_world(seed=3)
    one.call("email__send_message", {"to": ["a@b.co"], "subject": "only in one", "body": "x"})
    assert one.hash() != two.hash()
    assert two.hash() == hub.open_world(seed=3).hash()


def test_snapshot_restore_round_trips_and_opens_new_worlds(hub: Hub) -> None:
    world = hub.open_world(seed=4)
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "kept", "body": "x"})
    snap = world.snapshot()
    expected = world.hash()
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "dropped", "body": "x"})
    world.restore(snap)
    assert world.hash() == expected
    assert hub.open_world(snapshot=snap).hash() == expected


def test_reset_returns_to_the_seeded_state(hub: Hub) -> None:
    world = hub.open_world(seed=5)
    start = world.hash()
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    world.reset()
    assert world.hash() == start


def test_diff_lists_changes_per_service(hub: Hub) -> None:
    world = hub.open_world(seed=6)
    world.call("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})
    changes = world.diff()
    assert list(changes) == ["email"]
    assert any(c.op == "add" and c.path.startswith("/messages/") for c in changes["email"])


def test_unknown_and_unmounted_tools_get_a_recovery_hint(hub: Hub) -> None:
    world = hub.open_world(services=["email"], seed=0)
    envelope = world.call("crm__list_deals", {})
    assert envelope["error"]["code"] == 404
    assert "list_services" in envelope["error"]["message"]


def test_closed_world_refuses_calls(hub: Hub) -> None:
    world = hub.open_world(seed=0)
    world.close()
    assert world.call("email__list_messages", {})["error"]["code"] == 410
    assert world.id not in hub.worlds
