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
import math
import random
import re

# The regex parser is private (re._parser) but stable since Python 3.11, our minimum.
import re._constants as sre_constants
import re._parser as sre_parse
import string
import zlib
from typing import Any, cast
from urllib.parse import urlsplit

from servers.population import Population
from servers.types import SEMANTIC_KEY
from worldmodel.plausibility import COUNTRY_CURRENCY

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
SYSTEM_HINTS = ("created", "updated", "crawled", "registered", "ordered", "issued", "filed", "last_")
"""Times the system stamps: always relative to the world's clock, never to a date the caller asked about."""
BIRTH_DAYS = (-70 * 365, -18 * 365)
"""Birth dates: an adult of working age on the world's clock."""
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
    if "birth" in lowered:
        return BIRTH_DAYS
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

    def output(self, schema: dict[str, Any], rng: random.Random, draw: Draw | None = None) -> dict[str, Any]:
        """A tool's output: a :meth:`record` whose fields then agree with each other, the arguments
        and the world (see :func:`settle`)."""
        draw = draw or Draw()
        out = self.record(schema, rng, draw)
        settle(out, schema, draw.echo, self.world, rng)
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
        if semantic in ("date", "date_time") or fmt in ("date", "date-time"):
            # A birth or a system stamp (created, updated…) is on the world's clock whatever date was asked about.
            clocked = "birth" in name or any(h in name for h in SYSTEM_HINTS)
            anchor = None if clocked else draw.anchor
            now = anchor or self.world.now
            low, high = _day_range(name, anchor is not None)
            try:
                moment = now + dt.timedelta(minutes=15 * rng.randint(low * 96, high * 96))
            except OverflowError:  # an anchor at the edge of the calendar (year 1 or 9999)
                moment = now
            if anchor is not None and any(h in name for h in PAST_HINTS) and moment > self.world.now:
                moment = self.world.now  # what was published around a future date has not been published yet
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
        return synthesizer.output(request.schema, request.rng(), draw)


def _anchor(arguments: dict[str, Any]) -> dt.datetime | None:
    """The first date the caller asked about (a forecast for the 10th is about the 10th).

    A birth date is a fact about a person, not the date a question is about: it anchors nothing.
    """
    for key, value in arguments.items():
        if "birth" in key:
            continue
        if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ].*)?", value):
            try:
                moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if not dt.MINYEAR < moment.year < dt.MAXYEAR:
                continue  # year 1 or 9999: no room for the days around it that outputs draw
            return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    return None


# ---------------------------------------------------------------------------------------------
# Settling: fields drawn one by one are made to agree (the rules of worldmodel.plausibility)

USD_PER_UNIT = {
    "USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CHF": 1.12, "CAD": 0.74, "AUD": 0.66,
    "SEK": 0.095, "NOK": 0.094, "DKK": 0.145, "PLN": 0.25, "CNY": 0.14, "INR": 0.012, "BRL": 0.2,
    "MXN": 0.058, "SGD": 0.74, "NZD": 0.61, "KRW": 0.00075, "ZAR": 0.054, "HKD": 0.128,
}  # fmt: skip
"""Rough value of a currency in US dollars; a code not listed gets a stable made-up value."""
TYPICAL_KMH = {"walking": 5.0, "cycling": 18.0, "bicycling": 18.0, "driving": 70.0, "transit": 45.0}
ROUTE_KM = {"walking": (0.3, 15.0), "cycling": (1.0, 60.0), "bicycling": (1.0, 60.0)}
"""How far a route of each mode plausibly goes; any other mode: 2 to 900 km."""


def settle(
    output: dict[str, Any], schema: dict[str, Any], arguments: dict[str, Any], world: Population, rng: random.Random
) -> None:
    """Make the fields of ``output`` agree with each other, the ``arguments`` and the world.

    Record by record, top down (a nested record sees the fields of the records around it): web
    addresses and emails are on the record's domain, and the domain is the company's; a currency
    is the country's; a ``word_count`` counts the text beside it and ``max_words`` bounds it;
    low/min fields are not above their high/max partners. Then for the whole output: a route's
    distance and duration follow from its origin, destination and mode (and its steps add up to
    them), exchange rates from the currency pair (1 from a currency to itself), a ``limit``
    bounds the lists and a total counts at least what is listed. Arguments echoed into the output
    are never changed.
    """
    _settle_records(output, schema, arguments, {}, world)
    _settle_route(output, arguments, rng)
    _settle_rates(output, schema, arguments, rng)
    _settle_lists(output, schema, arguments)


def _settle_records(
    value: Any, schema: dict[str, Any], arguments: dict[str, Any], around: dict[str, Any], world: Population
) -> None:
    if isinstance(value, list):
        for item in value:
            _settle_records(item, schema.get("items", {}), arguments, around, world)
        return
    if not isinstance(value, dict):
        return
    props = schema.get("properties", {})
    given = {k for k, v in value.items() if k in arguments and arguments[k] == v}
    _settle_listing(value, props, given, world)
    _settle_web(value, props, around, given, world)
    _settle_currency(value, props, {**arguments, **around}, given)
    _settle_words(value, props, arguments)
    _settle_pairs(value)
    _settle_quote(value, props, given)
    _settle_bar(value)
    _settle_translation(value, arguments)
    inner = {**around, **{k: v for k, v in value.items() if not isinstance(v, dict | list)}}
    for key, item in value.items():
        _settle_records(item, props.get(key, {}), arguments, inner, world)


def _fields(props: dict[str, Any], kind: str) -> list[str]:
    return [k for k, p in props.items() if p.get(SEMANTIC_KEY) == kind]


DOMAIN_RE = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")


def _host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    host = (host or "").lower().removeprefix("www.")
    return host if DOMAIN_RE.match(host) else None


def _settle_web(
    record: dict[str, Any], props: dict[str, Any], around: dict[str, Any], given: set[str], world: Population
) -> None:
    """One domain per record: the given one, the given address's, the given company's, or the drawn company's."""
    companies = [k for k in _fields(props, "company_name") if isinstance(record.get(k), str)]
    urls = [k for k in _fields(props, "url") if isinstance(record.get(k), str)]
    by_name = {c.name.casefold(): c for c in (world.org, *world.companies)}
    by_domain = {c.domain: c for c in (world.org, *world.companies)}
    if isinstance(record.get("domain"), str) and props.get("domain", {}).get(SEMANTIC_KEY) == "web_domain":
        domain = record["domain"]
        if "domain" not in given:
            from_url = next((h for k in urls if k in given and (h := _host(record[k]))), None)
            named = next((record[k] for k in companies if k in given), None) or next(
                (record[k] for k in companies), None
            )
            if from_url:
                domain = from_url
            elif isinstance(named, str):
                company = by_name.get(named.casefold())
                slug = re.sub(r"[^a-z0-9]+", "", named.lower())[:24]
                domain = company.domain if company else (f"{slug}.com" if slug else domain)
            record["domain"] = domain
        owner = by_domain.get(domain)
        for key in companies:
            if key not in given:
                record[key] = owner.name if owner else domain.split(".")[0].capitalize()
    else:
        domain = around.get("domain")
    if not isinstance(domain, str) or not DOMAIN_RE.match(domain):
        return
    for key in urls:
        if key not in given and _host(record[key]) != domain:
            parts = urlsplit(record[key])
            record[key] = f"https://{domain}{parts.path or '/'}"
    people = [k for k in _fields(props, "person_name") if isinstance(record.get(k), str)]
    for key in _fields(props, "email_address"):
        if key not in given and isinstance(record.get(key), str) and not record[key].endswith("@" + domain):
            local = record[key].rpartition("@")[0]
            if people:
                local = ".".join(re.sub(r"[^a-z]+", "", w) for w in record[people[0]].lower().split()[:2]) or local
            record[key] = f"{local}@{domain}"


EXCHANGE_CURRENCY = {"NASDAQ": "USD", "NYSE": "USD", "LSE": "GBP", "XETRA": "EUR", "EURONEXT": "EUR", "SIX": "CHF",
                     "TSX": "CAD", "TSE": "JPY", "HKEX": "HKD", "ASX": "AUD"}  # fmt: skip


COUNTRY_EXCHANGES = {"US": ("NASDAQ", "NYSE"), "GB": ("LSE",), "DE": ("XETRA",), "FR": ("EURONEXT",),
                     "NL": ("EURONEXT",), "CH": ("SIX",), "CA": ("TSX",), "JP": ("TSE",), "HK": ("HKEX",),
                     "AU": ("ASX",)}  # fmt: skip
"""Where a company of a country lists (a US company trades on NASDAQ or NYSE, not HKEX)."""


def listed_ticker(company: str) -> str:
    """The ticker a company of the world is listed under: four letters from a hash of its name, the
    same whichever tool is asked (and not derivable from the name by reading it)."""
    digest = zlib.crc32(company.casefold().encode())
    return "".join(string.ascii_uppercase[(digest >> (5 * i)) % 26] for i in range(4))


def _settle_listing(record: dict[str, Any], props: dict[str, Any], given: set[str], world: Population) -> None:
    """One listing per company: a ticker found for a company is the one its quote and profile name,
    with the same exchange and currency (an honest agent got three companies for one ticker)."""
    tickers = [k for k, p in props.items() if str(p.get(SEMANTIC_KEY, "")).endswith(".ticker")]
    companies = [k for k in _fields(props, "company_name") if isinstance(record.get(k), str)]
    if len(tickers) != 1 or not companies or not isinstance(record.get(tickers[0]), str):
        return
    ticker, company = tickers[0], companies[0]
    if company in given and ticker not in given:
        record[ticker] = listed_ticker(record[company])
    elif ticker in given and company not in given:
        named = next((c.name for c in world.companies if listed_ticker(c.name) == record[ticker]), None)
        if named is None:
            return  # a ticker of no company of the world: its drawn name stands
        record[company] = named
    elif company not in given:
        return
    exchanges = props.get("exchange", {}).get("enum") or []
    country = next((c.country for c in world.companies if c.name.casefold() == record[company].casefold()), None)
    home = [e for e in exchanges if e in COUNTRY_EXCHANGES.get(str(country), ())] or exchanges
    if "exchange" in record and "exchange" not in given and home:
        record["exchange"] = home[zlib.crc32(record[company].casefold().encode()) % len(home)]
    currency = EXCHANGE_CURRENCY.get(str(record.get("exchange")))
    if currency and "currency" in record and "currency" not in given:
        record["currency"] = currency


def _settle_currency(record: dict[str, Any], props: dict[str, Any], scope: dict[str, Any], given: set[str]) -> None:
    country = record.get("country_code", scope.get("country_code"))
    currency = COUNTRY_CURRENCY.get(str(country))
    for key in ("currency", "currency_code"):
        if currency and key in record and key not in given and "enum" not in props.get(key, {}):
            record[key] = currency


def _settle_words(record: dict[str, Any], props: dict[str, Any], arguments: dict[str, Any]) -> None:
    texts = [k for k in _fields(props, "document_text") if isinstance(record.get(k), str)]
    most = arguments.get("max_words")
    if isinstance(most, int) and not isinstance(most, bool):
        for key in texts:
            words = record[key].split()
            if len(words) > most:
                record[key] = " ".join(words[:most])
    if len(texts) == 1 and isinstance(record.get("word_count"), int):
        record["word_count"] = len(record[texts[0]].split())


def _settle_pairs(record: dict[str, Any]) -> None:
    """``min_x`` ≤ ``max_x``, ``x_low`` ≤ ``x_high`` (numbers; times are ordered by :func:`_order_times`)."""
    for key in list(record):
        for small, large in (("min", "max"), ("low", "high")):
            partner = key.replace(small, large, 1)
            a, b = record.get(key), record.get(partner)
            if small in key and partner in record and _numeric(a) and _numeric(b) and a > b:  # type: ignore[operator]
                record[key], record[partner] = b, a


def _settle_quote(record: dict[str, Any], props: dict[str, Any], given: set[str]) -> None:
    """A quote's figures follow from its price and a plausible daily move (within 10%, and within
    the change's bounds): the previous close is the price before the move, the change their
    difference, the session's range holds the price, the open and the previous close (an honest
    agent found a price ten times the day's high, and a change and a percentage of opposite signs)."""
    drawn_price, drawn_percent = record.get("price"), record.get("change_percent")
    if not (_numeric(drawn_price) and _numeric(drawn_percent)) or "change_percent" in given:
        return
    price, percent = float(cast(float, drawn_price)), float(cast(float, drawn_percent))
    if price <= 0:
        return
    percent = percent / 10 if abs(percent) > 10 else percent
    change = price * percent / (100 + percent)
    bounds = props.get("change", {})
    low_bound, high_bound = bounds.get("minimum", -math.inf), bounds.get("maximum", math.inf)
    change = min(max(change, float(low_bound)), float(high_bound))
    previous = round(price - change, 2)
    if previous <= 0:
        return
    record["change_percent"] = round((price - previous) / previous * 100, 2)
    high, low = round(max(price, previous) * 1.01, 2), round(min(price, previous) * 0.99, 2)
    figures = {"previous_close": previous, "change": round(price - previous, 2), "open": previous,
               "day_high": high, "day_low": low}  # fmt: skip
    for key, figure in figures.items():
        if key in record and key not in given and _numeric(record[key]):
            record[key] = figure


def _settle_bar(record: dict[str, Any]) -> None:
    """A price bar's high is at least its open and close, its low at most."""
    values = [record.get(k) for k in ("open", "high", "low", "close")]
    if all(_numeric(v) for v in values):
        opened, high, low, close = (float(v) for v in values)  # type: ignore[arg-type]
        record["high"], record["low"] = max(high, opened, close), min(low, opened, close)


def _settle_translation(record: dict[str, Any], arguments: dict[str, Any]) -> None:
    """A translation bills its text's length, applies no more glossary terms than it has words, and
    untagged text is English (every seeded text is). The translated text itself stays drawn: an
    offline rendering of the input ("[de] Sign up …") would let a policy write the lookup's answer
    without calling the tool, so the reward for the lookup could be collected without doing it."""
    text = arguments.get("text")
    if "translated_text" not in record or not isinstance(text, str):
        return
    if "source_language" in record and not arguments.get("source_language"):
        record["source_language"] = "en"
    if _numeric(record.get("characters_billed")):
        record["characters_billed"] = len(text)
    if _numeric(record.get("glossary_terms_applied")):
        record["glossary_terms_applied"] = min(record["glossary_terms_applied"], len(text.split()))


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same_text(a: Any, b: Any) -> bool:
    return (
        isinstance(a, str) and isinstance(b, str) and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    )


def _settle_route(output: dict[str, Any], arguments: dict[str, Any], rng: random.Random) -> None:
    """Distance from origin and destination (0 to itself), duration from distance and mode, steps adding up."""
    distance = next((k for k in output if "distance" in k and _numeric(output[k])), None)
    duration = next((k for k in output if "duration" in k and _numeric(output[k])), None)
    if distance is None:
        return
    mode = str(arguments.get("mode", output.get("mode", "")))
    origin = arguments.get("origin", output.get("origin"))
    destination = arguments.get("destination", output.get("destination"))
    low, high = ROUTE_KM.get(mode, (2.0, 900.0))
    km = 0.0 if _same_text(origin, destination) else round(rng.uniform(low, high), 2)
    speed = TYPICAL_KMH.get(mode, 70.0) * rng.uniform(0.8, 1.0)
    parts = [
        v
        for v in output.values()
        if isinstance(v, list) and v and all(isinstance(i, dict) and distance in i for i in v)
    ]
    legs = parts[0] if parts else []
    weights = [rng.uniform(0.2, 1.0) for _ in legs]
    shares = [round(km * w / sum(weights), 2) for w in weights]
    if shares:
        shares[-1] = max(0.0, round(km - sum(shares[:-1]), 2))
    minutes = [math.ceil(share / speed * 60) for share in shares]
    for leg, share, spent in zip(legs, shares, minutes, strict=True):
        leg[distance] = share
        if duration is not None and duration in leg:
            leg[duration] = spent
    output[distance] = km
    if duration is not None:
        output[duration] = sum(minutes) if legs else math.ceil(km / speed * 60)


def _usd_value(code: Any) -> float:
    if code in USD_PER_UNIT:
        return USD_PER_UNIT[code]
    return 0.01 + (zlib.crc32(str(code).encode()) % 5000) / 1000  # a stable made-up value, 0.01 to 5


def _significant(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


def _settle_rates(
    output: dict[str, Any], schema: dict[str, Any], arguments: dict[str, Any], rng: random.Random
) -> None:
    """Exchange rates from the currency pair: 1 to itself, ``inverse_rate`` = 1/``rate``, aggregates from the series."""
    scope = {**output, **arguments}
    pairs = (("base_currency", "quote_currency"), ("from_currency", "to_currency"))
    pair = next(((scope[a], scope[b]) for a, b in pairs if a in scope and b in scope), None)
    if pair is None:
        return
    props = schema.get("properties", {})
    same = pair[0] == pair[1]
    mid = 1.0 if same else _usd_value(pair[0]) / _usd_value(pair[1])

    def drawn() -> float:
        return 1.0 if same else _significant(mid * rng.uniform(0.99, 1.01))

    series: list[float] = []
    for key, value in output.items():
        items = props.get(key, {}).get("items", {}).get("properties", {})
        if isinstance(value, list) and items.get("rate", {}).get(SEMANTIC_KEY) == "fx.exchange_rate":
            for item in value:
                if isinstance(item, dict) and "rate" in item:
                    item["rate"] = drawn()
                    series.append(item["rate"])
    rate = drawn()
    if "rate" in output:
        output["rate"] = rate
    if "inverse_rate" in output:
        output["inverse_rate"] = 1.0 if same else _significant(1 / output.get("rate", rate))
    aggregates = {
        "min_rate": min(series, default=rate),
        "max_rate": max(series, default=rate),
        "average_rate": _significant(sum(series) / len(series)) if series else rate,
    }
    output.update({k: v for k, v in aggregates.items() if k in output})
    if _numeric(output.get("amount")) and "converted_amount" in output:
        output["converted_amount"] = round(output["amount"] * output.get("rate", rate), 2)


def _settle_lists(output: dict[str, Any], schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    """A ``limit`` argument bounds every list; a total counts at least the items listed."""
    props = schema.get("properties", {})
    limit = arguments.get("limit")
    lists = [k for k, v in output.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
    for key in lists:
        if isinstance(limit, int | float) and len(output[key]) > limit:
            keep = max(int(limit), int(props.get(key, {}).get("minItems", 0)))
            output[key] = output[key][:keep]
    for key in ("total", "total_results"):
        if len(lists) == 1 and _numeric(output.get(key)):
            output[key] = max(output[key], len(output[lists[0]]))
