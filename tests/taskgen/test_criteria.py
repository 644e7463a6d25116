"""Rubric criteria are models from the moment a generator makes them, numbered as they are made."""

from __future__ import annotations

import random

from hub.core import Hub
from hub.rubric import CollateralCriterion, RecordCriterion
from taskgen.compose import collateral_criterion, effect_criteria, system_fields
from taskgen.generate import walker_for
from taskgen.walk import WalkError


def test_effect_criteria_are_record_models_numbered_from_first(hub: Hub) -> None:
    walker = walker_for(hub, 5)
    for index in range(40):
        rng = random.Random(f"criteria:{index}")
        try:
            walk = walker.walk(rng, rng.randint(3, 8))
        except WalkError:
            continue
        try:
            final = walk.world.states(walk.services)
            writes = [s for s in walk.steps if s.entry.kind == "write" and s.changes]
            made = [effect_criteria(s, s.changes or [], final, walk.mentions, frozenset(), first=7) for s in writes]
            one = next((m for m in made if m), None)
            if one is None:
                continue
            assert all(isinstance(c, RecordCriterion) for c in one)
            assert [c.id for c in one] == [f"c{n}" for n in range(7, 7 + len(one))]
            initial = walk.world.initial_states(walk.services)
            negative = collateral_criterion(initial, final, system_fields(hub, walk.services))
            assert isinstance(negative, CollateralCriterion) and negative.id == "n1" and negative.allowed
            return
        finally:
            walk.world.close()
    raise AssertionError("no walk with a write in 40 tries")
