"""The shared world population: deterministic, consistent, with near-duplicates."""

from __future__ import annotations

from servers.population import Population


def test_same_seed_same_population() -> None:
    assert Population.generate(11) == Population.generate(11)
    assert Population.generate(11).people != Population.generate(12).people


def test_people_have_unique_emails_and_phones() -> None:
    world = Population.generate(5)
    emails = [p.email for p in world.people]
    phones = [p.phone for p in world.people]
    assert len(set(emails)) == len(emails)
    assert len(set(phones)) == len(phones)


def test_employees_work_at_the_org_and_have_managers_in_their_department() -> None:
    world = Population.generate(5)
    ids = {p.id: p for p in world.employees}
    assert all(p.email.endswith("@" + world.org.domain) for p in world.employees)
    for person in world.employees:
        if person.manager_id is not None:
            assert ids[person.manager_id].department == person.department


def test_contacts_belong_to_known_companies() -> None:
    world = Population.generate(5)
    companies = {c.id: c for c in world.companies}
    for person in world.contacts:
        assert person.email.endswith("@" + companies[person.company_id].domain)


def test_population_contains_near_duplicate_names() -> None:
    world = Population.generate(5)
    by_last: dict[str, set[str]] = {}
    for person in world.contacts:
        by_last.setdefault(person.last_name, set()).add(person.company_id)
    assert any(len(companies) > 1 for companies in by_last.values())
