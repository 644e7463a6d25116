"""The shared world population: the people, companies and products every service seeds from.

One population is generated per world seed and reused by every service, so the same person
appears consistently everywhere: a CRM contact's email is the one in the mailbox, the HR
employee is the chat user and the tracker assignee. That consistency is what lets values
travel across services in generated tasks.

The population is deterministic (Faker and ``random.Random`` seeded from the world seed, no
global randomness), immutable, and cached per seed. It deliberately contains near-duplicates
(two people whose names differ by one letter, at different companies) so that agents must read
carefully before they write.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from functools import lru_cache
from typing import Literal

from faker import Faker
from pydantic import BaseModel, ConfigDict

from servers.state import WORLD_EPOCH

DEPARTMENTS = ("Sales", "Finance", "Engineering", "Support", "People", "Operations", "Marketing", "Legal")
TITLES = {
    "Sales": ("Account Executive", "Sales Manager", "Sales Development Rep"),
    "Finance": ("Accountant", "Finance Manager", "Controller"),
    "Engineering": ("Software Engineer", "Engineering Manager", "Site Reliability Engineer"),
    "Support": ("Support Specialist", "Support Lead", "Customer Success Manager"),
    "People": ("HR Generalist", "Head of People", "Recruiter"),
    "Operations": ("Operations Manager", "Office Manager", "Procurement Specialist"),
    "Marketing": ("Marketing Manager", "Content Strategist", "Growth Analyst"),
    "Legal": ("Legal Counsel", "Paralegal", "Compliance Officer"),
}
EXTERNAL_TITLES = (
    "CEO",
    "CFO",
    "Head of Procurement",
    "IT Director",
    "Operations Lead",
    "Buyer",
    "Office Manager",
)
INDUSTRIES = (
    "Logistics",
    "Healthcare",
    "Retail",
    "Manufacturing",
    "Software",
    "Education",
    "Hospitality",
    "Energy",
)
PRODUCT_KINDS = (
    ("Laptop Stand", 49.0),
    ("Wireless Headset", 129.0),
    ("Standing Desk", 540.0),
    ("Monitor 27in", 310.0),
    ("Ergonomic Chair", 420.0),
    ("Docking Station", 189.0),
    ("Webcam HD", 89.0),
    ("Analytics Seat (annual)", 1200.0),
    ("Support Plan (monthly)", 299.0),
    ("Onboarding Workshop", 2500.0),
    ("Data Migration Package", 4800.0),
    ("Label Printer", 159.0),
)
HEALTH_PLANS = (
    "Aetna Commercial", "Blue Cross PPO", "Cigna Open Access", "UnitedHealthcare Choice",
    "Humana Medicare Advantage", "Kaiser HMO", "Medicaid Managed Care", "Anthem Blue Cross",
)  # fmt: skip
"""The health plans (insurers) of the world: not customers or vendors of the organisation, so not
among its companies, but the same plans wherever a service names one (a referral's plan is a payer
of the prior-authorization service), so a plan links across services by name."""
COUNTRIES = (("US", "USD"), ("US", "USD"), ("US", "USD"), ("GB", "GBP"), ("DE", "EUR"), ("FR", "EUR"))
NICKNAME_VARIANTS = {
    "John": "Jon",
    "Jon": "John",
    "Katherine": "Catherine",
    "Steven": "Stephen",
    "Sara": "Sarah",
}


class Company(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    domain: str
    industry: str
    address: str
    city: str
    country: str
    currency: str
    phone: str
    relation: Literal["self", "customer", "vendor", "partner", "prospect"]


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    first_name: str
    last_name: str
    name: str
    email: str
    phone: str
    username: str
    title: str
    department: str
    company_id: str
    company: str
    city: str
    is_employee: bool
    manager_id: str | None = None


class Product(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sku: str
    name: str
    unit_price: float
    currency: str
    category: str


class Population(BaseModel):
    """Everyone and everything a seeded world knows about."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    now: dt.datetime
    org: Company
    me: Person
    employees: tuple[Person, ...]
    contacts: tuple[Person, ...]
    companies: tuple[Company, ...]
    products: tuple[Product, ...]

    @property
    def people(self) -> tuple[Person, ...]:
        return self.employees + self.contacts

    def person(self, person_id: str) -> Person:
        return next(p for p in self.people if p.id == person_id)

    def company(self, company_id: str) -> Company:
        if company_id == self.org.id:
            return self.org
        return next(c for c in self.companies if c.id == company_id)

    def contacts_of(self, company_id: str) -> tuple[Person, ...]:
        return tuple(p for p in self.contacts if p.company_id == company_id)

    @staticmethod
    def generate(seed: int) -> Population:
        """The population of world ``seed`` (cached: generating it once per seed is enough)."""
        return _generate(seed)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _phone(rng: random.Random, used: set[str]) -> str:
    while True:
        number = f"+1{rng.randint(201, 989)}555{rng.randint(0, 9999):04d}"
        if number not in used:
            used.add(number)
            return number


def _company(fake: Faker, rng: random.Random, index: int, relation: str, phones: set[str]) -> Company:
    name = fake.unique.company()
    country, currency = ("US", "USD") if relation == "self" else rng.choice(COUNTRIES)
    domain = _slug(name.split(",")[0].split(" and ")[0])[:24] + rng.choice((".com", ".io", ".co"))
    return Company(
        id=f"co_{index:02d}",
        name=name,
        domain=domain,
        industry=rng.choice(INDUSTRIES),
        address=fake.street_address(),
        city=fake.city(),
        country=country,
        currency=currency,
        phone=_phone(rng, phones),
        relation=relation,
    )


def _person(
    fake: Faker,
    rng: random.Random,
    index: int,
    company: Company,
    department: str,
    title: str,
    used: set[str],
    phones: set[str],
    first: str | None = None,
    last: str | None = None,
) -> Person:
    while True:
        first_name = first or fake.first_name()
        last_name = last or fake.last_name()
        local = f"{_slug(first_name)}.{_slug(last_name)}"
        if local not in used:
            break
        first = last = None  # retry with fresh names on a clash
    used.add(local)
    return Person(
        id=f"p_{index:03d}",
        first_name=first_name,
        last_name=last_name,
        name=f"{first_name} {last_name}",
        email=f"{local}@{company.domain}",
        phone=_phone(rng, phones),
        username=local,
        title=title,
        department=department,
        company_id=company.id,
        company=company.name,
        city=company.city if rng.random() < 0.7 else fake.city(),
        is_employee=company.relation == "self",
    )


@lru_cache(maxsize=32)
def _generate(seed: int) -> Population:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(f"population:{seed}")
    phones: set[str] = set()
    used: set[str] = set()
    org = _company(fake, rng, 0, "self", phones)
    relations = ["customer"] * 6 + ["vendor"] * 3 + ["partner"] + ["prospect"] * 2
    companies = tuple(_company(fake, rng, i + 1, rel, phones) for i, rel in enumerate(relations))

    employees: list[Person] = []
    for index in range(28):
        department = DEPARTMENTS[index % len(DEPARTMENTS)]
        title = TITLES[department][0 if index >= len(DEPARTMENTS) else 1]
        employees.append(_person(fake, rng, index + 1, org, department, title, used, phones))
    # Department heads (the first of each department) manage the rest of their department.
    heads = {p.department: p.id for p in employees[: len(DEPARTMENTS)]}
    employees = [
        p if p.id in heads.values() else p.model_copy(update={"manager_id": heads[p.department]}) for p in employees
    ]
    me = employees[5].model_copy(update={"title": "Operations Manager"})  # the user the agent works for
    employees[5] = me

    contacts: list[Person] = []
    index = len(employees) + 1
    for company in companies:
        for _ in range(rng.randint(2, 4)):
            title = rng.choice(EXTERNAL_TITLES)
            contacts.append(_person(fake, rng, index, company, "External", title, used, phones))
            index += 1
    # Near-duplicates: a second person at another company whose first name differs slightly.
    for original in rng.sample(contacts, 2):
        other = rng.choice([c for c in companies if c.id != original.company_id])
        variant = NICKNAME_VARIANTS.get(original.first_name, original.first_name + "a")
        twin = _person(fake, rng, index, other, "External", original.title, used, phones, variant, original.last_name)
        contacts.append(twin)
        index += 1

    products = tuple(
        Product(
            sku=f"SKU-{100 + i}",
            name=name,
            unit_price=round(price * rng.uniform(0.9, 1.1), 2),
            currency="USD",
            category="services" if "(" in name or "Package" in name or "Workshop" in name else "hardware",
        )
        for i, (name, price) in enumerate(PRODUCT_KINDS)
    )
    return Population(
        seed=seed,
        now=WORLD_EPOCH,
        org=org,
        me=me,
        employees=tuple(employees),
        contacts=tuple(contacts),
        companies=companies,
        products=products,
    )
