"""Seed helpers for built services: draw realistic values from the shared world population.

Generated seed functions call these, so a built service's initial data uses the same people,
companies and products as every hand-written service (the CRM contact is the fleet driver is the
payroll employee). :func:`default_seed` is the seed a field gets when its spec gives none.
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from servers.construction.vocabulary import SHARED
from servers.population import Company, Person, Population, Product

if TYPE_CHECKING:
    from servers.construction.spec import FieldSpec, ServiceSpec

WORDS = ("review", "update", "renewal", "setup", "migration", "audit", "request", "plan", "upgrade", "check")
SENTENCES = (
    "Follow up with the customer before the end of the week.",
    "Details were confirmed by phone; see the attached notes.",
    "Needs a second look from the team lead.",
    "Raised during the weekly sync; low risk.",
    "Customer asked for an update on the timeline.",
    "Blocked until the vendor answers.",
)
_DEFAULTS = {
    "email_address": "person:_.email",
    "person_name": "person:_.name",
    "phone_number": "person:_.phone",
    "job_title": "person:_.title",
    "department": "person:_.department",
    "username": "person:_.username",
    "company_name": "company:_.name",
    "web_domain": "company:_.domain",
    "url": "company:_.url",
    "street_address": "company:_.address",
    "city": "company:_.city",
    "country_code": "company:_.country",
    "currency_code": "company:_.currency",
    "product_name": "product:_.name",
    "product_sku": "product:_.sku",
    "money_amount": "number:10..5000",
    "percentage": "number:0..100",
    "quantity": "int:1..500",
    "count": "int:0..50",
    "rating": "int:1..5",
    "duration_minutes": "int:15..240",
    "duration_hours": "number:0.5..40",
    "duration_days": "number:1..10",
    "date_time": "past:0..90",
    "date": "past:0..90",
    "flag": "bool:0.5",
    "tag": "choice:internal|review|priority|q3|vip|follow-up",
    "title": "text:{pick:Quarterly|Annual|Monthly|Urgent|Routine} {pick:review|update|renewal|check|request}",
    "document_text": "text:{pick:" + "|".join(SENTENCES) + "}",
    "note": "text:{pick:" + "|".join(SENTENCES) + "}",
    "message_text": "text:{pick:" + "|".join(SENTENCES) + "}",
    "location": "company:_.city",
    "time_zone": "choice:Europe/Berlin|America/New_York|Asia/Tokyo|Europe/London|America/Chicago",
    "mime_type": "choice:application/pdf|text/plain|image/png|text/csv",
    "file_name": "pattern:doc-####.pdf",
    "reference_code": "pattern:REF-#####",
    "bank_account": "pattern:DE##############",
    "search_query": "choice:invoice|renewal|urgent",
    "channel_name": "choice:general|ops|sales|support",
    "event_name": "choice:record.created|record.updated",
    "cell_ref": "pattern:A#",
    "cell_value": "int:1..999",
    "payload_text": 'const:"{}"',
    "total": "number:0..10000",
    "page_limit": "int:1..50",
    "page_offset": "int:0..10",
}


def default_seed(semantic: str, python: str, enum: list[str] | None, bounds: tuple[float, float] | None) -> str:
    """The seed of a field whose spec gives none, from its semantic type."""
    if enum:
        return "choice"
    if semantic in _DEFAULTS:
        return _DEFAULTS[semantic]
    if python in ("int", "float"):
        lo, hi = bounds or (0, 100)
        return f"{'int' if python == 'int' else 'number'}:{lo:g}..{min(hi, lo + 1000):g}"
    if python == "bool":
        return "bool:0.5"
    if python in ("datetime", "date"):
        return "past:0..90"
    return "text:{pick:" + "|".join(w.capitalize() for w in WORDS) + "} {pick:A|B|C|D}"


def _seed_bounds(spec: ServiceSpec, type_name: str) -> tuple[float, float] | None:
    """The range a numeric field's default seed draws from: the type's bounds, 1,000 wide at most."""
    _kind, _, local = spec.field_type(type_name)
    if local is not None and (local.minimum is not None or local.maximum is not None):
        lo = local.minimum if local.minimum is not None else 0
        return lo, local.maximum if local.maximum is not None else lo + 1000
    shared = SHARED.get(type_name)
    if shared and ("ge" in shared.constraints or "le" in shared.constraints):
        lo = shared.constraints.get("ge", 0)
        return lo, shared.constraints.get("le", lo + 1000)
    return None


def field_seed(spec: ServiceSpec, field: FieldSpec) -> str:
    """The seed of a field: its own, ``ref`` for a reference, else the default of its semantic type."""
    if field.seed is None and field.type.startswith("ref:"):
        return "ref"
    if field.seed:
        return field.seed
    _, semantic, _ = spec.field_type(field.type)
    return default_seed(semantic, spec.python_type(field.type), spec.enum_of(field.type),
                        _seed_bounds(spec, field.type))  # fmt: skip


def seed_order(fields: Mapping[str, FieldSpec]) -> list[str]:
    """The order a record's fields are drawn in: drawn values first, then values copied from the
    record a reference points at (``from:``, once the reference is drawn), then text templates
    (which may name any of them), then fields seeded by the record's lifecycle state."""
    later = ("from", "text")

    def rank(name: str) -> int:
        if fields[name].seed_by_state:
            return len(later) + 1  # last: the state is drawn, and any seed of a state may name any field
        kind = (fields[name].seed or "").partition(":")[0]
        return later.index(kind) + 1 if kind in later else 0

    return sorted(fields, key=rank)  # stable: the fields' own order within each rank


def copied(table: Mapping[str, Any], ref: str | None, attr: str) -> Any:
    """A ``from:<ref>.<attr>`` seed: ``attr`` of the record ``ref`` points at in ``table`` (None
    when the reference is empty), so a child record agrees with its parent (a refund's rider is
    the pass holder, a goal's client email is the client's)."""
    return None if ref is None else copy.deepcopy(getattr(table[ref], attr))


Drawn = TypeVar("Drawn", Person, Company)


def draw_distinct(rng: random.Random, pool: Sequence[Drawn], taken: set[str]) -> Drawn:
    """One of ``pool`` whose id is not ``taken`` (while the pool has others): two slots of one record
    are two people (an employee is not their own manager). A clash is drawn again rather than left
    out of the pool, so records without one keep their seeded values."""
    drawn = rng.choice(pool)
    while drawn.id in taken and len(taken) < len(pool):
        drawn = rng.choice(pool)
    return drawn


class Slots:
    """The people, companies and products one seeded record draws, by slot name."""

    def __init__(self, rng: random.Random, world: Population) -> None:
        self.rng, self.world = rng, world
        self.people: dict[str, Person] = {}
        self.companies: dict[str, Company] = {}
        self.products: dict[str, Product] = {}

    def person(self, slot: str, pool: str = "person") -> Person:
        if slot not in self.people:
            people = {"employee": self.world.employees, "contact": self.world.contacts}.get(pool, self.world.people)
            self.people[slot] = draw_distinct(self.rng, people, {p.id for p in self.people.values()})
        return self.people[slot]

    def company(self, slot: str) -> Company:
        if slot not in self.companies:
            outside = [c for c in self.world.companies if c.relation != "self"]
            self.companies[slot] = draw_distinct(self.rng, outside, {c.id for c in self.companies.values()})
        return self.companies[slot]

    def product(self, slot: str) -> Product:
        if slot not in self.products:
            self.products[slot] = self.rng.choice(self.world.products)
        return self.products[slot]


def person_attr(person: Person, attr: str) -> str:
    return str(getattr(person, attr))


def company_attr(company: Company, attr: str) -> str:
    if attr == "url":
        return f"https://{company.domain}"
    if attr == "country":
        return company.country if re.fullmatch(r"[A-Z]{2}", company.country) else "US"
    return str(getattr(company, attr))


def product_attr(product: Product, attr: str) -> Any:
    return getattr(product, attr)


def pattern(rng: random.Random, template: str) -> str:
    """``#`` becomes a digit (the first one 1-9), ``?`` a capital letter, anything else stays."""
    out = []
    for i, char in enumerate(template):
        if char == "#":
            first = i == 0 or template[i - 1] != "#"
            out.append(str(rng.randint(1, 9) if first else rng.randint(0, 9)))
        elif char == "?":
            out.append(chr(rng.randint(65, 90)))
        else:
            out.append(char)
    return "".join(out)


def number(rng: random.Random, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


def days_from(now: dt.datetime, rng: random.Random, lo: float, hi: float) -> dt.datetime:
    """``now`` moved by a whole number of minutes between ``lo`` and ``hi`` days."""
    minutes = rng.randint(int(lo * 1440), int(hi * 1440))
    return now + dt.timedelta(minutes=minutes)


def text(rng: random.Random, template: str, values: dict[str, Any]) -> str:
    """Fill ``{pick:a|b}`` with a choice and ``{field}`` with another value of the record."""

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.startswith("pick:"):
            return rng.choice(key[5:].split("|"))
        value = str(values.get(key) or "")
        # an enum value reads as words in a title ("Renovated multi family home", not "multi_family")
        return value.replace("_", " ") if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", value) else value

    filled = re.sub(r"\{([^{}]+)\}", fill, template)
    # an empty optional field leaves its separator dangling ("Reclass - " for "Reclass - {counterparty}")
    filled = re.sub(r"(\s+[-–—:/|,]+)+\s*$", "", filled)
    return " ".join(filled.split()) or "untitled"


def stamps(rng: random.Random, now: dt.datetime, max_age_days: int = 180) -> tuple[dt.datetime, dt.datetime]:
    """``(created_at, updated_at)`` of a seeded record, both in the past."""
    created = days_from(now, rng, -max_age_days, -1)
    return created, min(now, days_from(created, rng, 0, 20))
