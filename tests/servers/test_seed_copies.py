"""``from:<ref>.<field>`` seeds: a child record copies its parent's value instead of drawing its own."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from servers.construction.loader import load_service
from servers.construction.spec import ServiceSpec, spec_problems
from servers.construction.template import compile_spec
from servers.engine import build_service
from tests.servers.test_engine import SPEC


def _spec(**run_fields: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(SPEC)
    data["entities"]["van"]["seed"]["count"] = 6
    data["entities"]["run"]["seed"]["count"] = 12
    data["entities"]["run"]["fields"] |= run_fields
    return data


COPYING = _spec(
    van_plate={"type": "title", "seed": "from:van_id.plate", "create": False, "optional": True},
    summary={
        "type": "note",
        "seed": "text:Run of {van_plate} to {city}",
        "create": False,
        "optional": True,
        "seed_null": 0,
    },
)


def test_a_seeded_child_carries_its_parent_s_value_and_text_can_name_it() -> None:
    spec = ServiceSpec.model_validate(COPYING)
    assert spec_problems(spec) == []
    state = build_service(spec).seed_state(0)
    assert len({r.van_id for r in state.runs.values()}) > 1
    for run in state.runs.values():
        assert run.van_plate == state.vans[run.van_id].plate
        assert run.summary == f"Run of {run.van_plate} to {run.city}"


def test_the_engine_and_ejected_code_seed_copies_alike() -> None:
    spec = ServiceSpec.model_validate(COPYING)
    engine, ejected = build_service(spec), load_service(compile_spec(spec, formatted=False), "depot", "copies")
    for seed in (0, 5):
        assert engine.state_hash(engine.seed_state(seed)) == ejected.state_hash(ejected.seed_state(seed))


@pytest.mark.parametrize(
    ("field", "complaint"),
    [
        ({"type": "title", "seed": "from:city.plate"}, "must name a drawn reference field"),
        ({"type": "title", "seed": "from:van_id.colour"}, "'van' has no field 'colour'"),
        ({"type": "city", "seed": "from:van_id.plate"}, "copies a 'title' into a 'city' field"),
        ({"type": "depot.km", "seed": "from:van_id.km"}, None),
    ],
)
def test_spec_lint_checks_what_a_copy_names(field: dict[str, Any], complaint: str | None) -> None:
    data = _spec(copied=field | {"create": False, "optional": True})
    if complaint is None:
        assert spec_problems(ServiceSpec.model_validate(data)) == []
    else:
        with pytest.raises(ValueError, match=f"field 'copied': seed .*{re.escape(complaint)}"):
            ServiceSpec.model_validate(data)


def test_a_copy_into_a_required_field_needs_a_required_reference() -> None:
    data = _spec(copied={"type": "title", "seed": "from:van_id.plate"})
    data["entities"]["run"]["fields"]["van_id"]["optional"] = True
    data["tools"][-2]["fields"].append("copied")  # plan_run sets it, so it may be required
    with pytest.raises(ValueError, match="may copy nothing"):
        ServiceSpec.model_validate(data)
