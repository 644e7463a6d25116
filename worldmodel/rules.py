"""The ``rules`` backend: schema-driven synthesis of plausible values, offline and deterministic.

Values are drawn by semantic type from the shared world population (a ``person_name`` is a
person of the world, an ``email_address`` theirs, a ``city`` one the companies are in), so
simulated tools talk about the same people and companies as the native services. Everything else
follows the JSON schema: enums, numeric bounds, string patterns (a small generator walks the
regular expression), formats, array sizes. The random generator is seeded by the caller with
(world seed, tool, arguments), so the same question always gets the same answer.
"""

from __future__ import annotations

import datetime as dt
import random
import re

# The regex parser is private (re._parser) but stable since Python 3.11, our minimum.
import re._constants as sre_constants
import re._parser as sre_parse
import string
from typing import Any

from servers.population import Population
from servers.types import SEMANTIC_KEY

WORDS = [
    "quarterly",
    "review",
    "update",
    "market",
    "delivery",
    "network",
    "service",
    "report",
    "analysis",
    "regional",
    "partner",
    "pricing",
    "launch",
    "customer",
    "supply",
    "chain",
    "forecast",
    "policy",
    "travel",
    "account",
    "renewal",
    "summary",
]
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK")


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def from_pattern(pattern: str, rng: random.Random) -> str:
    """A string matching the regular expression ``pattern`` (anchors, classes, repeats, groups)."""

    def emit(parsed: Any) -> str:
        out = []
        for op, arg in parsed:
            if op is sre_constants.LITERAL:
                out.append(chr(arg))
            elif op is sre_constants.NOT_LITERAL:
                out.append("x" if chr(arg) != "x" else "y")
            elif op is sre_constants.IN:
                out.append(_from_class(arg, rng))
            elif op is sre_constants.ANY:
                out.append(rng.choice(string.ascii_lowercase))
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                low, high, sub = arg
                high = low + 3 if high is sre_constants.MAXREPEAT else high
                out.extend(emit(sub) for _ in range(rng.randint(low, max(low, min(high, low + 6)))))
            elif op is sre_constants.SUBPATTERN:
                out.append(emit(arg[-1]))
            elif op is sre_constants.BRANCH:
                out.append(emit(rng.choice(arg[1])))
            elif op is sre_constants.CATEGORY:
                out.append(_from_category(arg, rng))
        return "".join(out)

    return emit(sre_parse.parse(pattern))


def _from_category(category: Any, rng: random.Random) -> str:
    if category is sre_constants.CATEGORY_DIGIT:
        return rng.choice(string.digits)
    if category is sre_constants.CATEGORY_SPACE:
        return " "
    return rng.choice(string.ascii_lowercase)


def _from_class(items: Any, rng: random.Random) -> str:
    choices: list[str] = []
    for op, arg in items:
        if op is sre_constants.LITERAL:
            choices.append(chr(arg))
        elif op is sre_constants.RANGE:
            choices.extend(chr(c) for c in range(arg[0], arg[1] + 1))
        elif op is sre_constants.CATEGORY:
            choices.append(_from_category(arg, rng))
    return rng.choice(choices or ["x"])


FUTURE_HINTS = ("estimated", "expected", "due", "expir", "depart", "arriv", "next", "until", "end", "scheduled")
PAST_HINTS = ("created", "last", "issued", "since", "start", "published", "updated", "ordered", "filed", "as_of")


def _day_range(name: str) -> tuple[int, int]:
    """Days around the world clock a date field plausibly falls in, judged by its name."""
    lowered = name.lower()
    if any(h in lowered for h in FUTURE_HINTS):
        return 1, 45
    if any(h in lowered for h in PAST_HINTS):
        return -60, 0
    return -20, 30


class Synthesizer:
    """Draws values for JSON schemas from one world's population."""

    def __init__(self, world: Population) -> None:
        self.world = world
        people = world.people
        self.cities = sorted({c.city for c in (world.org, *world.companies)} | {p.city for p in people})
        self.by_type: dict[str, Any] = {
            "person_name": lambda r: r.choice(people).name,
            "email_address": lambda r: r.choice(people).email,
            "phone_number": lambda r: r.choice(people).phone,
            "company_name": lambda r: r.choice(world.companies).name,
            "web_domain": lambda r: r.choice(world.companies).domain,
            "url": lambda r: f"https://{r.choice(world.companies).domain}/{r.choice(WORDS)}",
            "city": lambda r: r.choice(self.cities),
            "country_code": lambda r: r.choice(world.companies).country,
            "street_address": lambda r: r.choice(world.companies).address,
            "job_title": lambda r: r.choice(people).title,
            "department": lambda r: r.choice(world.employees).department,
            "currency_code": lambda r: r.choice(CURRENCIES),
            "product_name": lambda r: r.choice(world.products).name,
            "product_sku": lambda r: r.choice(world.products).sku,
            "title": lambda r: _sentence(r, r.randint(3, 6)).rstrip("."),
            "document_text": lambda r: " ".join(_sentence(r, r.randint(6, 12)) for _ in range(3)),
            "note": lambda r: _sentence(r, r.randint(4, 9)),
            "search_query": lambda r: " ".join(r.choice(WORDS) for _ in range(2)),
            "reference_code": lambda r: f"REF-{r.randint(10000, 99999)}",
            "tag": lambda r: r.choice(WORDS),
        }

    def value(self, schema: dict[str, Any], rng: random.Random, name: str = "", fresh: bool = False) -> Any:
        """A value valid for ``schema`` (a JSON-schema fragment).

        ``fresh`` marks a record being created: a closed set then takes its first value (specs list
        the initial status first), so a new booking is ``confirmed``, not ``cancelled``.
        """
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][0] if fresh else rng.choice(schema["enum"])
        if "anyOf" in schema or "oneOf" in schema:
            branches = [b for b in schema.get("anyOf", schema.get("oneOf", [])) if b.get("type") != "null"]
            return self.value(branches[0], rng, name) if branches else None
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "object":
            return self.record(schema, rng)
        if kind == "array":
            items = schema.get("items", {"type": "string"})
            if SEMANTIC_KEY not in items and SEMANTIC_KEY in schema:
                items = {**items, SEMANTIC_KEY: schema[SEMANTIC_KEY]}
            low = int(schema.get("minItems", 1))
            high = int(schema.get("maxItems", max(low, 4)))
            count = rng.randint(low, max(low, min(high, low + 4)))
            values = [self.value(items, rng, name) for _ in range(count)]
            if schema.get("uniqueItems"):
                values = list(dict.fromkeys(values)) if all(isinstance(v, str | int) for v in values) else values
            return values
        if kind == "boolean":
            return rng.random() < 0.5
        if kind in ("integer", "number"):
            return self._number(schema, rng, kind == "integer")
        return self._string(schema, rng, name)

    def record(self, schema: dict[str, Any], rng: random.Random, fresh: bool = False) -> dict[str, Any]:
        return {key: self.value(prop, rng, key, fresh) for key, prop in schema.get("properties", {}).items()}

    def _number(self, schema: dict[str, Any], rng: random.Random, integer: bool) -> int | float:
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", max(low, 0) + 1000))
        if "exclusiveMinimum" in schema:
            low += 1 if integer else 0.01
        if "exclusiveMaximum" in schema:
            high -= 1 if integer else 0.01
        if integer:
            return rng.randint(int(low), int(max(low, high)))
        return round(rng.uniform(float(low), float(max(low, high))), 2)

    def _string(self, schema: dict[str, Any], rng: random.Random, name: str) -> str:
        semantic = schema.get(SEMANTIC_KEY, "")
        fmt = schema.get("format")
        now = self.world.now
        if semantic in ("date", "date_time") or fmt in ("date", "date-time"):
            low, high = _day_range(name)
            moment = now + dt.timedelta(minutes=15 * rng.randint(low * 96, high * 96))
            if semantic == "date" or fmt == "date":
                return moment.date().isoformat()
            return moment.isoformat().replace("+00:00", "Z")
        if semantic in self.by_type:
            text = str(self.by_type[semantic](rng))
        elif "pattern" in schema:
            text = from_pattern(schema["pattern"], rng)
        else:
            text = f"{name.replace('_', ' ') or 'value'} {rng.randint(100, 999)}"
        if "pattern" in schema and not re.search(schema["pattern"], text):
            text = from_pattern(schema["pattern"], rng)
        shortest: int = schema.get("minLength", 0)
        longest: int | None = schema.get("maxLength")
        if longest is not None:
            text = text[:longest]
        return text + "x" * max(0, shortest - len(text))


class RulesBackend:
    """Offline, deterministic outputs: :class:`Synthesizer` seeded by (world seed, tool, arguments)."""

    name = "rules"

    def __init__(self) -> None:
        self._synthesizers: dict[int, Synthesizer] = {}

    def generate(self, request: Any) -> dict[str, Any]:
        seed = request.world.seed
        synthesizer = self._synthesizers.get(seed)
        if synthesizer is None:
            synthesizer = self._synthesizers[seed] = Synthesizer(request.world)
        return synthesizer.record(request.schema, request.rng(), fresh=request.tool.effect.op == "create")
