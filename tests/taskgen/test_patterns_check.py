"""``compoworld tasks patterns``: what a pattern author reads after an edit."""

from __future__ import annotations

import pytest

import taskgen.patterns_check as patterns_check
from taskgen.pattern import Pattern, load_patterns


def test_a_reaction_kept_tasks_went_without_is_counted_as_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    data = next(p for p in load_patterns() if p.id == "lease_move_out").model_dump(exclude={"rules"})
    data["reactions"].append(
        {"id": "order_flowers", "op": ["create"], "entity": ["flower_order"], "optional": True,
         "ask": ["Order flowers for the new tenant."]}
    )  # fmt: skip
    monkeypatch.setattr(patterns_check, "load_patterns", lambda: (Pattern.model_validate(data),))
    row = patterns_check.check_patterns(3, 0)["patterns"][0]
    assert row["kept"] == 3  # an optional reaction no service offers does not stop the task ...
    assert row["dropped"] == {"order_flowers": 3}  # ... but the author sees it never happens
