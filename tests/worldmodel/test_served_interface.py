"""The world model's services serve what they served before their specs moved to the catalog format.

``served_before_unification.json`` was dumped from the services as built from the world model's
former spec format: every tool's name, kind, description, input and output schema (as served, in
the response envelope) and metadata, and a fixed script of calls (arguments drawn once, creates
first, ids threaded) with the hash of every answer and of the final states, world seed 0. The
specs in the catalog format reproduce both exactly, with one deliberate addition: the fields of
stored records name their business role (``x-role``), as every catalog record field of an
ambiguous type must (spec lint). A deliberate change of a served schema or of the rules backend
changes the fixture with it: the script's hash was re-pinned on 2026-12-05, when a lookup's answer
came to be drawn from its question (the required arguments, text case-folded) so that the same
question gets the same answer however it is asked; and again later that day, when five of the
services gained what the lookups of ``taskgen/workflows/lookups2.json`` ask (parcels tracks any
carrier's number, news a company's coverage, stocks finds a company's ticker where it searched
symbols and types its price, translate types its translation, flights takes flight numbers as ground
handling records them, the date of a status optional): their tools were re-dumped, the script's
symbol searches became ticker look-ups, its flight numbers and tickers the stricter forms (tickers
of 3 to 5 letters and gates of a letter and 2 or 3 digits, so that no reported answer is a letter or
two that any instruction holds), and it calls the new tools; and once more when the rules backend
made a quote's figures follow from its price (a daily move within 10%, the day's range holding the
price), a translation bill its text's length (its answer still drawn, so that no policy can
write it without calling the tool) and a ticker name one company with one exchange and currency
whichever tool is asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servers.construction.spec import load_catalog
from servers.roles import ROLE_KEY
from servers.state import stable_hash
from worldmodel.catalog import SPECS_DIR, simulated_services

BEFORE = json.loads((Path(__file__).parent / "served_before_unification.json").read_text())
SERVICES = {s.name: s for s in simulated_services(routed=False)}
SPECS = {s.name: s for s in load_catalog(SPECS_DIR)}


def _added_roles(before: Any, now: Any, path: str, found: dict[str, str]) -> Any:
    """``now`` without the ``x-role`` keys that ``before`` lacks, collected into ``found`` by path."""
    if not isinstance(now, dict) or not isinstance(before, dict):
        return now
    out = {}
    for key, value in now.items():
        if key == ROLE_KEY and key not in before:
            found[path] = value
            continue
        out[key] = _added_roles(before.get(key), value, f"{path}/{key}", found)
    return out


def _orders(schema: Any, path: str = "") -> list[tuple[str, list[str]]]:
    """Property names in order, of every object in the schema (the rules backend draws values in it)."""
    if not isinstance(schema, dict):
        return []
    found = [(path, list(schema["properties"]))] if isinstance(schema.get("properties"), dict) else []
    for key, value in schema.items():
        found += _orders(value, f"{path}/{key}") if isinstance(value, dict) else []
    return found


def test_every_service_served_before_is_still_served() -> None:
    # services added since the unification are checked by the catalog's own tests
    assert set(BEFORE["services"]) <= set(SERVICES)


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
    record_roles = {(f, s.role) for e in SPECS[name].entities.values() for f, s in e.fields.items() if s.role}
    for tool_name, was in before["tools"].items():
        tool = service.tools[tool_name]
        assert tool.meta is not None
        added: dict[str, str] = {}
        now: dict[str, Any] = {
            "kind": tool.kind,
            "description": tool.description,
            "input_schema": tool.input_schema,
            "output_schema": _added_roles(was["output_schema"], tool.output_schema, "", added),
            "meta": tool.meta.to_json(),
        }
        for key in was:
            assert now[key] == was[key], f"{name}.{tool_name}: {key} differs"
        for schema in ("input_schema", "output_schema"):
            assert _orders(now[schema]) == _orders(was[schema]), f"{name}.{tool_name}: {schema} order"
        # the one addition: roles of stored records' fields, as the spec declares them
        assert {(path.split("/")[-1], role) for path, role in added.items()} <= record_roles, added
        if tool.meta.op in ("create", "get", "update", "list"):
            assert {f for f, _ in record_roles} <= {path.split("/")[-1] for path in added} | {"created_at"}


def test_a_scripted_sequence_of_calls_ends_in_the_same_state() -> None:
    script = BEFORE["script"]
    states = {name: SERVICES[name].seed_state(0) for name in BEFORE["services"]}
    envelopes = [SERVICES[svc].call(states[svc], tool, args) for svc, tool, args in script["calls"]]
    snapshots = {name: SERVICES[name].snapshot(state) for name, state in states.items()}
    assert sum(e["success"] for e in envelopes) == script["succeeded"]
    assert stable_hash({"envelopes": envelopes, "states": snapshots}) == script["hash"]
