"""The typed state of a spec-run service: pydantic models built from the spec, and its seed.

Every semantic type of the spec becomes the same ``Annotated`` alias a hand-written service would
write (shared types are the aliases of :mod:`servers.types`; a local type ``fleet.plate`` is
``Annotated[str, sem("fleet.plate", ..., pattern=...)]``; a ``ref:vehicle`` is the id type
``fleet.vehicle_id``), every entity a :class:`~servers.framework.Record` model with ``id``, its
fields and the ``created_at``/``updated_at`` stamps, and the state a
:class:`~servers.framework.ServiceState` with one ``dict`` per entity. Model and field names,
descriptions and defaults are those ``compoworld services eject`` writes as Python, so a spec-run
service and its ejected code expose the same schemas and hash the same states.

The seed interprets each field's ``seed`` (see :mod:`servers.construction.spec`) drawing from the
shared population in a fixed order (fields without a ``text:`` seed, then those with one; records
in spec order; stale near-duplicates last), so a world seed gives one state.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, create_model

import servers.types as semantic_types
from servers.construction.naming import Names
from servers.construction.seeding import (
    Slots,
    company_attr,
    copied,
    days_from,
    field_seed,
    number,
    pattern,
    person_attr,
    product_attr,
    seed_order,
    stamps,
    text,
)
from servers.construction.spec import AUTO_FIELDS, SYSTEM_FIELDS, EntitySpec, FieldSpec, ServiceSpec
from servers.construction.vocabulary import SHARED
from servers.framework import Record, ServiceState
from servers.population import Population
from servers.roles import ROLE_KEY, SYSTEM, role
from servers.types import Count, DateTime, Total, ident, sem

#: The module spec-run models claim: no file, so no disk cache keyed by the package's code serves
#: their schemas (they are a function of the spec, not of the code).
MODELS_MODULE = "servers.engine.spec_models"
_BASES = {"string": str, "integer": int, "number": float, "boolean": bool}


class Models:
    """The annotations (built at once: cheap) and model classes (built on first use) of one spec.

    Building a spec's pydantic models is most of what running it costs before its first call
    (about 15 ms a service); a hub that mounts hundreds of services and serves a few of them in an
    episode builds those few. Thread-safe: two first uses build once.
    """

    def __init__(self, spec: ServiceSpec) -> None:
        self.spec = spec
        self.names = Names(spec)
        self.annotations = type_annotations(spec)
        self._built: tuple[dict[str, Any], dict[str, Any], type[ServiceState]] | None = None
        self._lock = threading.Lock()

    def annotation(self, type_name: str, listed: bool = False, optional: bool = False) -> Any:
        base = self.annotations[type_name]
        if listed:
            return list[base]  # type: ignore[valid-type]
        return base | None if optional else base

    def _get(self) -> tuple[dict[str, Any], dict[str, Any], type[ServiceState]]:
        if self._built is None:
            with self._lock:
                if self._built is None:
                    self._built = _build(self)
        return self._built

    @property
    def built(self) -> bool:
        """Whether the model classes exist yet."""
        return self._built is not None

    @property
    def records(self) -> dict[str, Any]:
        """Entity → record model."""
        return self._get()[0]

    @property
    def rows(self) -> dict[str, Any]:
        """Aggregate tool → row model."""
        return self._get()[1]

    @property
    def state(self) -> type[ServiceState]:
        return self._get()[2]


def _local_annotation(spec: ServiceSpec, key: str) -> Any:
    local = spec.types[key]
    base: Any = _BASES[local.type]
    if local.enum:
        base = Literal[tuple(local.enum)]
    constraints: dict[str, Any] = {}
    for attr, kw in (("minimum", "ge"), ("maximum", "le"), ("min_length", "min_length"), ("max_length", "max_length")):
        value = getattr(local, attr)
        if value is not None:
            constraints[kw] = int(value) if local.type == "integer" or float(value).is_integer() else value
    if local.pattern:
        constraints["pattern"] = local.pattern
    return Annotated[base, sem(f"{spec.name}.{key}", local.description, **constraints)]


def type_annotations(spec: ServiceSpec) -> dict[str, Any]:
    """Every type name the spec uses (shared, local, ``ref:<entity>``) → its annotation."""
    out: dict[str, Any] = {f"ref:{e}": Annotated[str, ident(spec.name, e)] for e in spec.entities}
    out |= {f"{spec.name}.{key}": _local_annotation(spec, key) for key in spec.types}
    used = {f.type for e in spec.entities.values() for f in e.fields.values()}
    used |= {p.type for t in spec.tools for p in t.params.values()} | {"date_time"}
    for name in sorted(used - set(out)):
        out[name] = getattr(semantic_types, SHARED[name].alias)
    return out


def _field(models_: dict[str, Any], spec: ServiceSpec, field: FieldSpec) -> tuple[Any, Any]:
    base = models_[field.type]
    annotation: Any = list[base] if field.list else (base | None if field.optional else base)  # type: ignore[valid-type]
    options: dict[str, Any] = {}
    if field.list:
        options["default_factory"] = list
    elif field.optional:
        options["default"] = None
    elif field.default is not None:
        options["default"] = field.default
    description = field.description or (spec.type_description(field.type, plural=True) if field.list else None)
    if description:
        options["description"] = description
    if field.role:
        options["json_schema_extra"] = {ROLE_KEY: field.role}
    return annotation, Field(**options) if options else ...


def _model(name: str, doc: str, base: type[Any], fields: dict[str, Any]) -> Any:
    model = create_model(name, __base__=base, __doc__=doc, __module__=MODELS_MODULE, **fields)
    return model


def build_models(spec: ServiceSpec) -> Models:
    """The models of a spec (classes named as the ejected code names them), built on first use."""
    return Models(spec)


def _build(models: Models) -> tuple[dict[str, Any], dict[str, Any], type[ServiceState]]:
    spec, names, annotations = models.spec, models.names, models.annotations
    records: dict[str, Any] = {}
    for entity_name, entity in spec.entities.items():
        fields: dict[str, Any] = {"id": (annotations[f"ref:{entity_name}"], ...)}
        fields |= {n: _field(annotations, spec, f) for n, f in entity.fields.items()}
        fields |= {n: (Annotated[DateTime, role(SYSTEM)], ...) for n in SYSTEM_FIELDS}
        records[entity_name] = _model(names.cls[entity_name], entity.description, Record, fields)
    rows: dict[str, Any] = {}
    for tool in spec.tools:
        if tool.op != "aggregate":
            continue
        entity = spec.entities[tool.entity]
        assert tool.group_by is not None
        group = entity.fields.get(tool.group_by)
        key: Any = _field(annotations, spec, group)[0] if group else DateTime
        row_fields: dict[str, Any] = {
            tool.group_by: (key, ...),
            "count": (Count, Field(description=f"Number of {entity.plural.replace('_', ' ')} in the group.")),
        }
        if tool.field:
            row_fields[f"total_{tool.field}"] = (Total, Field(description=f"Sum of {tool.field} over the group."))
        doc = f"One group of {tool.name}: the {entity.plural} sharing a {tool.group_by}."
        rows[tool.name] = _model(names.row[tool.name], doc, Record, row_fields)
    state_fields: dict[str, Any] = {
        e.plural: (dict[str, records[n]], Field(default_factory=dict))  # type: ignore[valid-type]
        for n, e in spec.entities.items()
    }
    state = _model(names.state, f"The state of the {spec.name} service.", ServiceState, state_fields)
    return records, rows, state


# ---------------------------------------------------------------------------------------------
# Seeding


Draw = Callable[[random.Random, Population, Slots, dict[str, Any], ServiceState], Any]


def _short(value: float) -> float:
    """A bound as the spec's seed text reads at six significant digits (``%g``), as ejected code has it."""
    return float(f"{value:g}")


def seed_draw(spec: ServiceSpec, field: FieldSpec, fields: dict[str, FieldSpec] | None = None) -> Draw:
    """The function drawing one seeded value of ``field`` (``values``: the record's earlier fields;
    ``fields``: the record's fields, which a ``from:`` seed names its reference among)."""
    python = spec.python_type(field.type)
    kind, _, arg = field_seed(spec, field).partition(":")
    draw: Draw
    if kind == "from":  # copied whole from the referenced record: no list or null draw of its own
        ref, attr = arg.split(".")
        parent = spec.entities[(fields or {})[ref].type[4:]].plural
        return lambda rng, world, slots, values, state: copied(getattr(state, parent), values[ref], attr)
    if kind in ("person", "employee", "contact"):
        slot, attr = arg.split(".")
        draw = lambda rng, world, slots, values, state: person_attr(slots.person(slot, kind), attr)  # noqa: E731
    elif kind == "company":
        slot, attr = arg.split(".")
        draw = lambda rng, world, slots, values, state: company_attr(slots.company(slot), attr)  # noqa: E731
    elif kind == "product":
        slot, attr = arg.split(".")
        draw = lambda rng, world, slots, values, state: product_attr(slots.product(slot), attr)  # noqa: E731
    elif kind == "choice":
        options = tuple(arg.split("|") if arg else spec.enum_of(field.type) or [])
        draw = lambda rng, world, slots, values, state: rng.choice(options)  # noqa: E731
    elif kind in ("int", "number"):
        lo, hi = (float(v) for v in arg.split(".."))
        if python == "int":
            ilo, ihi = int(lo), int(hi)
            draw = lambda rng, world, slots, values, state: rng.randint(ilo, ihi)  # noqa: E731
        else:
            flo, fhi = _short(lo), _short(hi)
            draw = lambda rng, world, slots, values, state: number(rng, flo, fhi)  # noqa: E731
    elif kind in ("past", "future"):
        lo, hi = (float(v) for v in arg.split(".."))
        lo, hi = (-hi, -lo) if kind == "past" else (lo, hi)
        dlo, dhi = _short(lo), _short(hi)
        if python == "date":
            draw = lambda rng, world, slots, values, state: days_from(world.now, rng, dlo, dhi).date()  # noqa: E731
        else:
            draw = lambda rng, world, slots, values, state: days_from(world.now, rng, dlo, dhi)  # noqa: E731
    elif kind == "pattern":
        draw = lambda rng, world, slots, values, state: pattern(rng, arg)  # noqa: E731
    elif kind == "text":
        draw = lambda rng, world, slots, values, state: text(rng, arg, values)  # noqa: E731
    elif kind == "bool":
        share = float(arg or 0.5)
        draw = lambda rng, world, slots, values, state: rng.random() < share  # noqa: E731
    elif kind == "const":
        draw = lambda rng, world, slots, values, state: json.loads(arg)  # noqa: E731
    elif kind == "ref":
        target = spec.entities[field.type[4:]].plural
        draw = lambda rng, world, slots, values, state: rng.choice(sorted(getattr(state, target)))  # noqa: E731
    else:  # none
        return lambda rng, world, slots, values, state: None
    if python == "float" and kind in ("int", "product"):
        inner_f = draw
        draw = lambda rng, world, slots, values, state: float(inner_f(rng, world, slots, values, state))  # type: ignore[arg-type]  # noqa: E731
    if python == "int" and kind == "product":
        inner_i = draw
        draw = lambda rng, world, slots, values, state: int(inner_i(rng, world, slots, values, state))  # type: ignore[arg-type]  # noqa: E731
    one = draw
    if field.list:
        return lambda rng, world, slots, values, state: sorted(
            {one(rng, world, slots, values, state) for _ in range(rng.randint(0, 2))}
        )
    if field.optional and field.seed_null > 0:
        share_null = field.seed_null
        return lambda rng, world, slots, values, state: (
            None if rng.random() < share_null else one(rng, world, slots, values, state)
        )
    return one


def _field_draw(spec: ServiceSpec, entity: EntitySpec, field: FieldSpec) -> Draw:
    """A field's draw; a field seeded by state draws with its state's seed (``seed_by_state``), the
    record's lifecycle state being drawn before it."""
    if not field.seed_by_state or entity.lifecycle is None:
        return seed_draw(spec, field, entity.fields)
    status = entity.lifecycle.field
    plain = seed_draw(spec, field.model_copy(update={"seed_by_state": None}), entity.fields)
    by_state = {
        value: seed_draw(spec, field.model_copy(update={"seed": seed, "seed_by_state": None}), entity.fields)
        for value, seed in field.seed_by_state.items()
    }
    return lambda rng, world, slots, values, state: by_state.get(values[status], plain)(
        rng, world, slots, values, state
    )


def seed_function(models: Models) -> Callable[[random.Random, Population], ServiceState]:
    """The service's seed: ``(rng, population) -> state``."""
    spec = models.spec
    plans = []
    for entity_name, entity in spec.entities.items():
        draws = [(n, _field_draw(spec, entity, entity.fields[n])) for n in seed_order(entity.fields)]
        unique = tuple(n for n, f in entity.fields.items() if f.unique)
        plans.append((entity_name, entity, draws, unique))

    def seed(rng: random.Random, world: Population) -> ServiceState:
        state = models.state(clock=world.now)
        for entity_name, entity, draws, unique in plans:
            _seed_entity(rng, world, state, models.records[entity_name], entity.plural, entity.id_prefix,
                         entity.seed.count, entity.seed.duplicates, draws, unique)  # fmt: skip
        return state

    return seed


def _seed_entity(
    rng: random.Random,
    world: Population,
    state: ServiceState,
    model: Any,
    plural: str,
    prefix: str,
    count: int,
    duplicates: int,
    draws: list[tuple[str, Draw]],
    unique: tuple[str, ...],
) -> None:
    table: dict[str, Any] = getattr(state, plural)

    def draw() -> dict[str, Any]:
        slots = Slots(rng, world)
        values: dict[str, Any] = {}
        for name, one in draws:
            values[name] = one(rng, world, slots, values, state)
        return values

    taken: set[tuple[str, Any]] = set()
    for _ in range(count):
        values = draw()
        keys = {(k, values[k]) for k in unique if values[k] is not None}
        if keys & taken:  # a unique value drawn twice: skip the record
            continue
        taken |= keys
        created, updated = stamps(rng, world.now)
        record = model(id=state.new_id(prefix), created_at=created, updated_at=updated, **values)
        table[record.id] = record
    if not duplicates:
        return
    for original in rng.sample(sorted(table.values(), key=lambda r: r.id), min(duplicates, len(table))):
        # a stale near-duplicate: same data, entered weeks earlier
        values = original.model_dump(exclude=set(AUTO_FIELDS))
        if unique:
            fresh = draw()
            values |= {k: fresh[k] for k in unique}
            keys = {(k, values[k]) for k in unique if values[k] is not None}
            if keys & taken:
                continue
            taken |= keys
        created_copy: dt.datetime = original.created_at - dt.timedelta(days=rng.randint(20, 90))
        copy = model(id=state.new_id(prefix), created_at=created_copy, updated_at=created_copy, **values)
        table[copy.id] = copy
