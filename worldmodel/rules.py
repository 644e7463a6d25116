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
RECENT_HINTS = ("updated", "last", "as_of", "observed", "current")
PAST_HINTS = ("created", "issued", "since", "start", "published", "ordered", "filed", "born", "founded")
START_HINTS = ("depart", "start", "begin", "check_in", "from", "open")
END_HINTS = ("arriv", "end", "finish", "check_out", "until", "close")
TIME_ZONES = (
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Paris",
    "Asia/Tokyo",
    "Asia/Singapore",
    "Australia/Sydney",
)


def _day_range(name: str, anchored: bool) -> tuple[int, int]:
    """Days around the clock (or the date the caller asked about) a date field plausibly falls in."""
    lowered = name.lower()
    if anchored:
        return 0, 1
    if any(h in lowered for h in RECENT_HINTS):
        return -2, 0
    if any(h in lowered for h in FUTURE_HINTS):
        return 1, 45
    if any(h in lowered for h in PAST_HINTS):
        return -60, 0
    return -20, 30


class Draw:
    """What one synthesis knows beyond the schema: creating or not, a date anchor, the arguments."""

    def __init__(self, fresh: bool = False, anchor: dt.datetime | None = None, echo: dict[str, Any] | None = None):
        self.fresh = fresh
        self.anchor = anchor
        self.echo = echo or {}


def _same_kind(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, int | float) and isinstance(b, int | float)) or type(a) is type(b)


def _moment(text: str) -> tuple[dt.datetime, bool] | None:
    """``text`` as an aware time (a naive one, or a bare date, is taken as UTC) and whether it had an offset."""
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC), False
    return moment, True


def _order_times(record: dict[str, Any], rng: random.Random) -> None:
    """An end-like time (arrival, end) never precedes its start-like sibling (departure, start).

    Dates and times compare on one scale: a bare date or a naive time counts as UTC, so a
    booking's ``departure_date`` (a date) and its ``arrival_time`` (a time with an offset) can be
    ordered. A moved end keeps its own form: a date stays a date, a time keeps (or lacks) its offset.
    """
    starts = [k for k in record if isinstance(record[k], str) and any(h in k for h in START_HINTS)]
    ends = [k for k in record if isinstance(record[k], str) and any(h in k for h in END_HINTS)]
    for start in starts:
        for end in ends:
            if start == end or not isinstance(record[start], str) or not isinstance(record[end], str):
                continue
            begin, finish = _moment(record[start]), _moment(record[end])
            if begin is None or finish is None or finish[0] > begin[0]:
                continue
            try:
                fixed = begin[0] + dt.timedelta(minutes=15 * rng.randint(4, 48))
            except OverflowError:  # a start at the end of the calendar: nothing later to move to
                continue
            if "T" not in record[end]:
                record[end] = fixed.date().isoformat()
            elif finish[1]:
                record[end] = fixed.isoformat().replace("+00:00", "Z")
            else:
                record[end] = fixed.replace(tzinfo=None).isoformat()


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
            "time_zone": lambda r: r.choice(TIME_ZONES),
        }

    def value(self, schema: dict[str, Any], rng: random.Random, name: str = "", draw: Draw | None = None) -> Any:
        """A value valid for ``schema`` (a JSON-schema fragment).

        With ``draw.fresh`` (a record being created) a closed set takes its first value (specs list
        the initial status first), so a new booking is ``confirmed``, not ``cancelled``.
        """
        draw = draw or Draw()
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][0] if draw.fresh else rng.choice(schema["enum"])
        if "anyOf" in schema or "oneOf" in schema:
            branches = [b for b in schema.get("anyOf", schema.get("oneOf", [])) if b.get("type") != "null"]
            return self.value(branches[0], rng, name, draw) if branches else None
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "object":
            return self.record(schema, rng, draw)
        if kind == "array":
            items = schema.get("items", {"type": "string"})
            if SEMANTIC_KEY not in items and SEMANTIC_KEY in schema:
                items = {**items, SEMANTIC_KEY: schema[SEMANTIC_KEY]}
            low = int(schema.get("minItems", 1))
            high = int(schema.get("maxItems", max(low, 4)))
            count = rng.randint(low, max(low, min(high, low + 4)))
            values = [self.value(items, rng, name, draw) for _ in range(count)]
            if schema.get("uniqueItems"):
                values = list(dict.fromkeys(values)) if all(isinstance(v, str | int) for v in values) else values
            return values
        if kind == "boolean":
            return rng.random() < 0.5
        if kind in ("integer", "number"):
            return self._number(schema, rng, kind == "integer")
        return self._string(schema, rng, name, draw)

    def record(self, schema: dict[str, Any], rng: random.Random, draw: Draw | None = None) -> dict[str, Any]:
        """A record for an object schema; same-named arguments echo in, times come in order."""
        draw = draw or Draw()
        out = {key: self.value(prop, rng, key, draw) for key, prop in schema.get("properties", {}).items()}
        for key, value in out.items():
            wanted = draw.echo.get(key)
            if wanted is not None and _same_kind(wanted, value) and "enum" not in schema["properties"][key]:
                out[key] = wanted
        _order_times(out, rng)
        return out

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

    def _string(self, schema: dict[str, Any], rng: random.Random, name: str, draw: Draw) -> str:
        semantic = schema.get(SEMANTIC_KEY, "")
        fmt = schema.get("format")
        now = draw.anchor or self.world.now
        if semantic in ("date", "date_time") or fmt in ("date", "date-time"):
            low, high = _day_range(name, draw.anchor is not None)
            try:
                moment = now + dt.timedelta(minutes=15 * rng.randint(low * 96, high * 96))
            except OverflowError:  # an anchor at the edge of the calendar (year 1 or 9999)
                moment = now
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
        draw = Draw(request.tool.effect.op == "create", _anchor(request.arguments), request.arguments)
        return synthesizer.record(request.schema, request.rng(), draw)


def _anchor(arguments: dict[str, Any]) -> dt.datetime | None:
    """The first date the caller asked about (a forecast for the 10th is about the 10th)."""
    for value in arguments.values():
        if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ].*)?", value):
            try:
                moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if not dt.MINYEAR < moment.year < dt.MAXYEAR:
                continue  # year 1 or 9999: no room for the days around it that outputs draw
            return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    return None
