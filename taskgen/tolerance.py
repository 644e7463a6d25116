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
from taskgen.walk import StepInfo, resolve_schema

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
    for name, value in step.given.items():
        item = resolve_schema(dict(props.get(name) or {}), defs)
        options = [v for v in item.get("enum", []) if v != value][:ALTERNATIVES]
        for option in options if name not in checked else []:
            scratch = world.fork()
            try:
                scratch.rollback(service, saved[service].share())
                if scratch.call(entry.qualified, {**step.resolved, name: option}).get("success"):
                    changed = units({service: before}, {service: scratch.slot(service).snapshot()}, system)
                    out.extend(u for u in changed if u.op == "update")
            finally:
                scratch.close()
    return out
