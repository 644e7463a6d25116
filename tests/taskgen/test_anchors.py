"""Records are named by values only one record holds: a careful agent never has to guess."""

from __future__ import annotations

import re

from hub.core import Hub
from taskgen.generate import generate


def _holders(state: dict[str, object], value: str) -> int:
    count = 0
    for collection in state.values():
        if isinstance(collection, dict):
            count += sum(1 for r in collection.values() if isinstance(r, dict) and value in r.values())
    return count


def test_the_start_record_is_named_by_a_value_no_other_record_holds(hub: Hub) -> None:
    tasks = generate(40, seed=17, hub=hub).tasks
    assert tasks
    for task in tasks:
        service = task.plan[0].tool.split("__")[0]
        anchor = re.findall(r"'([^']+)'", task.instruction)[0]
        state = hub.seeded_slot(service, task.seed).snapshot()
        assert _holders(state, anchor) == 1, (task.id, service, anchor)
