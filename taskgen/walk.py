"""Seeded random walks over the dependency graph, instantiated against a seeded world.

A walk is executed while it is built, in a scratch world of the task's seed: it starts at a read
of seeded data (a listing whose record the instruction can name by a title, a name, …), then
moves to tools that can consume the values seen so far, preferring tools of another service, so
that values travel between services. Every argument is either *carried* (a ``$ref`` to a value
in an earlier result: the agent must find it), *given* (a literal the instruction states: a
name, a subject line, a date) or not passed at all. Steps that fail are tried elsewhere; writes
that change nothing are refused. The result is the oracle plan plus what the instruction and
the rubric need to know about each step. A write the walk tries and drops is undone exactly (a
savepoint of its service), so the walk's world ends as the plan alone, run from the seed, leaves
it, and each write knows its changes: what the rubric is derived from.
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hub.core import Hub
from hub.registry import ToolEntry
from hub.world import ServiceSlot, World
from servers.framework import Envelope
from servers.roles import ROLE_KEY, SYSTEM
from servers.state import Change, diff, stable_hash
from servers.types import SEMANTIC_KEY, resolve_ref
from servers.values import state_values
from taskgen.graph import NON_LINKING, field_types, param_types
from taskgen.task import resolve
from worldmodel.rules import Synthesizer

ANCHOR_TYPES = (
    "title",
    "person_name",
    "company_name",
    "product_name",
    "file_name",
    "channel_name",
    "event_name",
    "reference_code",
    "username",
)
GIVEN_TYPES = frozenset(
    {
        "person_name",
        "company_name",
        "city",
        "country_code",
        "currency_code",
        "product_name",
        "product_sku",
        "department",
        "job_title",
        "channel_name",
        "date",
        "date_time",
        "tag",
        "email_address",
        "web_domain",
        "url",
        "street_address",
        "location",
        "time_zone",
    }
)
MENTIONABLE = frozenset(
    {
        "reference_code",
        "email_address",
        "person_name",
        "company_name",
        "phone_number",
        "product_sku",
        "url",
        "city",
        "product_name",
    }
)
LITERAL_TYPES = frozenset(
    {
        "money_amount",
        "quantity",
        "count",
        "percentage",
        "flag",
        "priority",
        "duration_minutes",
        "duration_days",
        "duration_hours",
        "rating",
    }
)
FREE_TEXT = frozenset({"title", "document_text", "note", "message_text", "search_query", "payload_text", "cell_value"})


@dataclass
class Carried:
    """A value seen in a result that a later step may carry."""

    type: str
    value: Any
    step: int
    ref: str
    service: str
    field: str
    label: str


@dataclass
class StepInfo:
    """One executed step: the call, how each argument was filled, and what it produced."""

    index: int
    entry: ToolEntry
    arguments: dict[str, Any]
    resolved: dict[str, Any]
    envelope: Envelope
    given: dict[str, Any] = field(default_factory=dict)
    carried: dict[str, Carried] = field(default_factory=dict)
    entity: str = ""
    anchor: str | None = None
    record_ref: str | None = None
    kinds: dict[str, str] = field(default_factory=dict)  # parameter -> semantic type
    changes: list[Change] | None = None  # what the write changed there


@dataclass
class Walk:
    steps: list[StepInfo]
    pool: list[Carried]
    world: World
    mentions: dict[tuple[int, str], Carried] = field(default_factory=dict)  # (step, free-text arg) → value
    seeded: dict[str, dict[str, frozenset[Any]]] = field(default_factory=dict)  # service → type → seeded values

    @property
    def services(self) -> list[str]:
        return list(dict.fromkeys(s.entry.service for s in self.steps))

    @property
    def transfers(self) -> list[tuple[Carried, StepInfo, str]]:
        return [(c, s, arg) for s in self.steps for arg, c in s.carried.items() if c.service != s.entry.service]


class WalkError(Exception):
    """The walk could not be completed; ``reason`` is what gates count."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@functools.lru_cache(maxsize=65536)
def humanize(name: str) -> str:
    return re.sub(r"_+", " ", name).strip()


def resolve_schema(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Like :func:`servers.types.resolve_ref`, also taking the non-null branch of an optional."""
    if "$ref" in schema:
        return resolve_ref(schema, defs)
    for branch in schema.get("anyOf", []):
        if branch.get("type") != "null":
            return resolve_schema(branch, defs)
    return schema


LISTING_OPS = ("list", "search")
"""Reads that list records of an entity: where a walk starts."""
DELETE_OPS = ("delete", "remove")
"""Writes that take a record or an item away: a walk never takes them."""


def op_of(entry: ToolEntry) -> str | None:
    """What ``entry`` declares it does (:attr:`servers.tooling.ToolMeta.op`), or None for a tool
    that declares nothing (an external MCP tool), which is then only a read or a write."""
    return entry.meta.op if entry.meta is not None else None


def entity_of(entry: ToolEntry) -> str:
    """The kind of record ``entry`` declares it is about, in words (``journal entry``); "" when it
    declares none (a lookup of the outside world, an external MCP tool without metadata)."""
    if entry.meta is None:
        # Fallback for a tool without metadata (external MCP): its name is not read for meaning.
        return ""
    return humanize(entry.meta.entity or "")


def is_listing(entry: ToolEntry) -> bool:
    """Whether ``entry`` lists records (a walk's start): its declared op is a listing."""
    if entry.meta is None:
        # Fallback for a tool without metadata (external MCP): a read whose data is an array.
        schema = dict(entry.output_schema or {})
        data = resolve_schema(schema.get("properties", {}).get("data", {}), schema.get("$defs", {}))
        return entry.kind == "read" and data.get("type") == "array"
    return entry.meta.op in LISTING_OPS


def collection_entities(hub: Hub, service: str) -> dict[str, str]:
    """Per state collection of ``service`` (its last path segment: ``deals``), the entity its tools
    declare over it, in words (built once per hub). Where several entities share a collection (the
    items of a record), the one that record-level tools (list, get, create, delete) declare."""
    found = hub.derived.get(("collection_entities", service))
    if found is None:
        votes: dict[str, Counter[str]] = {}
        for entry in hub.registry.services[service].tools:
            meta = entry.meta
            if meta is not None and meta.collection and meta.entity:
                weight = 10 if meta.op in ("list", "get", "create", "delete") else 1
                votes.setdefault(meta.collection.rsplit("/", 1)[-1], Counter())[meta.entity] += weight
        found = {key: humanize(counts.most_common(1)[0][0]) for key, counts in votes.items()}
        hub.derived[("collection_entities", service)] = found
    assert isinstance(found, dict)
    return found


def _titled(schema: dict[str, Any]) -> str:
    """The name a record schema's model gives its records, in words (``LineItem`` → ``line item``)."""
    title = schema.get("title")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", title).lower() if isinstance(title, str) else ""


def records_of(
    entry: ToolEntry, data: Any, collections: dict[str, str] | None = None
) -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """(ref path, record, record schema, entity noun) of each record in a result.

    The noun is the entity ``entry`` declares; records under another key of the result are named
    by the entity of that collection (``collections``: :func:`collection_entities`), else by their
    model's name (an invoice's ``lines``: ``line item``), else by the tool's entity."""
    out_schema = dict(entry.output_schema or {})
    defs = out_schema.get("$defs", {})
    schema = resolve_schema(out_schema.get("properties", {}).get("data", {}), defs)
    entity = entity_of(entry)
    if isinstance(data, list):
        items = resolve_schema(schema.get("items", {}), defs)
        return [(f"data.{i}", r, items, entity) for i, r in enumerate(data) if isinstance(r, dict)]
    if not isinstance(data, dict):
        return []
    props = schema.get("properties", {})
    arrays = [k for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], dict) and k in props]
    if arrays:
        key = "items" if "items" in arrays else arrays[0]
        items = resolve_schema(resolve_schema(props[key], defs).get("items", {}), defs)
        if key != "items" and (entry.meta is None or key != entry.meta.collection):
            entity = (collections or {}).get(key) or _titled(items) or entity
        return [(f"data.{key}.{i}", r, items, entity) for i, r in enumerate(data[key]) if isinstance(r, dict)]
    return [("data", data, schema, entity)]


_PROPERTY_TYPES: dict[int, tuple[dict[str, Any], dict[str, set[str]], list[str]]] = {}


def property_types(props: dict[str, Any]) -> tuple[dict[str, set[str]], list[str]]:
    """The semantic types of each property of a record schema, and the properties that can anchor
    a record (in :data:`ANCHOR_TYPES` order). Cached per schema object: schemas are read-only."""
    found = _PROPERTY_TYPES.get(id(props))
    if found is None or found[0] is not props:
        typed = {k: field_types(p) for k, p in props.items()}
        anchors = [key for kind in ANCHOR_TYPES for key, kinds in typed.items() if kind in kinds]
        found = (props, typed, anchors)
        if props:  # the object is kept alive with its entry, so its id is never reused
            _PROPERTY_TYPES[id(props)] = found
    return found[1], found[2]


def anchor_of(record: dict[str, Any], schema: dict[str, Any]) -> str | None:
    for key in property_types(schema.get("properties", {}))[1]:
        value = record.get(key)
        if isinstance(value, str) and 2 < len(value) <= 80:
            return value
    return None


class Walker:
    """Builds walks for one hub; caches per-service seeded values and tool signatures."""

    def __init__(self, hub: Hub, seed: int) -> None:
        self.hub = hub
        self.seed = seed
        self.entries = list(hub.registry.tools.values())
        self.params = {e.qualified: param_types(e) for e in self.entries}
        # Required types a tool can only get from an earlier result (ids and the like): a tool is a
        # candidate only when the pool already holds every one of them.
        self.needs = {
            e.qualified: frozenset(
                kind
                for name, kind in self.params[e.qualified].items()
                if name in e.input_schema.get("required", []) and not self._fillable(e, name, kind)
            )
            for e in self.entries
        }
        # Per tool, its required parameters as (name, type, is a list, resolved schema): what
        # ``fill`` reads for every candidate of every step.
        self.required: dict[str, list[tuple[str, str, bool, dict[str, Any]]]] = {}
        for e in self.entries:
            required = set(e.input_schema.get("required", []))
            self.required[e.qualified] = [
                (name, kind, *self._param_schema(e, name))
                for name, kind in self.params[e.qualified].items()
                if name in required
            ]
        self.deletes = frozenset(e.qualified for e in self.entries if op_of(e) in DELETE_OPS)
        self._values: dict[str, dict[str, list[Any]]] = {}
        self._sets: dict[str, dict[str, frozenset[Any]]] = {}
        self.cache: dict[Any, Any] = {}  # other per-seed data derived from the seeded worlds
        population = _population(seed)
        self.synth = Synthesizer(population)
        self.clock = population.now.isoformat().replace("+00:00", "Z")  # the seeded worlds' "now"
        self.listings = [e for e in self.entries if is_listing(e)]

    @staticmethod
    def _param_schema(entry: ToolEntry, name: str) -> tuple[bool, dict[str, Any]]:
        prop = entry.input_schema.get("properties", {}).get(name, {})
        defs = entry.input_schema.get("$defs", {})
        resolved = resolve_schema(dict(prop), defs)
        return resolved.get("type") == "array", resolved

    def _fillable(self, entry: ToolEntry, name: str, kind: str) -> bool:
        prop = resolve_schema(
            dict(entry.input_schema.get("properties", {}).get(name, {})), entry.input_schema.get("$defs", {})
        )
        item = resolve_schema(prop.get("items", {}), {}) if prop.get("type") == "array" else prop
        return "enum" in item or kind in FREE_TEXT or kind in GIVEN_TYPES or kind in LITERAL_TYPES

    def prepare(self) -> Walker:
        """Read every service's seeded world now (state and values), not on first use: a parent
        process does it once before forking its workers, instead of every worker on its first walks
        (tens of milliseconds a service)."""
        for service in self.hub.registry.services:
            self.seeded_sets(service)
            self.anchor_counts(service)
            self.seeded_ids(service)
        return self

    def seeded_values(self, service: str) -> dict[str, list[Any]]:
        if service not in self._values:
            native = self.hub.registry.services[service].native
            self._values[service] = (
                state_values(native, self.hub.seeded_slot(service, self.seed).read_state()) if native else {}
            )
        return self._values[service]

    def anchor_counts(self, service: str) -> Counter[str]:
        """How many seeded records of ``service`` hold each text value (in any field)."""
        found = self.cache.get(("anchor_counts", service))
        if found is None:
            found = Counter()
            for record in self.seeded_records(service):
                found.update({v for v in record.values() if isinstance(v, str)})
            self.cache[("anchor_counts", service)] = found
        return found

    def seeded_ids(self, service: str) -> frozenset[str]:
        """The ids of the seeded records of ``service``."""
        found = self.cache.get(("seeded_ids", service))
        if found is None:
            found = frozenset(str(r["id"]) for r in self.seeded_records(service) if "id" in r)
            self.cache[("seeded_ids", service)] = found
        return found

    def seeded_records(self, service: str) -> list[dict[str, Any]]:
        if self.hub.registry.services[service].native is None:
            return []
        state = self.hub.seeded_slot(service, self.seed).snapshot()
        records: list[dict[str, Any]] = []
        for key, value in state.items():
            groups = value.values() if key == "collections" and isinstance(value, dict) else [value]
            for group in groups:
                if isinstance(group, dict):
                    records.extend(r for r in group.values() if isinstance(r, dict))
        return records

    def _names_one(self, entry: ToolEntry, record: dict[str, Any], anchor: str | None) -> bool:
        """Whether ``anchor`` names exactly one record of the service in the walk's world: the
        instruction names records by such values, and a name several records share leaves a careful
        agent guessing. Simulated services keep no seeded records: their names are not checked."""
        if anchor is None:
            return False
        if self.hub.registry.services[entry.service].native is None:
            return True
        others = self._made.get((entry.service, anchor), set()) - {str(record.get("id"))}
        existing = record.get("id") in self.seeded_ids(entry.service)
        return self.anchor_counts(entry.service)[anchor] + len(others) == (1 if existing else 0)

    def seeded_sets(self, service: str) -> dict[str, frozenset[Any]]:
        """The seeded values of ``service`` by type, as sets (hashable values only)."""
        found = self._sets.get(service)
        if found is None:
            found = self._sets[service] = {
                kind: frozenset(v for v in values if isinstance(v, str | int | float))
                for kind, values in self.seeded_values(service).items()
            }
        return found

    # -- filling arguments -------------------------------------------------------------------

    def _literal(
        self,
        entry: ToolEntry,
        name: str,
        kind: str,
        rng: random.Random,
        pool: list[Carried],
        prop: dict[str, Any] | None = None,
    ) -> Any:
        if prop is None:
            prop = self._param_schema(entry, name)[1]
        if "enum" in prop:
            return rng.choice(prop["enum"])
        if prop.get("type") == "array":
            item = resolve_schema(prop.get("items", {}), {})
            value = self._literal_scalar(entry, kind, item, rng, pool)
            return None if value is None else [value]
        return self._literal_scalar(entry, kind, prop, rng, pool)

    def _literal_scalar(
        self, entry: ToolEntry, kind: str, prop: dict[str, Any], rng: random.Random, pool: list[Carried]
    ) -> Any:
        if "enum" in prop:
            return rng.choice(prop["enum"])
        if kind in FREE_TEXT:
            return None  # written by the composer, which knows the story
        seeded = self.seeded_values(entry.service).get(kind, []) if kind not in ("date", "date_time") else []
        if kind in GIVEN_TYPES and seeded:
            return rng.choice(seeded)
        if kind in GIVEN_TYPES or kind in LITERAL_TYPES:
            value = self.synth.value({**prop, SEMANTIC_KEY: kind}, rng, kind)
            if kind in ("date", "date_time"):
                value = self.synth.value({**prop, SEMANTIC_KEY: kind}, rng, "scheduled")  # the future
            return value
        return None

    def fill(
        self,
        entry: ToolEntry,
        pool: list[Carried],
        rng: random.Random,
        last_service: str | None,
        by_type: dict[str, list[Carried]] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Carried]] | None:
        """(arguments, given literals, carried values) for every required parameter, or None.

        ``by_type`` is ``pool`` grouped by linking type (:func:`linkable`), when the caller fills
        many tools from the same pool.
        """
        args: dict[str, Any] = {}
        given: dict[str, Any] = {}
        carried: dict[str, Carried] = {}
        if by_type is None:
            by_type = linkable(pool)
        for name, kind, is_list, prop in self.required[entry.qualified]:
            options = by_type.get(kind)
            if options:
                foreign = [c for c in options if c.service != entry.service]
                choice = rng.choice(foreign or options)
                args[name] = [{"$ref": choice.ref}] if is_list else {"$ref": choice.ref}
                carried[name] = choice
                continue
            if kind in FREE_TEXT:
                given[name] = None  # filled by the composer
                continue
            value = self._literal(entry, name, kind, rng, pool, prop)
            if value is None:
                return None
            args[name] = value
            given[name] = value
        return args, given, carried

    # -- walking -----------------------------------------------------------------------------

    def _values_of(self, step: StepInfo, path: str, record: dict[str, Any], schema: dict[str, Any]) -> list[Carried]:
        out = []
        props = schema.get("properties", {})
        typed = property_types(props)[0]
        native = self.hub.registry.services[step.entry.service].native
        maintained = native.system_fields if native is not None else frozenset()
        for key, value in record.items():
            kinds = typed.get(key, ())
            if len(kinds) != 1:
                continue
            if key in maintained or (props.get(key) or {}).get(ROLE_KEY) == SYSTEM:
                continue  # a stamp the service keeps (created/updated): no one carries it elsewhere
            kind = next(iter(kinds))
            ref = f"steps.{step.index}.{path}.{key}"
            if isinstance(value, list) and value and isinstance(value[0], str | int | float):
                value, ref = value[0], f"{ref}.0"
            if isinstance(value, bool) or not isinstance(value, str | int | float) or value in ("", None):
                continue
            entity = step.entity or "result"
            where = f"the {entity} '{step.anchor}'" if step.anchor else f"the {entity} from step {step.index + 1}"
            out.append(
                Carried(
                    kind,
                    value,
                    step.index,
                    ref,
                    step.entry.service,
                    key,
                    f"the {humanize(key)} of {where} in {step.entry.service}",
                )
            )
        return out

    def _execute(
        self,
        world: World,
        index: int,
        entry: ToolEntry,
        filled: tuple[Any, ...],
        rng: random.Random,
        pool: list[Carried],
        saved: ServiceSlot | None = None,
    ) -> StepInfo | None:
        """Call ``entry``; None if it fails or changes nothing, and then the world is put back to
        ``saved`` (the savepoint of the service a write changes) as if it had not been called."""
        args, given, carried = filled
        resolved = resolve(args, [s.envelope for s in self._steps])
        for name in [n for n, v in given.items() if v is None]:
            text = self.text_for(entry, name, rng, pool)
            args[name] = resolved[name] = given[name] = text
        envelope = world.call(entry.qualified, resolved)
        if not envelope.get("success"):
            if saved is not None:
                world.rollback(entry.service, saved)
            return None
        step = StepInfo(index, entry, args, resolved, envelope, given, carried, kinds=self.params[entry.qualified])
        if saved is not None:
            before, after = saved.snapshot(), world.slot(entry.service).snapshot()
            if same_state(before, after):
                # Changed nothing: refused before a record is drawn, so the walk's RNG is untouched.
                world.rollback(entry.service, saved)
                return None
            step.changes = diff(before, after)
        records = records_of(entry, envelope.get("data"), collection_entities(self.hub, entry.service))
        anchored = [r for r in records if self._names_one(entry, r[1], anchor_of(r[1], r[2]))]
        chosen = rng.choice(anchored) if anchored else (records[0] if len(records) == 1 else None)
        if chosen is not None:
            path, record, schema, entity = chosen
            step.entity, step.record_ref = entity, path
            step.anchor = anchor_of(record, schema) if chosen in anchored else None
            if step.anchor is not None and record.get("id") not in self.seeded_ids(entry.service):
                self._made.setdefault((entry.service, step.anchor), set()).add(str(record.get("id")))
            pool.extend(self._values_of(step, path, record, schema))
        return step

    def text_for(self, entry: ToolEntry, name: str, rng: random.Random, pool: list[Carried]) -> str:
        """Free text the composer can describe: a subject naming the topic, a body carrying a value."""
        topic = next((s.anchor for s in reversed(self._steps) if s.anchor), entry.service)
        lowered = name.lower()
        if any(w in lowered for w in ("subject", "title", "name", "summary", "headline", "label")):
            return rng.choice(["Follow-up: {t}", "Update on {t}", "{t} - next steps", "Re: {t}"]).format(t=topic)[:120]
        if "query" in lowered or "search" in lowered:
            return str(topic)[:60]
        mention = [
            c
            for c in pool
            if isinstance(c.value, str) and c.type in MENTIONABLE and len(c.value) >= 4 and c.service != entry.service
        ]
        text = rng.choice(["Hello, this is about {t}.", "Quick note regarding {t}.", "Following up on {t}."]).format(
            t=topic
        )
        if mention:
            value = rng.choice(mention)
            self._mentions[(len(self._steps), name)] = value
            text += f" Reference: {value.value}."
        return text

    def walk(self, rng: random.Random, length: int) -> Walk:
        """One executed walk of up to ``length`` calls (raises :class:`WalkError` with a reason)."""
        world = self.hub.open_world(seed=self.seed)
        self._steps: list[StepInfo] = []
        self._mentions: dict[tuple[int, str], Carried] = {}
        self._made: dict[tuple[str, str], set[str]] = {}  # anchor -> ids of records this walk created
        pool: list[Carried] = []
        try:
            starts = rng.sample(self.listings, min(12, len(self.listings)))
            for entry in starts:
                filled = self.fill(entry, [], rng, None)
                if filled is None:
                    continue
                step = self._execute(world, 0, entry, filled, rng, pool)
                if step is not None and step.anchor and pool:
                    self._steps.append(step)
                    break
                pool.clear()
            if not self._steps:
                raise WalkError("no_start")
            for index in range(1, length):
                step = self._next(world, index, rng, pool)
                if step is None:
                    break
                self._steps.append(step)
            services = dict.fromkeys(s.entry.service for s in self._steps)
            seeded = {name: self.seeded_sets(name) for name in services}
            result = Walk(self._steps, pool, world, dict(self._mentions), seeded)
        except Exception:
            world.close()
            raise
        if len(result.services) < 2:
            world.close()
            raise WalkError("too_few_services")
        if not result.transfers:
            world.close()
            raise WalkError("no_transfer")
        if not any(s.entry.kind == "write" for s in result.steps):
            world.close()
            raise WalkError("no_write")
        return result

    def _next(self, world: World, index: int, rng: random.Random, pool: list[Carried]) -> StepInfo | None:
        last = self._steps[-1].entry
        used = {s.entry.qualified for s in self._steps}
        want_write = index >= 2 and not any(s.entry.kind == "write" for s in self._steps)
        scored: list[tuple[float, ToolEntry, tuple[Any, ...]]] = []
        have = {c.type for c in pool}
        by_type = linkable(pool)
        needs, deletes = self.needs, self.deletes
        for entry in rng.sample(self.entries, min(160, len(self.entries))):
            qualified = entry.qualified
            if qualified in used or qualified in deletes or not needs[qualified] <= have:
                continue
            filled = self.fill(entry, pool, rng, last.service, by_type)
            if filled is None or not filled[2]:
                continue
            foreign = any(c.service != entry.service for c in filled[2].values())
            score = rng.random() + 2.0 * foreign + 1.0 * (entry.service != last.service)
            score += 2.0 * (entry.kind == "write") * (1.0 + want_write)
            scored.append((score, entry, filled))
        scored.sort(key=lambda item: -item[0])
        for _, entry, filled in scored[:8]:
            # A write that is not kept is undone exactly, so the walk's world ends as the plan alone
            # leaves it: the oracle run of the task (see taskgen.compose).
            stateful = entry.kind == "write" and entry.service in world.stateful_services
            saved = world.savepoint(entry.service) if stateful else None
            mark = len(pool)
            step = self._execute(world, index, entry, filled, rng, pool, saved)
            if step is None:
                continue
            if saved is not None and not meaningful(step.changes or []):
                # Only timestamps moved: undo it, since a rubric could not tell it happened.
                world.rollback(entry.service, saved)
                del pool[mark:]
                continue
            return step
        return None


def walker_for(hub: Hub, seed: int) -> Walker:
    """The walker of ``hub`` for ``seed``, built once (kept with the hub): it caches tool signatures
    and seeded values, which depend only on the immutable registry and the seed, and keeps nothing
    from one walk to the next."""
    walker = hub.derived.get(("walker", seed))
    if walker is None:
        walker = hub.derived[("walker", seed)] = Walker(hub, seed)
    assert isinstance(walker, Walker)
    return walker


def linkable(pool: list[Carried]) -> dict[str, list[Carried]]:
    """The values of ``pool`` that can be carried, by semantic type, in pool order."""
    out: dict[str, list[Carried]] = {}
    for carried in pool:
        if carried.type not in NON_LINKING:
            out.setdefault(carried.type, []).append(carried)
    return out


TIMESTAMP_HINTS = ("_at", "updated", "modified", "clock", "seq", "version", "last_")


def same_state(before: Any, after: Any) -> bool:
    """Whether two snapshots are the same state (equal hashes), mostly by one C-level comparison.

    Unequal snapshots always hash differently; equal ones almost always hash equally, and the
    hashes are compared to rule out the corner cases (``1 == 1.0 == True``) only then.
    """
    return before is after or (before == after and stable_hash(before) == stable_hash(after))


def meaningful(changes: list[Any]) -> bool:
    """A write that changed more than timestamps and counters (something a rubric can check)."""
    return any(not any(h in c.path.rsplit("/", 1)[-1] for h in TIMESTAMP_HINTS) for c in changes)


def _population(seed: int) -> Any:
    from servers.population import Population

    return Population.generate(seed)
