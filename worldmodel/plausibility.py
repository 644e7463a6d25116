"""Plausibility of simulated outputs: do they respect their arguments, the world's clock and each other?

A schema-valid output can still be nonsense — 2,472 km from an address to itself, a page of
twenty words counted as 310,129, a candidate born next week, a dollar worth 702 dollars. The
:func:`check` here names such contradictions. Its rules are generic, driven by the semantic types
and the names of fields (``*_km`` distances, ``word_count``, ``*birth*``, ``currency``,
``domain``…), so they apply to every simulated tool, not only to the ones that motivated them:

- ``same-place``: origin equal to destination → every distance, and every duration beside it, is 0;
- ``speed``: a distance and its duration imply a speed the travel mode can reach (walking, cycling,
  driving, transit; anything else: no faster than a plane);
- ``parts-sum``: the parts of a whole (a route's steps) add up to it (distance, duration);
- ``url-domain`` / ``email-domain``: addresses in a record with a ``domain`` (or under one) are on it,
  so a website, a fetched page or a contact agrees with the domain returned;
- ``word-count``: ``word_count`` is the number of words of the text beside it, and a ``max_words``
  argument bounds the words of every text returned;
- ``birth``: birth dates are in the past and give an age of at most 120 years;
- ``clock``: system and past events (created, updated, crawled, published…) are not after now; what
  is estimated, expected, expiring or next is not before now (when no date was asked about);
- ``order``: low ≤ high, min ≤ average ≤ max, start ≤ end, departure ≤ arrival, created ≤ expires;
- ``self-rate`` / ``inverse-rate`` / ``conversion``: a rate from a currency to itself is 1,
  ``inverse_rate`` is 1 / ``rate``, a converted amount is the amount times the rate;
- ``country-currency``: a ``currency`` beside (or under) a known ``country_code`` is that country's;
- ``limit`` / ``count``: a ``limit`` argument bounds every list returned; a total is at least the
  number of items listed beside it.

Values the caller gave (an argument echoed into the output) are the caller's word and are not
judged: a birth date asked about is not the tool's to correct.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from servers.types import SEMANTIC_KEY

COUNTRY_CURRENCY = {
    "US": "USD", "GB": "GBP", "DE": "EUR", "FR": "EUR", "ES": "EUR", "IT": "EUR", "NL": "EUR", "BE": "EUR",
    "AT": "EUR", "IE": "EUR", "PT": "EUR", "FI": "EUR", "GR": "EUR", "JP": "JPY", "CH": "CHF", "CA": "CAD",
    "AU": "AUD", "SE": "SEK", "NO": "NOK", "DK": "DKK", "PL": "PLN", "CZ": "CZK", "CN": "CNY", "IN": "INR",
    "BR": "BRL", "MX": "MXN", "SG": "SGD", "NZ": "NZD", "KR": "KRW", "ZA": "ZAR", "HK": "HKD", "TR": "TRY",
}  # fmt: skip
"""The currency of a country, for the countries a world names (others are not judged)."""

MAX_KMH = {"walking": 8.0, "cycling": 40.0, "bicycling": 40.0, "driving": 150.0, "transit": 150.0}
"""Fastest plausible average speed by travel mode; any other mode: :data:`FASTEST_KMH`."""
FASTEST_KMH = 1000.0

PAST = ("created", "updated", "crawled", "registered", "published", "ordered", "issued", "filed")
"""Name parts of times that have happened: never after the world's clock."""
FUTURE = ("estimated_", "expected_", "expires", "next_")
"""Name parts of times still to come: never before the world's clock (unless a date was asked about)."""
PAIRS = (("min", "max"), ("low", "high"), ("start", "end"), ("departure", "arrival"), ("created", "expires"))
"""Name parts of a field and its partner that is never smaller (``min_rate`` ≤ ``max_rate``)."""
DOMAIN = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")
MAX_AGE_YEARS = 120


@dataclass(frozen=True)
class Violation:
    """One broken rule: which, on which output field (a dotted path), and what is wrong."""

    rule: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.field}: {self.message}"


@dataclass
class _Record:
    path: str
    value: dict[str, Any]
    props: dict[str, Any]
    context: dict[str, Any]  # the fields of the enclosing records, innermost last


def check(tool: Any, arguments: dict[str, Any], output: dict[str, Any], now: dt.datetime) -> list[Violation]:
    """Every plausibility rule ``output`` breaks, for a tool spec (``worldmodel.spec.SimTool`` or
    anything with an ``output_schema``), the ``arguments`` it was called with and the world's ``now``."""
    now = now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    found: list[Violation] = []
    records = list(_records(output, tool.output_schema, "", {}))
    for record in records:
        for rule in RECORD_RULES:
            found.extend(rule(record, arguments, now))
    found.extend(_limit(output, arguments))
    return found


def _records(value: Any, schema: dict[str, Any], path: str, context: dict[str, Any]) -> Any:
    """Every object in ``value`` with its schema properties and the fields of the objects around it."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        yield _Record(path, value, props, context)
        inner = {**context, **{k: v for k, v in value.items() if not isinstance(v, dict | list)}}
        for key, item in value.items():
            yield from _records(item, props.get(key, {}), f"{path}.{key}" if path else key, inner)
    elif isinstance(value, list):
        items = schema.get("items", {})
        for index, item in enumerate(value):
            yield from _records(item, items, f"{path}[{index}]", context)


def _where(record: _Record, key: str) -> str:
    return f"{record.path}.{key}" if record.path else key


def _semantic(record: _Record, key: str) -> str:
    prop = record.props.get(key, {})
    return str(prop.get(SEMANTIC_KEY) or prop.get("items", {}).get(SEMANTIC_KEY) or "")


def _echoed(record: _Record, key: str, arguments: dict[str, Any]) -> bool:
    """Whether ``key`` holds what the caller passed under the same name."""
    return key in arguments and arguments[key] == record.value.get(key)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _moment(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not re.match(r"\d{4}-\d{2}-\d{2}", value):
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _close(a: float, b: float, rel: float = 0.01, abs_: float = 0.01) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


# --- places and routes -------------------------------------------------------------------------


def _is_distance(key: str) -> bool:
    return "distance" in key


def _is_duration(key: str) -> bool:
    return "duration" in key


def _same(a: Any, b: Any) -> bool:
    return (
        isinstance(a, str) and isinstance(b, str) and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    )


def _same_place(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    origin = arguments.get("origin", record.context.get("origin"))
    destination = arguments.get("destination", record.context.get("destination"))
    if not _same(origin, destination):
        return []
    has_distance = any(_is_distance(k) for k in record.value)
    return [
        Violation("same-place", _where(record, k), f"is {v} from {origin!r} to itself; it should be 0")
        for k, v in record.value.items()
        if (_is_distance(k) or (has_distance and _is_duration(k))) and _number(v) not in (None, 0.0)
    ]


def _speed(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    distances = [k for k in record.value if _is_distance(k) and _number(record.value[k])]
    durations = [k for k in record.value if _is_duration(k) and _number(record.value[k]) is not None]
    if len(distances) != 1 or len(durations) != 1:
        return []
    km, minutes = float(record.value[distances[0]]), float(record.value[durations[0]])
    mode = record.value.get("mode", record.context.get("mode", arguments.get("mode")))
    fastest = MAX_KMH.get(str(mode), FASTEST_KMH)
    if minutes <= 0 or km / (minutes / 60) > fastest * 1.05 + 1:
        speed = "instantly" if minutes <= 0 else f"at {km / (minutes / 60):.0f} km/h"
        return [
            Violation(
                "speed",
                _where(record, durations[0]),
                f"{km} km in {minutes:g} min is travelled {speed}, beyond {fastest:g} km/h ({mode or 'any mode'})",
            )
        ]
    return []


def _parts_sum(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    found = []
    for key, parts in record.value.items():
        if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
            continue
        for field in (k for k in parts[0] if _is_distance(k) or _is_duration(k)):
            whole = _number(record.value.get(field))
            values = [_number(p.get(field)) for p in parts]
            if whole is None or any(v is None for v in values):
                continue
            total = sum(v for v in values if v is not None)
            if not _close(total, whole, rel=0.02, abs_=0.05 * len(values) + 1):
                found.append(
                    Violation("parts-sum", _where(record, f"{key}[].{field}"), f"add up to {total:g}, not {whole:g}")
                )
    return found


# --- the web -----------------------------------------------------------------------------------


def _host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.lower() if host else None


def _on(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def _web(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    own = record.value.get("domain")
    domain = own if isinstance(own, str) else record.context.get("domain")
    if not isinstance(domain, str) or not DOMAIN.match(domain.lower()):
        return []
    domain = domain.lower()
    found = []
    for key, value in record.value.items():
        if not isinstance(value, str) or key == "domain":
            continue
        kind = _semantic(record, key)
        if kind == "url":
            host = _host(value)
            if host is None or (not DOMAIN.match(host) and _echoed(record, key, arguments)):
                continue  # an address the caller gave that names no domain: nothing to agree with
            if not _on(host, domain):
                found.append(Violation("url-domain", _where(record, key), f"{value!r} is not on domain {domain!r}"))
        elif (
            kind == "email_address"
            and not _echoed(record, key, arguments)
            and not _on(value.rpartition("@")[2].lower(), domain)
        ):
            found.append(Violation("email-domain", _where(record, key), f"{value!r} is not at domain {domain!r}"))
    return found


# --- text --------------------------------------------------------------------------------------


def _is_text(record: _Record, key: str) -> bool:
    return _semantic(record, key) == "document_text" or key in ("text", "content")


def _words(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    found = []
    texts = [k for k in record.value if isinstance(record.value[k], str) and _is_text(record, k)]
    count = _number(record.value.get("word_count"))
    if count is not None and len(texts) == 1:
        words = len(record.value[texts[0]].split())
        if abs(words - count) > max(2, 0.05 * words):
            found.append(
                Violation(
                    "word-count", _where(record, "word_count"), f"is {count:g} but {texts[0]!r} has {words} words"
                )
            )
    most = _number(arguments.get("max_words"))
    for key in texts if most is not None else ():
        words = len(record.value[key].split())
        if most is not None and words > most:
            found.append(Violation("word-count", _where(record, key), f"has {words} words, above max_words {most:g}"))
    return found


# --- dates -------------------------------------------------------------------------------------


def _dates(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    found = []
    asked_date = any(_moment(v) is not None for v in arguments.values())
    for key, value in record.value.items():
        moment = _moment(value)
        if moment is None or _echoed(record, key, arguments):
            continue
        where, is_date = _where(record, key), "T" not in value
        late = moment.date() > now.date() if is_date else moment > now + dt.timedelta(minutes=1)
        early = moment.date() < now.date() if is_date else moment < now - dt.timedelta(minutes=1)
        if "birth" in key:
            age = (now - moment).days / 365.25
            if late or age > MAX_AGE_YEARS:
                found.append(Violation("birth", where, f"{value} gives an age of {age:.0f} years on {now.date()}"))
        elif any(p in key for p in PAST) and late:
            found.append(Violation("clock", where, f"{value} is after the world's clock {now.isoformat()}"))
        elif any(key.startswith(p) or p in key for p in FUTURE) and early and not asked_date:
            found.append(Violation("clock", where, f"{value} is before the world's clock {now.isoformat()}"))
    for key, value in record.value.items():
        years = _number(value)
        if (key == "age" or key.endswith("_age")) and years is not None and not 0 <= years <= MAX_AGE_YEARS:
            found.append(Violation("birth", _where(record, key), f"an age of {years:g} years is not plausible"))
    return found


def _order(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    found = []
    fields = record.value
    for key in fields:
        for small, large in PAIRS:
            if small not in key:
                continue
            partner = key.replace(small, large, 1)
            if partner not in fields or (_echoed(record, key, arguments) and _echoed(record, partner, arguments)):
                continue
            a, b = fields[key], fields[partner]
            low, high = (_number(a), _number(b)) if _number(a) is not None else (_moment(a), _moment(b))
            if low is not None and high is not None and low > high:  # type: ignore[operator]
                found.append(Violation("order", _where(record, key), f"{a} is after its {partner!r} {b}"))
    for key in fields:
        if "average" in key:
            average = _number(fields[key])
            low = _number(fields.get(key.replace("average", "min", 1)))
            high = _number(fields.get(key.replace("average", "max", 1)))
            if average is not None and low is not None and high is not None and not low <= average <= high:
                found.append(Violation("order", _where(record, key), f"{average} is not between {low} and {high}"))
    return found


# --- money -------------------------------------------------------------------------------------

CURRENCY_PAIRS = (("base_currency", "quote_currency"), ("from_currency", "to_currency"))


def _is_rate(record: _Record, key: str) -> bool:
    return _semantic(record, key).endswith("exchange_rate") or key == "rate"


def _rates(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    found: list[Violation] = []
    scope = {**arguments, **record.context, **record.value}
    pair = next(((scope[a], scope[b]) for a, b in CURRENCY_PAIRS if a in scope and b in scope), None)
    rates = {k: _number(v) for k, v in record.value.items() if _is_rate(record, k) and _number(v) is not None}
    if pair and _same(*pair):
        found.extend(
            Violation("self-rate", _where(record, k), f"is {v:g} from {pair[0]} to itself; it should be 1")
            for k, v in rates.items()
            if v is not None and not _close(v, 1.0, rel=1e-6, abs_=1e-9)
        )
    rate, inverse = rates.get("rate"), rates.get("inverse_rate")
    if rate and inverse and not _close(rate * inverse, 1.0, rel=0.01):
        found.append(Violation("inverse-rate", _where(record, "inverse_rate"), f"{inverse:g} is not 1 / {rate:g}"))
    amount, converted = _number(record.value.get("amount")), _number(record.value.get("converted_amount"))
    if (
        rate is not None
        and amount is not None
        and converted is not None
        and not _close(converted, amount * rate, rel=0.01, abs_=0.01)
    ):
        found.append(
            Violation("conversion", _where(record, "converted_amount"), f"{converted:g} is not {amount:g} × {rate:g}")
        )
    return found


def _country_currency(record: _Record, arguments: dict[str, Any], now: dt.datetime) -> list[Violation]:
    country = record.value.get("country_code", record.context.get("country_code", arguments.get("country_code")))
    expected = COUNTRY_CURRENCY.get(str(country))
    found = []
    for key in ("currency", "currency_code"):
        value = record.value.get(key)
        if expected and isinstance(value, str) and value != expected and not _echoed(record, key, arguments):
            found.append(
                Violation("country-currency", _where(record, key), f"is {value}, but {country} pays in {expected}")
            )
    return found


# --- lists -------------------------------------------------------------------------------------


def _limit(output: dict[str, Any], arguments: dict[str, Any]) -> list[Violation]:
    found = []
    limit = _number(arguments.get("limit"))
    lists = {k: v for k, v in output.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
    for key, items in lists.items():
        if limit is not None and len(items) > limit:
            found.append(Violation("limit", key, f"lists {len(items)} items, above limit {limit:g}"))
    for key in ("total", "total_results"):
        total = _number(output.get(key))
        if total is not None and len(lists) == 1 and total < len(next(iter(lists.values()))):
            found.append(
                Violation("count", key, f"{total:g} is fewer than the {len(next(iter(lists.values())))} listed")
            )
    return found


RECORD_RULES = (_same_place, _speed, _parts_sum, _web, _words, _dates, _order, _rates, _country_currency)
