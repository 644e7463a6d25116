"""Stamps a service keeps itself (created/updated, role ``system``) are never carried into another step."""

from __future__ import annotations

from typing import Any

from hub.core import Hub
from taskgen.generate import generate


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            return [str(value["$ref"])]
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def test_no_step_is_given_a_system_stamp_of_an_earlier_result(hub: Hub) -> None:
    tasks = generate(40, seed=23, hub=hub).tasks
    carried = 0
    for task in tasks:
        for step in task.plan:
            for ref in _refs(step.arguments):
                carried += 1
                parts = ref.split(".")
                key, source = parts[-1], task.plan[int(parts[1])].tool.split("__")[0]
                native = hub.registry.services[source].native
                assert native is None or key not in native.system_fields, (task.id, ref)
                assert key not in ("created_at", "updated_at"), (task.id, ref)
    assert carried > 20
