"""Simulated outputs respect their arguments and the world: the checker catches each reported defect,
every simulated tool of every spec passes it with the rules backend, and the conformance checker
fails a simulated tool that answers implausibly."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from servers.conformance import check_service, valid_inputs
from servers.population import Population
from servers.values import state_values
from worldmodel.catalog import SimulatedWorld, simulated_specs
from worldmodel.engine import build_service
from worldmodel.plausibility import Violation, check
from worldmodel.rules import RulesBackend, Synthesizer
from worldmodel.spec import SimSpec, SimTool

NOW = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
SPECS = {s.name: s for s in simulated_specs()}


def _tool(service: str, name: str) -> SimTool:
    return next(t for t in SPECS[service].tools if t.name == name)


def _rules(found: list[Violation]) -> set[tuple[str, str]]:
    return {(v.rule, v.field) for v in found}


# --- the checker catches each reported defect (outputs built by hand) -------------------------


def test_directions_from_an_address_to_itself_must_be_zero() -> None:
    args = {"origin": "1 Main St", "destination": "1 main st"}
    output = {
        **args,
        "mode": "driving",
        "distance_km": 2472.0,
        "duration_minutes": 1500,
        "summary": "I-5",
        "steps": [{"instruction": "Go", "distance_km": 2472.0, "duration_minutes": 1500}],
    }
    found = _rules(check(_tool("geocoding", "get_directions"), args, output, NOW))
    assert {("same-place", "distance_km"), ("same-place", "duration_minutes")} <= found
    assert ("same-place", "steps[0].distance_km") in found
    output.update(distance_km=0.0, duration_minutes=0, steps=[])
    assert check(_tool("geocoding", "get_directions"), args, output, NOW) == []


def test_route_speed_and_steps_must_add_up() -> None:
    args = {"origin": "A", "destination": "B", "mode": "walking"}
    output = {
        **args,
        "distance_km": 30.0,
        "duration_minutes": 20,
        "summary": "s",
        "steps": [{"instruction": "Go", "distance_km": 5.0, "duration_minutes": 10}],
    }
    found = _rules(check(_tool("geocoding", "get_directions"), args, output, NOW))
    assert ("speed", "duration_minutes") in found  # 30 km on foot in 20 minutes
    assert ("parts-sum", "steps[].distance_km") in found


def test_fetched_page_is_on_the_asked_domain_and_counts_its_words() -> None:
    args = {"url": "https://example.org/about"}
    text = "Our company builds delivery software for regional partners and publishes a quarterly report."
    output = {
        "url": "https://example.org/about",
        "final_url": "https://other.io/x",
        "title": "About",
        "domain": "walkerltd.com",
        "text": text,
        "language": "en",
        "word_count": 310_129,
        "last_crawled_at": "2026-03-01T00:00:00Z",
    }
    found = check(_tool("websearch", "fetch_page"), args, output, NOW)
    assert {("url-domain", "url"), ("url-domain", "final_url"), ("word-count", "word_count")} <= _rules(found)
    assert any("310129" in v.message and "13 words" in v.message for v in found)
    output.update(domain="example.org", final_url="https://www.example.org/about", word_count=13)
    assert check(_tool("websearch", "fetch_page"), args, output, NOW) == []


def test_company_website_and_domain_agree() -> None:
    output = {
        "company_name": "Acme",
        "website": "https://castillocalhoun.co/",
        "domain": "jonesllc.co",
        "confidence": 80,
    }
    found = check(_tool("websearch", "find_company_website"), {"company_name": "Acme"}, output, NOW)
    assert _rules(found) == {("url-domain", "website")}
    assert "castillocalhoun.co" in str(found[0]) and "jonesllc.co" in str(found[0])


def test_contacts_are_at_the_domain_searched() -> None:
    output = {
        "domain": "acme.com",
        "organization": "Acme",
        "contacts": [
            {
                "email": "ann@other.io",
                "full_name": "Ann Lee",
                "position": "CEO",
                "confidence": 90,
                "source_url": "https://acme.com/team",
            }
        ],
        "total_results": 1,
    }
    found = _rules(check(_tool("websearch", "find_domain_contacts"), {"domain": "acme.com"}, output, NOW))
    assert found == {("email-domain", "contacts[0].email")}


def test_birth_dates_are_in_the_past_and_plausible() -> None:
    tool = _tool("background_check", "get_check")
    record = {"check_id": "BGC-00001", "date_of_birth": "2026-03-07", "created_at": "2026-03-01T10:00:00Z"}
    assert _rules(check(tool, {"check_id": "BGC-00001"}, record, NOW)) == {("birth", "date_of_birth")}
    record["date_of_birth"] = "1850-01-01"
    assert _rules(check(tool, {"check_id": "BGC-00001"}, record, NOW)) == {("birth", "date_of_birth")}
    record["date_of_birth"] = "1988-05-17"
    assert check(tool, {"check_id": "BGC-00001"}, record, NOW) == []


def test_dates_respect_the_world_clock() -> None:
    tool = _tool("background_check", "get_check")
    record = {"estimated_completion_date": "2026-02-15", "created_at": "2026-04-01T00:00:00Z"}
    found = _rules(check(tool, {"check_id": "BGC-00001"}, record, NOW))
    assert found == {("clock", "estimated_completion_date"), ("clock", "created_at")}


def test_a_rate_to_itself_is_one_and_the_inverse_is_its_reciprocal() -> None:
    tool = _tool("fx", "get_latest_rate")
    args = {"base_currency": "USD", "quote_currency": "USD"}
    output = {**args, "rate": 702.28, "inverse_rate": 396.86, "as_of": "2026-03-01T00:00:00Z"}
    found = _rules(check(tool, args, output, NOW))
    assert {("self-rate", "rate"), ("self-rate", "inverse_rate"), ("inverse-rate", "inverse_rate")} <= found
    args = {"base_currency": "USD", "quote_currency": "EUR"}
    output = {**args, "rate": 0.92, "inverse_rate": 1.0869, "as_of": "2026-03-01T00:00:00Z"}
    assert check(tool, args, output, NOW) == []


def test_conversions_and_rate_aggregates_agree() -> None:
    args = {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}
    output = {**args, "rate": 0.92, "converted_amount": 530.0, "as_of": "2026-03-01T00:00:00Z"}
    assert _rules(check(_tool("fx", "convert_currency"), args, output, NOW)) == {("conversion", "converted_amount")}
    history = {"rates": [{"date": "2026-02-01", "rate": 0.9}], "min_rate": 0.95, "max_rate": 0.91, "average_rate": 2}
    found = _rules(check(_tool("fx", "get_rate_history"), {}, history, NOW))
    assert {("order", "min_rate"), ("order", "average_rate")} <= found


def test_currency_matches_the_country() -> None:
    tool = _tool("fx", "get_country_currency")
    output = {"country_code": "DE", "currency_code": "CAD", "name": "x", "symbol": "$", "minor_units": 2}
    assert _rules(check(tool, {"country_code": "DE"}, output, NOW)) == {("country-currency", "currency_code")}
    packages = {"packages": [{"package": "basic", "currency": "CHF", "price": 10}]}
    found = _rules(check(_tool("background_check", "list_packages"), {"country_code": "US"}, packages, NOW))
    assert found == {("country-currency", "packages[0].currency")}
    output["country_code"] = "ZZ"  # a country the checker does not know: not judged
    assert check(tool, {"country_code": "ZZ"}, output, NOW) == []


def test_a_limit_bounds_lists_and_totals_count_them() -> None:
    results = [{"title": "t", "url": "https://a.com/", "domain": "a.com"}] * 3
    output = {"query": "q", "results": results, "total_results": 2}
    found = _rules(check(_tool("websearch", "web_search"), {"query": "q", "limit": 2}, output, NOW))
    assert found == {("limit", "results"), ("count", "total_results")}


def test_low_is_not_above_high() -> None:
    output = {"city": "Berlin", "date": "2026-03-03", "high_c": -11.0, "low_c": 5.8}
    found = _rules(check(_tool("weather", "get_forecast"), {"city": "Berlin", "date": "2026-03-03"}, output, NOW))
    assert found == {("order", "low_c")}


def test_what_the_caller_gave_is_not_judged() -> None:
    tool = _tool("background_check", "order_background_check")
    args = {"candidate_name": "A B", "date_of_birth": "2030-01-01"}
    assert check(tool, args, {"candidate_name": "A B", "date_of_birth": "2030-01-01"}, NOW) == []


# --- every simulated tool passes, with the rules backend ---------------------------------------

PAIRS = (("origin", "destination"), ("base_currency", "quote_currency"), ("from_currency", "to_currency"))


def _variants(tool: SimTool, synthesizer: Synthesizer, rng: random.Random) -> list[dict[str, Any]]:
    """Arguments drawn from the world: every field, only the required ones, and equal pairs."""
    full = synthesizer.record(tool.input_schema, rng)
    required = {k: v for k, v in full.items() if k in tool.input_schema.get("required", [])}
    same = dict(full)
    for a, b in PAIRS:
        if a in same and b in same:
            same[b] = same[a]
    return [full, required, same, synthesizer.record(tool.input_schema, rng)]


def _call(world: SimulatedWorld, spec: SimSpec, tool: SimTool, args: dict[str, Any], now: dt.datetime) -> Any:
    envelope = world.call(f"{spec.name}__{tool.name}", args)
    if not envelope["success"]:
        assert envelope["error"]["code"] in (400, 404), (tool.name, args, envelope)
        return None
    found = check(tool, world.services[spec.name].tools[tool.name].validate(args), envelope["data"], now)  # type: ignore[arg-type]
    assert not found, f"{spec.name}.{tool.name}({args}) → {envelope['data']}: " + "; ".join(map(str, found))
    return envelope["data"]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_every_simulated_tool_is_plausible_for_drawn_arguments(seed: int) -> None:
    population = Population.generate(seed)
    synthesizer = Synthesizer(population)
    backend = RulesBackend()
    world = SimulatedWorld([build_service(s, backend) for s in SPECS.values()], seed=seed)
    for spec in SPECS.values():
        ids: dict[str, Any] = {}
        for tool in sorted(spec.tools, key=lambda t: t.effect.op != "create"):  # creates first: ids to read
            rng = random.Random(f"{seed}:{spec.name}:{tool.name}")
            for args in _variants(tool, synthesizer, rng):
                if tool.effect.key in ids:
                    args[str(tool.effect.key)] = ids[str(tool.effect.key)]
                data = _call(world, spec, tool, args, population.now)
                if data is not None and tool.effect.op == "create":
                    field = spec.collections[str(tool.effect.collection)].id_field
                    ids[field] = data[field]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_simulated_tool_is_plausible_for_conformance_arguments(name: str) -> None:
    """Arguments drawn as the conformance checker draws them (hypothesis, from the input schema)."""
    spec = SPECS[name]
    service = build_service(spec, RulesBackend())
    now = Population.generate(0).now
    for tool in spec.tools:
        world = SimulatedWorld([service], seed=0)
        values = state_values(service, world.states[name])

        strategy = valid_inputs(service.tools[tool.name], values)
        run = settings(
            max_examples=8, database=None, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck)
        )
        run(given(strategy)(_caller(world, spec, tool, now)))()


def _caller(world: SimulatedWorld, spec: SimSpec, tool: SimTool, now: dt.datetime) -> Any:
    def example(args: dict[str, Any]) -> None:
        _call(world, spec, tool, args, now)

    return example


# --- the conformance checker runs the checker over every simulated tool ------------------------


class SameAddressFarAway:
    """A backend with the reported defect: a route from an address to itself is not zero."""

    name = "far"

    def __init__(self) -> None:
        self.rules = RulesBackend()

    def generate(self, request: Any) -> dict[str, Any]:
        output = self.rules.generate(request)
        if "distance_km" in output and request.arguments.get("origin") == request.arguments.get("destination"):
            output.update(distance_km=12.5, duration_minutes=30)
        return output


def test_conformance_fails_a_simulated_tool_that_answers_implausibly() -> None:
    service = build_service(SPECS["geocoding"], SameAddressFarAway())
    report = check_service(service, examples=4)
    found = {(p.check, p.tool) for p in report.problems}
    assert ("plausibility", "get_distance") in found and ("plausibility", "get_directions") in found, str(report)
    message = next(p.message for p in report.problems if p.tool == "get_distance")
    assert message.startswith("get_distance(") and "same-place: distance_km" in message
    assert {p.check for p in report.problems} == {"plausibility"}
    assert check_service(build_service(SPECS["geocoding"], RulesBackend()), examples=4).ok
