"""Directory seed: employees, external contacts, near-duplicates and about 20 groups."""

from __future__ import annotations

import datetime as dt
import random

from servers.population import Population

from .models import DirectoryState, Group, Person


def seed(rng: random.Random, world: Population) -> DirectoryState:
    state = DirectoryState(me=world.me.email, clock=world.now)
    managers = {p.id: p.email for p in world.employees}

    def add(person_kind: str, name: str, company: str, days: int, **fields: str | None) -> Person:
        entry = Person(
            id=state.new_id("per"),
            kind=person_kind,
            name=name,
            company=company,
            updated_at=world.now - dt.timedelta(days=days, minutes=rng.randint(0, 1439)),
            **fields,
        )
        state.people[entry.id] = entry
        return entry

    for p in world.employees:
        add(
            "employee",
            p.name,
            p.company,
            rng.randint(10, 300),
            email=p.email,
            phone=p.phone,
            title=p.title,
            department=p.department,
            manager_email=managers.get(p.manager_id or ""),
            city=p.city,
        )
    contacts = list(world.contacts[:44])
    for p in contacts:
        add(
            "external", p.name, p.company, rng.randint(5, 500), email=p.email, phone=p.phone, title=p.title, city=p.city
        )
    picks = rng.sample(contacts, 4)
    personal = f"{picks[0].first_name}.{picks[0].last_name}{rng.randint(10, 99)}@gmail.com".lower()
    add(
        "external",
        picks[0].name,
        picks[0].company,
        400,
        email=personal,
        phone=picks[0].phone,
        notes="Saved from a conference badge scan.",
    )
    add("external", picks[1].first_name, picks[1].company, 250, phone=picks[1].phone, notes="Phone-only entry.")
    last = picks[2].last_name
    typo = last[:-2] + last[-1] + last[-2] if len(last) > 3 else last + "e"
    add("external", f"{picks[2].first_name} {typo}", picks[2].company, 320, title=picks[2].title)
    add("external", picks[3].name, picks[3].company, 30, email=picks[3].email, notes="Imported from the CRM.")
    colleague = rng.choice([p for p in world.employees if p.id != world.me.id])
    add(
        "external",
        colleague.name,
        world.org.name,
        200,
        phone=colleague.phone,
        notes="Mobile, saved before they joined.",
    )
    externals = [p for p in state.people.values() if p.kind == "external"]
    for entry in rng.sample(externals[:40], 3):
        entry.status, entry.notes = "archived", "Left the company."
    for entry in rng.sample([p for p in state.people.values() if p.status == "active"], 6):
        entry.starred = True

    domain = world.org.domain
    heads = {p.department: p.email for p in world.employees if p.manager_id is None}
    staff = [p.email for p in world.employees]

    listed = {p.email for p in state.people.values() if p.status == "active" and p.email}

    def group(name: str, local: str, group_kind: str, owners: list[str], members: list[str], about: str = "") -> None:
        new = Group(
            id=state.new_id("grp"),
            name=name,
            email=f"{local}@{domain}",
            kind=group_kind,
            description=about,
            owners=owners,
            members=[m for m in dict.fromkeys(members) if m in listed],
        )
        state.groups[new.id] = new

    group("All staff", "all-staff", "mailing_list", [heads["People"]], staff, "Everyone at the company.")
    for dept, head in heads.items():
        members = [p.email for p in world.employees if p.department == dept]
        group(f"{dept} team", dept.lower(), "team", [head], members, f"The {dept} department.")
    ops = [p.email for p in world.employees if p.department == "Operations"]
    group("Ops team", "ops-team", "team", [world.me.email], rng.sample(ops, 2), "Old operations list, partly used.")
    group("Managers", "managers", "security", [heads["People"]], list(heads.values()), "Department heads.")
    engineers = [p.email for p in world.employees if p.department == "Engineering"]
    group("IT admins", "it-admins", "security", [heads["Engineering"]], engineers[:3], "Admin access to systems.")
    sales = [p.email for p in world.employees if p.department == "Sales"]
    for company in [c for c in world.companies if c.relation == "customer"]:
        people = [p.email for p in world.contacts_of(company.id)]
        owner = rng.choice([world.me.email, heads["Sales"]])
        slug = "".join(ch for ch in company.name.lower() if ch.isalnum())[:20]
        group(
            f"{company.name} account",
            f"acct-{slug}",
            "mailing_list",
            [owner],
            [rng.choice(sales), *people],
            f"Account team and contacts at {company.name}.",
        )
    vendors = [p.email for c in world.companies if c.relation == "vendor" for p in world.contacts_of(c.id)]
    group("Vendors", "vendors", "mailing_list", [world.me.email], vendors, "Supplier contacts.")
    group("Social club", "social", "mailing_list", [rng.choice(staff)], rng.sample(staff, 12), "Events and fun.")
    return state
