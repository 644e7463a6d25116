"""Record-level copy-on-write (servers.state.RecordDict): a lazy copy of a state copies the
records a write reaches, never its source's, and snapshots like a whole copy."""

from __future__ import annotations

import copy
import pickle
from typing import Any

from pydantic import BaseModel

from servers.state import RecordDict, lazy_copy, peek_values, peeking, snapshot


class Item(BaseModel):
    id: str
    tags: list[str] = []
    qty: int = 0


class Store(BaseModel):
    items: dict[str, Item] = {}
    note: str = ""


def _source() -> tuple[Store, dict[str, Any]]:
    state = Store(items={f"i{n}": Item(id=f"i{n}", qty=n) for n in range(5)}, note="seeded")
    return state, snapshot(state)


def _copy() -> tuple[Store, Store, dict[str, Any]]:
    source, snap = _source()
    made = lazy_copy(source, snap)
    assert made is not None
    return source, made, snap


def test_a_write_to_one_record_copies_that_record_only() -> None:
    source, state, snap = _copy()
    state.items["i2"].qty = 99
    raw = dict.items(state.items)
    private = [key for key, item in raw if item is not dict.__getitem__(source.items, key)]
    assert private == ["i2"]
    after = snapshot(state)
    assert after["items"]["i2"]["qty"] == 99
    assert after["items"]["i1"] is snap["items"]["i1"]  # untouched records reuse the source's snapshot
    assert snapshot(source) == snap and source.items["i2"].qty == 2


def test_every_way_of_handing_out_records_hands_out_private_copies() -> None:
    for take in (
        lambda d: list(d.values()),
        lambda d: [v for _, v in d.items()],
        lambda d: list(dict(d).values()),
        lambda d: list({**d}.values()),
        lambda d: list(d.copy().values()),
        lambda d: [d.get("i3")],
        lambda d: [d.pop("i3")],
        lambda d: [d.setdefault("i3", None)],
    ):
        source, state, snap = _copy()
        for item in take(state.items):
            item.tags.append("changed")
        assert snapshot(source) == snap, take


def test_reading_without_copying_leaves_records_shared() -> None:
    source, state, _ = _copy()
    assert [i.qty for i in peek_values(state.items)] == [0, 1, 2, 3, 4]
    with peeking():
        assert state.items["i4"].qty == 4
    assert all(item is dict.__getitem__(source.items, key) for key, item in dict.items(state.items))


def test_a_copy_of_a_copy_shares_through_both() -> None:
    source, first, snap = _copy()
    first.items["i0"].qty = 10
    first_snap = snapshot(first)
    second = lazy_copy(first, first_snap)
    assert second is not None
    second.items["i0"].qty = 20
    second.items["i1"].qty = 21
    assert snapshot(first) == first_snap and snapshot(source) == snap
    assert [i.qty for i in second.items.values()] == [20, 21, 2, 3, 4]


def test_added_and_removed_records_snapshot_like_a_whole_dump() -> None:
    _, state, _ = _copy()
    state.items["new"] = Item(id="new", qty=7)
    del state.items["i0"]
    state.items["i1"].qty = 5
    assert snapshot(state) == state.model_dump(mode="json")
    assert list(snapshot(state)["items"]) == ["i1", "i2", "i3", "i4", "new"]


def test_a_record_collection_pickles_and_copies_as_a_plain_dict() -> None:
    source, state, snap = _copy()
    items = state.items
    assert isinstance(items, RecordDict)
    for clone in (pickle.loads(pickle.dumps(items)), copy.deepcopy(items)):
        assert type(clone) is dict and clone["i1"].qty == 1
        clone["i1"].qty = 50
    assert snapshot(source) == snap
