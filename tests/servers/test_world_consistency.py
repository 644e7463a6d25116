"""One shared population: the same people and companies appear across services."""

from __future__ import annotations

import json
from pathlib import Path

from servers.population import HEALTH_PLANS, Population
from servers.registry import all_services
from servers.values import state_values

SEED = 3


def _values(kind: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name, service in all_services().items():
        values = state_values(service, service.seed_state(SEED)).get(kind, [])
        if values:
            found[name] = {str(v).lower() for v in values}
    return found


def test_most_services_reference_population_people_by_email() -> None:
    people = {p.email.lower() for p in Population.generate(SEED).people}
    by_service = _values("email_address")
    assert len(by_service) >= 12, sorted(by_service)
    for name, emails in by_service.items():
        known = emails & people
        assert len(known) >= 0.5 * len(emails), f"{name}: only {len(known)}/{len(emails)} emails are population people"


def test_the_same_people_appear_in_many_services() -> None:
    by_service = _values("email_address")
    counts: dict[str, int] = {}
    for emails in by_service.values():
        for email in emails:
            counts[email] = counts.get(email, 0) + 1
    me = Population.generate(SEED).me.email.lower()
    assert counts.get(me, 0) >= 6
    assert sum(1 for c in counts.values() if c >= 4) >= 10


def _named_outsiders() -> set[str]:
    """Real outside organisations a spec names in a fixed list (``choice:FedEx|UPS``: carriers, blood
    suppliers, registered agents, universities): deliberate, not invented companies."""
    found: set[str] = set()
    for path in (Path(__file__).parents[2] / "servers" / "catalog").glob("*.json"):
        for entity in json.loads(path.read_text()).get("entities", {}).values():
            for field in entity.get("fields", {}).values():
                seed = str(field.get("seed", ""))
                if field.get("type") == "company_name" and seed.startswith("choice:"):
                    found |= {v.strip().lower() for v in seed[len("choice:") :].split("|")}
    return found


def test_company_names_come_from_the_population() -> None:
    world = Population.generate(SEED)
    companies = {c.name.lower() for c in (*world.companies, world.org)} | {p.lower() for p in HEALTH_PLANS}
    by_service = _values("company_name")
    assert len(by_service) >= 3, sorted(by_service)
    outsiders = _named_outsiders()
    for name, values in by_service.items():
        invented = values - outsiders
        assert len(invented & companies) >= 0.5 * len(invented), f"{name}: company names outside the population"
