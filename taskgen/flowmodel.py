"""What an instantiated workflow is made of: located records, reactions done, rules, stages.

A workflow (:mod:`taskgen.workflow`) runs in *stages*: the first starts from a seeded record (the
trigger the instruction names), and each later one starts from a record an earlier stage made
(the invoice just opened becomes the trigger of "an invoice was issued"), which is how a task
chains patterns over the semantic graph of business workflows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from hub.collateral import Unit
from hub.registry import ToolEntry
from hub.world import World
from servers.roles import ROLE_KEY
from taskgen.graph import field_types
from taskgen.pattern import Pattern, Reaction, Rule, by_type
from taskgen.walk import Carried, StepInfo, resolve_schema


@dataclass
class Located:
    """A record a step produced or found: where it is in the step's envelope, and what it holds."""

    step: int
    path: str
    record: dict[str, Any]
    schema: dict[str, Any]
    entity: str
    service: str
    anchor: str | None = None

    def fields(self, role: str, kind: str | None = None) -> list[tuple[str, Any, str]]:
        """(field, value, semantic type) of the fields declaring ``role`` (of type ``kind``).

        A *measure* (:data:`MEASURES`: a quantity, a duration, a percentage, a rating) has no role:
        ``role`` names its semantic type, and only a record with exactly one such field has it
        ("orders of more than 40 units" must say which number it means). So does a type no role
        qualifies (``city``, ``currency_code``: a lookup's input)."""
        out = []
        index = _field_index(self.schema.get("properties", {}))
        measure = by_type(role)
        if measure and sum(1 for _, types in index.values() if types == {role}) != 1:
            return []
        for name, value in self.record.items():
            declared, types = index.get(name, (None, frozenset()))
            if (types != {role} if measure else declared != role) or value in (None, "", []):
                continue
            if len(types) != 1 or (kind is not None and kind not in types):
                continue
            if isinstance(value, list):
                value = value[0] if value and isinstance(value[0], str | int | float) else None
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                continue
            out.append((name, value, next(iter(types))))
        return out


_FIELD_INDEX: dict[int, tuple[dict[str, Any], dict[str, tuple[str | None, frozenset[str]]]]] = {}


def _field_index(props: dict[str, Any]) -> dict[str, tuple[str | None, frozenset[str]]]:
    """Field -> (declared role, semantic types) of a record schema's properties, per schema object
    (schemas are read-only and kept alive by their tools, so their ids are not reused)."""
    found = _FIELD_INDEX.get(id(props))
    if found is None or found[0] is not props:
        index = {}
        for name, raw in props.items():
            # the role sits beside an optional's anyOf, or inside the one branch it resolves to
            declared = raw.get(ROLE_KEY) or resolve_schema(dict(raw), {}).get(ROLE_KEY)
            index[name] = (declared, frozenset(field_types(raw)))
        found = _FIELD_INDEX[id(props)] = (props, index)
    return found[1]


@dataclass
class Done:
    """A reaction carried out: its steps (lookups first, the write last) and what it asked for."""

    reaction: Reaction
    steps: list[int]
    record: Located | None
    service: str
    slots: dict[str, str] = field(default_factory=dict)
    tool: str = ""  # the write's qualified name (a skipped reaction's steps were in a discarded fork)
    answer: tuple[str, Any] | None = None  # a lookup's answer: (output field, value), reported


@dataclass
class Branch:
    """A rule of the task: its threshold, and whether it held (and so changed the workflow)."""

    rule: Rule
    threshold: float
    value: float
    held: bool
    text: str = ""
    unit: str = ""  # the currency the compared amount is in, when its record says
    kind: str = "amount"  # "amount", "date" (value and threshold are day numbers) or a measure's type


@dataclass
class Stage:
    """One pattern of a workflow: its trigger, the reactions done, its rule."""

    pattern: Pattern
    trigger: Located
    done: list[Done] = field(default_factory=list)
    branch: Branch | None = None
    skipped: Done | None = None  # the reaction its rule held against, as it would have been done
    skipped_after: list[Done] = field(default_factory=list)  # those acting on its record, likewise
    chained: bool = False  # the trigger is a record an earlier stage made
    model: Stage | None = None  # a second record handled like the first: the stage it repeats


@dataclass
class Flow:
    """An executed workflow: its stages, the steps, the world they ran in, and what the
    instruction must state (``given``), name (``references``) and the rubric check (``checked``).
    ``pattern``, ``trigger``, ``done``, ``branch`` and ``skipped`` are those of the current stage."""

    stages: list[Stage]
    steps: list[StepInfo]
    world: World
    checked: dict[int, set[str]] = field(default_factory=dict)
    mentions: dict[tuple[int, str], Carried] = field(default_factory=dict)
    references: list[dict[str, Any]] = field(default_factory=list)  # records the instruction names (ambiguity gate)
    trap: dict[str, Any] | None = None  # the near-duplicate the trigger is told apart from
    given: list[Any] = field(default_factory=list)  # values the instruction states
    mounted_extra: list[str] = field(default_factory=list)  # services of skipped reactions
    unmounted: set[str] = field(default_factory=set)  # services that would answer a hop otherwise
    refused: set[str] = field(default_factory=set)  # containers a try of the current write was refused in
    today: str = ""  # the world's date, as the instruction says it
    clock: str = "2026-01-01T00:00:00+00:00"  # the world's now (ISO 8601)
    retired: list[World] = field(default_factory=list)  # worlds a later stage forked from
    tolerated: list[Unit] = field(default_factory=list)  # field changes another free choice would cause

    @property
    def stage(self) -> Stage:
        return self.stages[-1]

    @property
    def pattern(self) -> Pattern:
        return self.stage.pattern

    @property
    def trigger(self) -> Located:
        return self.stage.trigger

    @trigger.setter
    def trigger(self, value: Located) -> None:
        self.stage.trigger = value

    @property
    def done(self) -> list[Done]:
        return self.stage.done

    @property
    def branch(self) -> Branch | None:
        return self.stage.branch

    @property
    def root(self) -> Located:
        """The trigger of the first stage: the record the instruction names."""
        return self.stages[0].trigger

    @property
    def all_done(self) -> list[Done]:
        return [d for stage in self.stages for d in stage.done]

    @property
    def services(self) -> list[str]:
        triggers = [s.trigger.service for s in self.stages]
        # every service a step calls (a hop's lookup reads a third service), and the skipped ones
        called = (s.entry.service for s in self.steps)
        return list(dict.fromkeys([*triggers, *(d.service for d in self.all_done), *called, *self.mounted_extra]))

    def spoken_when(self, days: int) -> str:
        """The working day ``days`` after today, at 10:00, as the instruction says a time."""
        moment = dt.datetime.fromisoformat(self.clock) + dt.timedelta(days=days)
        while moment.weekday() >= 5:
            moment += dt.timedelta(days=1)
        return f"{moment:%A} {moment.day} {moment:%B %Y} at 10:00 UTC"

    def close(self) -> None:
        for world in [self.world, *self.retired]:
            world.close()


def own_role(prop: dict[str, Any], defs: dict[str, Any]) -> str | None:
    """A record field's role; for a list of sub-records (an event's attendees), the role of the
    one sub-field that has one (the attendee's email: ``guest``)."""
    resolved = resolve_schema(dict(prop), defs)
    if prop.get(ROLE_KEY) or resolved.get(ROLE_KEY):
        return str(prop.get(ROLE_KEY) or resolved[ROLE_KEY])
    items = resolve_schema(dict(resolved.get("items") or {}), defs) if resolved.get("type") == "array" else {}
    if items.get(ROLE_KEY):
        return str(items[ROLE_KEY])
    inner = {resolve_schema(dict(p), defs).get(ROLE_KEY) for p in items.get("properties", {}).values()} - {None}
    return str(next(iter(inner))) if len(inner) == 1 else None


def record_schema(entry: ToolEntry) -> dict[str, Any]:
    """The schema of one record a tool returns (its data, the items of a listing)."""
    out = dict(entry.output_schema or {})
    defs = out.get("$defs", {})
    data = resolve_schema(out.get("properties", {}).get("data", {}), defs)
    if data.get("type") == "array":
        return resolve_schema(data.get("items", {}), defs)
    props = data.get("properties", {})
    if "items" in props:
        items = resolve_schema(props["items"], defs)
        if items.get("type") == "array":
            return resolve_schema(items.get("items", {}), defs)
    return data


def is_currency(located: Located, value: str) -> bool:
    props = located.schema.get("properties", {})
    return any(
        located.record.get(name) == value and "currency_code" in field_types(prop) for name, prop in props.items()
    )


def round_amount(value: float) -> float:
    """A threshold as a person states it: two significant figures."""
    if value <= 0:
        return value
    digits = len(str(int(value))) - 2
    step = 10 ** max(digits, 0)
    return float(round(value / step) * step)


def spoken_amount(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
