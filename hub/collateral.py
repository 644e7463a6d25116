"""Collateral damage: every change an episode made, compared with the changes its task allows.

A world's change set is described in **units**, one per thing that can be explained or not:

- ``create``: one new record in a collection (its id does not matter, only how many were made);
- ``delete``: record ``record_id`` of a collection is gone;
- ``update``: record ``record_id`` (or, with ``record_id`` empty, a top-level state field) changed
  in ``field``; for list fields also how many items were added or removed (``items``).

A collection is a top-level state field holding records by id (``tickets``, ``messages``), or for
simulated services each ``collections/<name>``. Fields a service declares as maintained by the
system itself (``Service.system_fields``: timestamps, counters, id sequences) never count, and
neither do reads, which change nothing.

The collateral criterion of a task stores the units of the oracle's own run as its
**allowances**: an episode passes when every unit it produced is covered (at most as many
creates per collection, only the records the oracle deletes, only the fields the oracle changes
on each record, no more list items added or removed than the oracle's). Values are not compared
here: the positive criteria check what the values must be.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from servers.state import canonical_json

NESTED = "collections"
"""The state field under which a simulated service keeps its collections (``collections/<name>``)."""


class Unit(BaseModel):
    """One change: created record, deleted record, or a changed field of a record or state."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Literal["create", "delete", "update"]
    service: str
    collection: str = ""
    record_id: str = ""
    field: str = ""
    items: int = Field(default=0, ge=0, description="List items added plus removed (list fields).")

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.op, self.service, self.collection, self.record_id, self.field)

    def describe(self) -> str:
        where = f"{self.service}.{self.collection}" if self.collection else self.service
        if self.op == "create":
            return f"a new record in {where}"
        if self.op == "delete":
            return f"{where} record {self.record_id!r} deleted"
        target = f"{where} record {self.record_id!r}" if self.record_id else where
        extra = f" ({self.items} list item(s))" if self.items else ""
        return f"{target} field {self.field!r} changed{extra}"


def _is_collection(value: Any) -> bool:
    # States are typed: a dict field's values are all of one kind, so the first one tells.
    return isinstance(value, dict) and bool(value) and isinstance(next(iter(value.values())), dict)


def _collections(before: Mapping[str, Any], after: Mapping[str, Any]) -> Iterable[tuple[str, Any, Any]]:
    """(collection name, records before, records after) of a state, and ("", field, value) pairs
    for the other top-level fields (as one-field collections of the empty name)."""
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        if old is new or old == new:
            continue
        if key == NESTED and isinstance(old or {}, dict) and isinstance(new or {}, dict):
            for name in sorted((old or {}).keys() | (new or {}).keys()):
                inner_old, inner_new = (old or {}).get(name) or {}, (new or {}).get(name) or {}
                if inner_old is not inner_new and inner_old != inner_new:
                    yield f"{NESTED}/{name}", inner_old, inner_new
        elif (_is_collection(old) or old in (None, {})) and (_is_collection(new) or new in (None, {})):
            yield key, old or {}, new or {}
        else:
            yield "", {key: old}, {key: new}


def _list_items(old: list[Any], new: list[Any]) -> int:
    before = Counter(canonical_json(v) for v in old)
    after = Counter(canonical_json(v) for v in new)
    return sum(((after - before) + (before - after)).values())


def _field_units(
    service: str,
    collection: str,
    record_id: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    ignore: frozenset[str],
) -> list[Unit]:
    units = []
    for name in sorted(old.keys() | new.keys()):
        if name in ignore:
            continue
        a, b = old.get(name), new.get(name)
        if a is b or a == b:
            continue
        items = _list_items(a, b) if isinstance(a, list) and isinstance(b, list) else 0
        if isinstance(a, list) and isinstance(b, list) and items == 0:
            continue  # only reordered
        units.append(
            Unit(op="update", service=service, collection=collection, record_id=record_id, field=name, items=items)
        )
    return units


def units(
    initial: Mapping[str, Any], final: Mapping[str, Any], ignore: Mapping[str, Iterable[str]] | None = None
) -> list[Unit]:
    """The change units between two ``{service: state JSON}`` maps; ``ignore`` names, per service,
    the system-maintained fields that never count."""
    found: list[Unit] = []
    skip = {name: frozenset(fields) for name, fields in (ignore or {}).items()}
    for service in sorted(initial.keys() | final.keys()):
        before, after = initial.get(service) or {}, final.get(service) or {}
        if before is after or before == after:
            continue
        fields = skip.get(service, frozenset())
        for collection, old, new in _collections(before, after):
            if not collection:
                found.extend(_field_units(service, "", "", old, new, fields))
                continue
            for rid in sorted(old.keys() | new.keys()):
                a, b = old.get(rid), new.get(rid)
                if a is b:
                    continue
                if a is None:
                    found.append(Unit(op="create", service=service, collection=collection))
                elif b is None:
                    found.append(Unit(op="delete", service=service, collection=collection, record_id=rid))
                elif a != b:
                    found.extend(_field_units(service, collection, rid, a, b, fields))
    return found


def allowances(changes: Iterable[Unit]) -> list[Unit]:
    """Units merged into allowances: creates counted per collection (``items`` holds the count),
    updates kept per record and field with their list items, deletes per record."""
    merged: dict[tuple[str, str, str, str, str], Unit] = {}
    for unit in changes:
        seen = merged.get(unit.key)
        if unit.op == "create":
            count = (seen.items if seen else 0) + 1
            merged[unit.key] = unit.model_copy(update={"items": count})
        elif seen is None:
            merged[unit.key] = unit
    return [merged[k] for k in sorted(merged)]


def unexplained(changes: Iterable[Unit], allowed: Iterable[Unit]) -> list[Unit]:
    """The changes no allowance covers (creates beyond the allowed count included)."""
    budget = {unit.key: unit for unit in allowed}
    made: Counter[tuple[str, str, str, str, str]] = Counter()
    out = []
    for unit in changes:
        allowance = budget.get(unit.key)
        if allowance is None:
            out.append(unit)
        elif unit.op == "create":
            made[unit.key] += 1
            if made[unit.key] > allowance.items:
                out.append(unit)
        elif unit.op == "update" and unit.items > allowance.items:
            out.append(unit)
    return out
