"""What an agent may change besides what the oracle changed: the cascade of a free choice.

An argument the instruction does not ask for (a call-to-action's type, a ticket's channel) is the
agent's choice, and the rubric does not check it. A service may cascade that choice into other
fields (a risk call-to-action marks its account at risk); the oracle made one choice, an agent may
make another. So the generator runs each write again, in a fork of the world just before it, with
the other values of every unasked enum argument, and the collateral criterion tolerates the field
changes they make (updates only: never more records created or deleted).
"""

from __future__ import annotations

from typing import Any

from hub.collateral import Unit, units
from hub.core import Hub
from hub.registry import ToolEntry
from hub.world import World
from taskgen.graph import param_types
from taskgen.walk import StepInfo, resolve_schema

NOTES = frozenset({"note", "document_text", "message_text", "payload_text"})
"""Types of an optional text an agent may add to a change (not a title: that would rename)."""
ALTERNATIVES = 4
"""Other values of an unasked choice tried per argument."""


def alternatives(
    hub: Hub, world: World, entry: ToolEntry, step: StepInfo, checked: set[str], saved: dict[str, Any]
) -> list[Unit]:
    """The field changes ``step`` (a write of ``entry`` made in ``world``) would have made with
    another value of an enum argument outside ``checked``; ``saved`` holds the savepoint of its
    service just before it."""
    service = entry.service
    native = hub.registry.services[service].native
    if service not in saved or native is None:
        return []
    defs = entry.input_schema.get("$defs", {})
    props = entry.input_schema.get("properties", {})
    system = {service: sorted(native.system_fields)}
    before = saved[service].snapshot()
    out: list[Unit] = []
    # an optional note on a change to an existing record (a resolution summary when resolving an
    # incident) is the agent's to add: the field it fills is tolerated too
    if entry.meta is not None and entry.meta.op not in ("create", "send"):
        required = set(entry.input_schema.get("required", []))
        kinds = param_types(entry)
        notes = {n: "Noted." for n, k in kinds.items() if k in NOTES and n not in required and n not in step.arguments}
        if notes:
            out.extend(_tried(world, entry, service, saved, before, system, {**step.resolved, **notes}))
    for name, value in step.given.items():
        item = resolve_schema(dict(props.get(name) or {}), defs)
        options = [v for v in item.get("enum", []) if v != value][:ALTERNATIVES]
        for option in options if name not in checked else []:
            out.extend(_tried(world, entry, service, saved, before, system, {**step.resolved, name: option}))
    return out


def _tried(
    world: World,
    entry: ToolEntry,
    service: str,
    saved: dict[str, Any],
    before: Any,
    system: dict[str, list[str]],
    arguments: dict[str, Any],
) -> list[Unit]:
    """The field updates the write makes with ``arguments``, run in a fork just before it."""
    scratch = world.fork()
    try:
        scratch.rollback(service, saved[service].share())
        if scratch.call(entry.qualified, arguments).get("success"):
            changed = units({service: before}, {service: scratch.slot(service).snapshot()}, system)
            return [u for u in changed if u.op == "update"]
        return []
    finally:
        scratch.close()
