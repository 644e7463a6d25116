"""The world model's specs: valid simulated specs that pass spec lint, conforming simulated services,
outputs that look like their types."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from servers.conformance import check_service
from servers.construction.lint import spec_lint
from servers.construction.spec import ServiceSpec, load_catalog, load_spec
from servers.population import Population
from servers.registry import all_services
from servers.types import SEMANTIC_KEY, VOCABULARY
from worldmodel import cli
from worldmodel.catalog import SPECS_DIR, simulated_services
from worldmodel.rules import Synthesizer, from_pattern

SERVICES = simulated_services(routed=False)  # the routed catalog ones are covered by test_fromspec
WORLD = Population.generate(0)
LOOKS_LIKE: dict[str, Callable[[Any], bool]] = {
    "email_address": lambda v: re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", v) is not None,
    "date": lambda v: dt.date.fromisoformat(v) is not None,
    "date_time": lambda v: dt.datetime.fromisoformat(v.replace("Z", "+00:00")).tzinfo is not None,
    "url": lambda v: v.startswith(("http://", "https://")),
    "currency_code": lambda v: re.fullmatch(r"[A-Z]{3}", v) is not None,
    "country_code": lambda v: re.fullmatch(r"[A-Z]{2}", v) is not None,
    "phone_number": lambda v: re.fullmatch(r"\+[1-9][0-9]{6,14}", v) is not None,
    "person_name": lambda v: v in {p.name for p in WORLD.people},
    "company_name": lambda v: v in {c.name for c in WORLD.companies},
    "money_amount": lambda v: isinstance(v, int | float) and v >= 0,
}


def test_catalog_has_at_least_ten_simulated_services_of_three_to_twenty_five_tools() -> None:
    specs = load_catalog(SPECS_DIR)
    assert len(specs) >= 10 and all(s.simulated for s in specs)
    assert all(3 <= len(s.tools) <= 25 for s in specs), [(s.name, len(s.tools)) for s in specs]
    assert any(t.op == "create" for s in specs for t in s.tools)


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_simulated_service_conforms(service: Any) -> None:
    report = check_service(service, examples=8)
    assert report.ok, str(report)


def _walk(schema: dict[str, Any], value: Any, found: list[tuple[str, Any]]) -> None:
    if isinstance(value, dict):
        for key, prop in schema.get("properties", {}).items():
            if key in value:
                _walk(prop, value[key], found)
    elif isinstance(value, list):
        for item in value:
            _walk(
                schema.get("items", {}) | ({SEMANTIC_KEY: schema[SEMANTIC_KEY]} if SEMANTIC_KEY in schema else {}),
                item,
                found,
            )
    elif SEMANTIC_KEY in schema and value is not None:
        found.append((schema[SEMANTIC_KEY], value))


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_rules_outputs_look_like_their_semantic_types(service: Any) -> None:
    synthesizer = Synthesizer(WORLD)
    state = service.seed_state(0)
    checked = 0
    for name, tool in service.tools.items():
        for attempt in range(3):
            args = synthesizer.record(tool.input_schema, random.Random(f"{name}:{attempt}"))
            envelope = service.call(state, name, args)
            if not envelope["success"]:
                continue
            values: list[tuple[str, Any]] = []
            _walk(tool.output_schema["properties"]["data"], envelope["data"], values)
            for kind, value in values:
                if kind in LOOKS_LIKE and not (kind in ("person_name", "company_name") and value in args.values()):
                    assert LOOKS_LIKE[kind](value), f"{service.name}.{name}: {kind} {value!r}"
                    checked += 1
    assert checked > 0


def test_invalid_specs_are_rejected_with_the_tool_and_field(tmp_path: Path) -> None:
    spec = json.loads((SPECS_DIR / "flights.json").read_text())
    tool = spec["tools"][0]
    first = next(iter(tool["params"]))
    tool["params"][first]["type"] = "flights.nonsense"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=rf"tool '{tool['name']}' param '{first}': local type 'flights.nonsense'"):
        load_spec(path)


def test_simulated_tools_must_name_known_entities() -> None:
    with pytest.raises(ValueError, match=r"names a known entity.*got 'ghost'"):
        ServiceSpec.model_validate(
            {
                "name": "haunted",
                "category": "test",
                "description": "A haunted house.",
                "simulated": True,
                "tools": [
                    {
                        "name": "get_ghost",
                        "op": "get",
                        "entity": "ghost",
                        "description": "One ghost.",
                        "params": {"ghost_id": {"type": "haunted.ghost_id", "description": "Id of the ghost."}},
                    }
                ],
            }
        )


def test_pattern_generator_matches_its_pattern() -> None:
    rng = random.Random(1)
    for pattern in (r"^[A-Z]{3}$", r"^[A-Z]{2}[0-9]{1,4}$", r"^(GET|POST)/[a-z]+$", r"^\d{3}-\d{2}$"):
        for _ in range(20):
            assert re.fullmatch(pattern.strip("^$"), from_pattern(pattern, rng))


@pytest.mark.parametrize("spec", load_catalog(SPECS_DIR), ids=lambda s: s.name)
def test_simulated_specs_pass_spec_lint(spec: ServiceSpec) -> None:
    assert spec_lint(spec) == []


def test_a_copied_type_is_the_type_of_the_service_it_belongs_to() -> None:
    specs = {s.name: s for s in load_catalog(SPECS_DIR)}
    copies = [(s.name, n, t) for s in specs.values() for n, t in s.types.items() if "." in n]
    # a lookup may take a spec-run service's value (a radiology procedure to code): the same type
    owners = {**{s.name: s for s in load_catalog(SPECS_DIR.parent.parent / "servers" / "catalog")}, **specs}
    assert copies
    for service, name, copied in copies:
        owner, _, bare = name.partition(".")
        if owner not in owners:  # a hand-written service's type (a shop order's tracking number)
            assert owner in all_services(), f"{service}: {name} names no service"  # (which registers its types)
            assert copied.description == VOCABULARY[name], f"{service}: {name} differs from {owner}'s"
            stated = copied.model_dump(exclude_defaults=True, exclude={"description"})
            assert stated and stated == _native_constraints(owner, name, stated), f"{service}: {name} differs"
            continue
        assert copied == owners[owner].types[bare], f"{service}: {name} differs from {owner}'s"


def _native_constraints(service: str, name: str, stated: dict[str, Any]) -> dict[str, Any]:
    """The constraints (those ``stated`` names) of the type ``name`` as the native ``service`` serves it."""
    for tool in all_services()[service].tools.values():
        for prop in tool.input_schema.get("properties", {}).values():
            if prop.get(SEMANTIC_KEY) == name:
                return {k: prop.get(k) for k in stated}
    return {}


def test_worldmodel_check_names_a_lint_problem(tmp_path: Path) -> None:
    data = json.loads((SPECS_DIR / "weather.json").read_text())
    del data["entities"]["subscription"]["fields"]["email"]["role"]
    (tmp_path / "weather.json").write_text(json.dumps(data))
    result = CliRunner().invoke(cli.app, ["check", "--specs", str(tmp_path), "--examples", "2"])
    assert result.exit_code == 1, result.output
    assert "lint: entity 'subscription' field 'email': an email_address field needs a role" in result.output
    assert CliRunner().invoke(cli.app, ["check", "fx", "--examples", "2"]).exit_code == 0
