"""What the pattern engine reads from tool metadata alone, built once per registry.

Writes by (op, entity kind), listings by (service, entity kind), which service and entity an id type
names, and the roles, semantic types and lifecycle states of each entity's record fields. The
pattern engine (:mod:`taskgen.workflow`) instantiates patterns over it, and the coverage report
(:mod:`taskgen.coverage`) judges from it which patterns a service can take part in, without opening
a world.
"""

from __future__ import annotations

from hub.registry import Registry, ToolEntry
from servers.roles import ROLE_KEY
from servers.types import SEMANTIC_KEY
from taskgen.flowmodel import own_role, record_schema
from taskgen.graph import field_types, param_types
from taskgen.pattern import LOOKUP, Pattern, Reaction, by_type
from taskgen.walk import resolve_schema


class ToolIndex:
    """Indexes of one registry's tools (see the module docstring)."""

    def __init__(self, registry: Registry) -> None:
        self.services = registry.services
        self.writes: dict[tuple[str, str], list[ToolEntry]] = {}  # (op, entity) -> tools
        self.listings: dict[tuple[str, str], list[ToolEntry]] = {}  # (service, entity) -> listing tools
        self.id_entity: dict[str, tuple[str, str]] = {}  # id type -> (service, entity)
        self.field_roles: dict[tuple[str, str], dict[str, str]] = {}  # (service, entity) -> field -> role
        self.field_kinds: dict[tuple[str, str], dict[str, frozenset[str]]] = {}  # ... -> field -> semantic types
        self.states: dict[tuple[str, str], set[str]] = {}  # (service, entity) -> enum values of its records
        self.lookups = [e for e in registry.tools.values() if e.meta is not None and e.meta.op == LOOKUP]
        for entry in registry.tools.values():
            meta = entry.meta
            if meta is None or not meta.entity:
                continue
            if entry.kind == "write":
                self.writes.setdefault((meta.op, meta.entity), []).append(entry)
            elif meta.op in ("list", "search"):
                self.listings.setdefault((entry.service, meta.entity), []).append(entry)
            schema = record_schema(entry)
            props = schema.get("properties", {})
            key = (entry.service, meta.entity)
            roles = self.field_roles.setdefault(key, {})
            typed = self.field_kinds.setdefault(key, {})
            states = self.states.setdefault(key, set())
            for name, prop in props.items():
                typed.setdefault(name, frozenset(field_types(prop)))
                states.update(v for v in resolve_schema(dict(prop), {}).get("enum") or () if isinstance(v, str))
            for name, prop in props.items():
                role = own_role(prop, schema.get("$defs", {}) or (entry.output_schema or {}).get("$defs", {}))
                if role:
                    roles.setdefault(name, role)
            ident = resolve_schema(dict(props.get("id") or {}), {}).get(SEMANTIC_KEY)
            if isinstance(ident, str) and meta.op in ("get", "list", "create"):
                self.id_entity.setdefault(ident, key)

    def writers(self, reaction: Reaction) -> list[ToolEntry]:
        """The writes declaring one of ``reaction``'s ops on one of its entity kinds, in one of its
        categories when it names some."""
        found = [e for op in reaction.op for kind in reaction.entity for e in self.writes.get((op, kind), [])]
        if reaction.categories:
            found = [e for e in found if self.services[e.service].category in reaction.categories]
        return found

    def lookup_tools(self, reaction: Reaction) -> list[tuple[ToolEntry, dict[str, str], str]]:
        """(tool, parameter -> input source, answer field) of every lookup that can answer
        ``reaction``: each input fills a parameter of its type, every required parameter is filled,
        and the answer is a top-level field of one of the reaction's ``answer`` types (not an echo
        of a parameter)."""
        out = []
        for entry in self.lookups:
            if reaction.categories and self.services[entry.service].category not in reaction.categories:
                continue
            plan = _lookup_plan(entry, reaction)
            field = _answer_field(entry, reaction.answer, set(plan or ()))
            if plan is not None and field is not None:
                out.append((entry, plan, field))
        return out

    def core_first(self, service: str) -> tuple[bool, str]:
        """Sort key preferring the hand-written core applications (the systems of record), then by name."""
        return self.services[service].source != "hand-written", service

    def param_role(self, entry: ToolEntry, name: str) -> str | None:
        """A parameter's role: its own ``x-role``, else that of the record field of the same name."""
        raw = entry.input_schema.get("properties", {}).get(name) or {}
        prop = resolve_schema(dict(raw), {})
        items = resolve_schema(dict(prop.get("items") or {}), {}) if prop.get("type") == "array" else {}
        own = raw.get(ROLE_KEY) or prop.get(ROLE_KEY) or items.get(ROLE_KEY)
        if own:
            return str(own)
        entity = entry.meta.entity if entry.meta else None
        return self.field_roles.get((entry.service, entity or ""), {}).get(name)

    def link_roles(self, entry: ToolEntry) -> set[str | None]:
        """Roles a reaction can link into ``entry``: those of its parameters, and those of the
        records of its own service its required ids are found from by a lookup (the customer an
        invoice is for, found by the customer's name)."""
        kinds = param_types(entry)
        roles = {self.param_role(entry, name) for name in kinds}
        for name in entry.input_schema.get("required", []):
            kind = kinds.get(name, "")
            if kind in self.id_entity and self.id_entity[kind][0] == entry.service:
                roles |= set(self.field_roles.get(self.id_entity[kind], {}).values())
        return roles

    def in_states(self, service: str, entity: str, wanted: list[str]) -> bool:
        """Whether records of ``entity`` in ``service`` can be in one of ``wanted`` (any when empty)."""
        return not wanted or bool(self.states.get((service, entity), set()) & set(wanted))

    def has_role(self, service: str, entity: str, role: str, kind: str = "") -> bool:
        """Whether records of ``entity`` in ``service`` have a field of ``role`` (of semantic type
        ``kind`` when given), or exactly one field of the measure or type ``role`` names."""
        types = self.field_kinds.get((service, entity), {})
        if by_type(role):
            return sum(1 for t in types.values() if t == {role}) == 1
        fields = [f for f, r in self.field_roles.get((service, entity), {}).items() if r == role]
        return any(not kind or kind in types.get(f, ()) for f in fields)


def trigger_needs(pattern: Pattern) -> set[tuple[str, str]]:
    """(role, semantic type or "") of every value the pattern takes from the trigger."""
    sources = [src for r in pattern.reactions for src in r.sources()]
    sources += [
        src for rule in pattern.rules for src in [rule.source, *(rule.instead.links.values() if rule.instead else [])]
    ]
    out = set()
    for source in sources:
        head, _, rest = source.partition(".")
        if head == "trigger":
            role, _, kind = rest.partition(":")
            if ">" in role:  # a hop needs the first role's value on the trigger, of any type
                role, kind = role.split(">", 1)[0], ""
            out.add((role, kind))
    return out


def _lookup_plan(entry: ToolEntry, reaction: Reaction) -> dict[str, str] | None:
    """Parameter -> input source: each of a type's sources fills the next parameter of that type
    (required ones first, in schema order); None when an input has no parameter left or a required
    parameter none."""
    kinds = param_types(entry)
    required = entry.input_schema.get("required", [])
    order = [*required, *(n for n in kinds if n not in required)]
    plan: dict[str, str] = {}
    for kind, value in reaction.inputs.items():
        free = [n for n in order if kinds.get(n) == kind and n not in plan]
        sources = [value] if isinstance(value, str) else value
        if len(free) < len(sources):
            return None
        plan.update(zip(free, sources, strict=False))
    return plan if set(required) <= set(plan) else None


def _answer_field(entry: ToolEntry, answer: list[str], echoed: set[str]) -> str | None:
    """The output's top-level scalar field of the first ``answer`` type it has (None if none)."""
    data = ((entry.output_schema or {}).get("properties") or {}).get("data") or {}
    props = resolve_schema(dict(data), (entry.output_schema or {}).get("$defs", {})).get("properties", {})
    for kind in answer:
        for name, prop in props.items():
            plain = resolve_schema(dict(prop), {})
            if name in echoed or plain.get("type") in ("array", "object"):
                continue
            if field_types(prop) == {kind}:
                return str(name)
    return None
