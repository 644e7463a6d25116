"""``seed_by_state``: a field seeded by its record's lifecycle state (a planned run has no distance yet)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from servers.construction.loader import load_service
from servers.construction.spec import ServiceSpec, spec_problems
from servers.construction.template import compile_spec
from servers.engine import build_service
from tests.servers.test_engine import SPEC


def _spec(**distance: Any) -> dict[str, Any]:
    data = copy.deepcopy(SPEC)
    data["entities"]["van"]["seed"]["count"] = 4
    data["entities"]["run"]["seed"]["count"] = 16
    data["entities"]["run"]["fields"]["distance"] |= distance
    return data


BY_STATE = _spec(seed="number:10..500", seed_null=0, seed_by_state={"planned": "none"})


def test_a_field_seeded_by_state_follows_its_record_s_state() -> None:
    spec = ServiceSpec.model_validate(BY_STATE)
    assert spec_problems(spec) == []
    runs = list(build_service(spec).seed_state(0).runs.values())
    assert {r.status for r in runs} == {"planned", "done"}
    for run in runs:
        assert (run.distance is None) == (run.status == "planned"), run


def test_the_engine_and_ejected_code_seed_by_state_alike() -> None:
    spec = ServiceSpec.model_validate(BY_STATE)
    engine, ejected = build_service(spec), load_service(compile_spec(spec, formatted=False), "depot", "bystate")
    for seed in (0, 5):
        assert engine.state_hash(engine.seed_state(seed)) == ejected.state_hash(ejected.seed_state(seed))


@pytest.mark.parametrize(
    ("distance", "complaint"),
    [
        ({"seed_by_state": {"parked": "none"}}, "names 'parked', no state of 'run'"),
        ({"seed_by_state": {"done": "int:oops"}}, "must be int:<lo>..<hi> (state 'done')"),
    ],
)
def test_spec_lint_checks_the_states_and_their_seeds(distance: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        ServiceSpec.model_validate(_spec(**distance))


def test_the_state_field_itself_cannot_be_seeded_by_state() -> None:
    data = copy.deepcopy(SPEC)
    data["entities"]["run"]["fields"]["status"]["seed_by_state"] = {"done": "choice:done"}
    with pytest.raises(ValueError, match="may not seed its state field"):
        ServiceSpec.model_validate(data)
