"""The world model's services serve what they served before their specs moved to the catalog format.

``served_before_unification.json`` was dumped from the services as built from the world model's
former spec format: every tool's name, kind, description, input and output schema (as served, in
the response envelope) and metadata, and a fixed script of calls (arguments drawn once, creates
first, ids threaded) with the hash of every answer and of the final states, world seed 0. The
specs in the catalog format must reproduce both exactly. A deliberate change of a served schema or
of the rules backend changes the fixture with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servers.state import stable_hash
from worldmodel.catalog import simulated_services

BEFORE = json.loads((Path(__file__).parent / "served_before_unification.json").read_text())
SERVICES = {s.name: s for s in simulated_services(routed=False)}


def test_the_same_services_are_served() -> None:
    assert sorted(SERVICES) == sorted(BEFORE["services"])


@pytest.mark.parametrize("name", sorted(BEFORE["services"]))
def test_every_tool_serves_the_same_interface(name: str) -> None:
    before = BEFORE["services"][name]
    service = SERVICES[name]
    assert (service.version, service.category, service.description) == (
        before["version"],
        before["category"],
        before["description"],
    )
    assert list(service.tools) == list(before["tools"])
    for tool_name, was in before["tools"].items():
        tool = service.tools[tool_name]
        assert tool.meta is not None
        now: dict[str, Any] = {
            "kind": tool.kind,
            "description": tool.description,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "meta": tool.meta.to_json(),
        }
        for key in was:
            assert now[key] == was[key], f"{name}.{tool_name}: {key} differs"
        # property order matters too: the rules backend draws values in that order
        assert json.dumps(now["output_schema"]) == json.dumps(was["output_schema"]), f"{name}.{tool_name}: order"
        assert list(tool.input_schema["properties"]) == list(was["input_schema"]["properties"])


def test_a_scripted_sequence_of_calls_ends_in_the_same_state() -> None:
    script = BEFORE["script"]
    states = {name: service.seed_state(0) for name, service in SERVICES.items()}
    envelopes = [SERVICES[svc].call(states[svc], tool, args) for svc, tool, args in script["calls"]]
    snapshots = {name: SERVICES[name].snapshot(state) for name, state in states.items()}
    assert sum(e["success"] for e in envelopes) == script["succeeded"]
    assert stable_hash({"envelopes": envelopes, "states": snapshots}) == script["hash"]
