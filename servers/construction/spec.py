"""Service specs: the catalog format from which services are built and verified.

One JSON file per service in ``servers/catalog/``. A service spec extends the world model's tool
specs with the state's **entities** and the semantic type of every field, and describes each tool
by its **operation** on an entity, so that one spec yields (a) a native typed module
(``servers.construction.template``), (b) the tool schemas every implementation must expose
(``servers.construction.schemas``), (c) generated verification scenarios (``servers.construction.scenarios``) and
(d) a simulated fallback for the world model (``worldmodel.fromspec``). Shape::

    {
      "name": "fleet", "version": 1, "category": "logistics",
      "description": "Fleet management: vehicles, trips and maintenance work orders.",
      "modelled_on": "Fleetio / Samsara fleet APIs",
      "rules": ["A vehicle in the shop cannot start a trip (409)."],
      "types": {"vehicle_status": {"description": "...", "enum": ["active", "in_shop", "retired"]},
                "odometer_km": {"description": "...", "type": "number", "minimum": 0, "maximum": 2000000}},
      "entities": {
        "vehicle": {"plural": "vehicles", "id_prefix": "veh", "description": "A vehicle of the fleet.",
                    "fields": {"plate": {"type": "fleet.plate", "unique": true, "seed": "pattern:??-####"},
                               "status": {"type": "fleet.vehicle_status"},
                               "driver_email": {"type": "email_address", "optional": true,
                                                "seed": "employee:d.email"}},
                    "lifecycle": {"field": "status", "initial": "active",
                                  "transitions": {"active": ["in_shop", "retired"], "in_shop": ["active"],
                                                  "retired": []}},
                    "seed": {"count": 20, "duplicates": 2}}
      },
      "tools": [
        {"name": "list_vehicles", "op": "list", "entity": "vehicle", "description": "...",
         "filters": ["status"], "search": ["plate"], "sort": "plate"},
        {"name": "send_to_shop", "op": "transition", "entity": "vehicle", "to": "in_shop", "description": "...",
         "params": {"reason": {"type": "note", "description": "Why.", "field": "shop_reason"}},
         "set": {"shop_since": "$now"},
         "guards": [{"require": [{"left": "record.odometer", "op": ">", "value": 0}], "code": 409,
                     "message": "a vehicle without odometer reading cannot go to the shop"}]}
      ]
    }

**Field types** are a shared semantic type of ``servers.types`` (``email_address``), a local type
declared under ``types`` and written ``<service>.<type>``, or ``ref:<entity>`` (the id of another
entity of the same service). Every entity also has ``id``, ``created_at`` and ``updated_at``.

**Operations** (``op``): reads ``list`` (``filters``: exact-match fields, ``search``: fields the
``query`` text is looked for in, ``sort``: field, ``-field`` for descending), ``get``, ``aggregate``
(count, and sum of ``field``, per value of ``group_by``); writes ``create`` (``fields``: settable
fields, default every field with ``create: true``), ``update`` (``fields``: changeable fields, all
optional, at least one given), ``transition`` (lifecycle move to ``to`` from the states in
``from``, default every state whose transitions allow ``to``), ``delete`` (allowed only in the states
of ``when``; ``blocked_by`` entities whose references to the record forbid deleting it), ``adjust``
(add the one param to the numeric ``field``, 409 when the result leaves its range), ``append`` /
``remove`` (add / remove the one param to / from the list ``field``; 409 if already there / 404 if
absent). ``frozen`` lists states in which ``update``, ``adjust``, ``append`` and ``remove`` refuse (409).
Writes may also ``set`` constant values (``"$now"`` is the service clock) and ``cascade`` constant
values onto the record a ref field points to. Every write stamps ``updated_at``.

**Guards** are the domain rules checked before any mutation: when every ``when`` condition holds and
some ``require`` condition fails, the call fails with ``code`` (400, 403 or 409) and ``message``.
A condition is ``{"left": operand, "op": op, "value": literal}`` or ``{..., "right": operand}``
with ops ``== != < <= > >= in not_in present absent``; an operand is a param name, ``record.<field>``
(the target record), ``<ref param>-><field>`` or ``record.<ref field>-><field>`` (the record a
reference points to) or ``now``. A comparison with a missing value neither triggers ``when`` nor
fails ``require``.

**Seeds** (``seed`` of a field) say how the initial data is drawn, from the shared population:
``person:<slot>.<attr>`` / ``employee:…`` / ``contact:…`` (attr: name, first_name, email, phone,
title, department, company, city, username), ``company:<slot>.<attr>`` (name, domain, url, address,
city, country, currency, phone, industry), ``product:<slot>.<attr>`` (name, sku, unit_price,
currency, category) — fields naming the same slot get the same person / company / product —
``choice`` (from the type's enum) or ``choice:a|b|c``, ``int:lo..hi``, ``number:lo..hi``,
``past:lo..hi`` / ``future:lo..hi`` (days from now), ``pattern:PO-####`` (``#`` digit, ``?``
capital letter), ``text:<template>`` (``{field}`` is another field of the record, ``{pick:a|b}`` a
choice), ``bool:<share true>``, ``const:<json>``, ``ref`` and ``none``. Without ``seed`` a default
follows from the semantic type (see ``servers.construction.seeding.default_seed``).
"""

from __future__ import annotations

import hashlib
import json
import keyword
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from servers import schema_cache
from servers.construction.vocabulary import SHARED, python_type
from servers.roles import role_problem

CATALOG_DIR = Path(__file__).resolve().parents[1] / "catalog"
CHECKED = "consistency_checked"  # validation context: the content passed spec_problems before

NAME = r"^[a-z][a-z0-9_]{1,40}$"
READ_OPS = ("list", "get", "aggregate")
WRITE_OPS = ("create", "update", "transition", "delete", "adjust", "append", "remove")
OPS = Literal["list", "get", "aggregate", "create", "update", "transition", "delete", "adjust", "append", "remove"]
COND_OPS = Literal["==", "!=", "<", "<=", ">", ">=", "in", "not_in", "present", "absent"]
#: Fields the generated code stamps on every record by itself: both on create, ``updated_at`` on every
#: write to the record (cascades included). Built services declare them as their ``system_fields``.
SYSTEM_FIELDS = ("created_at", "updated_at")
AUTO_FIELDS = ("id", *SYSTEM_FIELDS)
#: Names the generated code uses for its own variables (or Python keywords): not for fields or params.
RESERVED = frozenset(
    {"state", "record", "now", "rows", "groups", "ordered", "new_value", "query", "offset", "limit", "service", "r",
     "v", "self", "cls", *keyword.kwlist, *AUTO_FIELDS}
)  # fmt: skip
SEED_KINDS = (
    "person", "employee", "contact", "company", "product", "choice", "int", "number", "past", "future",
    "pattern", "text", "bool", "const", "ref", "none",
)  # fmt: skip
PERSON_ATTRS = ("name", "first_name", "email", "phone", "title", "department", "company", "city", "username")
COMPANY_ATTRS = ("name", "domain", "url", "address", "city", "country", "currency", "phone", "industry")
PRODUCT_ATTRS = ("name", "sku", "unit_price", "currency", "category")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TypeSpec(Strict):
    """A semantic type local to one service (``<service>.<name>`` in field types)."""

    description: str = Field(min_length=3)
    type: Literal["string", "integer", "number", "boolean"] = "string"
    enum: list[str] | None = None
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None


class FieldSpec(Strict):
    type: str
    description: str | None = None
    list: bool = False
    optional: bool = False
    default: Any = None
    unique: bool = False
    create: bool = True
    role: str | None = Field(default=None, description="Business role (servers.roles) where the type needs one.")
    seed: str | None = None
    seed_null: float = Field(
        default=0.2, ge=0, le=1, description="Share of seeded records where an optional field is null."
    )


class Lifecycle(Strict):
    field: str
    initial: str
    transitions: dict[str, list[str]]


class EntitySeed(Strict):
    count: int = Field(default=20, ge=1, le=300)
    duplicates: int = Field(default=0, ge=0, le=20, description="Near-duplicate (stale) copies of seeded records.")


class EntitySpec(Strict):
    description: str = Field(min_length=3)
    plural: str = Field(pattern=NAME)
    id_prefix: str = Field(pattern=r"^[a-z]{2,5}$")
    fields: dict[str, FieldSpec]
    lifecycle: Lifecycle | None = None
    seed: EntitySeed = Field(default_factory=EntitySeed)


class Condition(Strict):
    left: str
    op: COND_OPS
    value: Any = None
    right: str | None = None


class Guard(Strict):
    id: str | None = Field(default=None, pattern=NAME, description="Name a rule cites as its backing.")
    when: list[Condition] = Field(default_factory=list)
    require: list[Condition] = Field(min_length=1)
    code: Literal[400, 403, 409]
    message: str = Field(min_length=3)


class ParamSpec(Strict):
    type: str
    description: str = Field(min_length=3)
    optional: bool = False
    list: bool = False
    default: Any = None
    field: str | None = None


class Cascade(Strict):
    via: str
    set: dict[str, Any]


class Effect(Strict):
    """A change a write makes to another record: ``add`` to numeric fields of the record that
    ``via`` points to (``record.<ref field>`` or a ref parameter) the value of an operand (a
    parameter, ``record.<field>``) or a number; checked against the fields' ranges before the
    write changes anything (409 when a result would leave its range)."""

    id: str = Field(pattern=NAME)
    via: str
    add: dict[str, str | float] = Field(min_length=1)


class Invariant(Strict):
    """What every record of ``entity`` satisfies (conditions on ``record.<field>``), seeds included."""

    entity: str
    when: list[Condition] = Field(default_factory=list)
    require: list[Condition] = Field(min_length=1)


class Rule(Strict):
    """A business rule and what implements it: ``by`` names guard ids, effect ids, ``lifecycle:<entity>``,
    ``unique:<entity>.<field>`` or ``tool:<name>`` (a tool's own checks: frozen and allowed states,
    blockers, ranges, list membership); ``holds`` states it as an invariant the seeds are checked against."""

    text: str = Field(min_length=5)
    by: list[str] = Field(min_length=1)
    holds: Invariant | None = None


class ToolSpec(Strict):
    name: str = Field(pattern=NAME)
    op: OPS
    entity: str
    description: str = Field(min_length=3)
    fields: list[str] | None = None
    filters: list[str] = Field(default_factory=list)
    search: list[str] = Field(default_factory=list)
    sort: str | None = None
    to: str | None = None
    from_: list[str] | None = Field(default=None, alias="from")
    frozen: list[str] = Field(default_factory=list)
    when: list[str] | None = None
    blocked_by: list[str] = Field(default_factory=list)
    field: str | None = None
    group_by: str | None = None
    params: dict[str, ParamSpec] = Field(default_factory=dict)
    set: dict[str, Any] = Field(default_factory=dict)
    cascade: list[Cascade] = Field(default_factory=list)
    guards: list[Guard] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)

    @property
    def kind(self) -> Literal["read", "write"]:
        return "read" if self.op in READ_OPS else "write"


class ServiceSpec(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{1,30}$")
    version: int = Field(default=1, ge=1)
    category: str = Field(min_length=2)
    description: str = Field(min_length=10)
    modelled_on: str = ""
    rules: list[str | Rule] = Field(default_factory=list)
    types: dict[str, TypeSpec] = Field(default_factory=dict)
    entities: dict[str, EntitySpec] = Field(min_length=1)
    tools: list[ToolSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> ServiceSpec:
        if isinstance(info.context, dict) and info.context.get(CHECKED):
            return self  # this very content passed these checks before (see load_spec)
        problems = spec_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # -- lookups used by every consumer of a spec --------------------------------------------

    def field_type(self, type_name: str) -> tuple[str, str, TypeSpec | None]:
        """``(kind, semantic name, local type)`` with kind ``shared``, ``local`` or ``ref``."""
        if type_name.startswith("ref:"):
            return "ref", f"{self.name}.{type_name[4:]}_id", None
        if type_name.startswith(f"{self.name}."):
            return "local", type_name, self.types.get(type_name.split(".", 1)[1])
        return "shared", type_name, None

    def enum_of(self, type_name: str) -> list[str] | None:
        kind, _, local = self.field_type(type_name)
        if local is not None:
            return local.enum
        if kind == "shared" and type_name in SHARED:
            return SHARED[type_name].enum
        return None

    def tool(self, name: str) -> ToolSpec:
        return next(t for t in self.tools if t.name == name)

    def states(self, entity: str) -> list[str]:
        life = self.entities[entity].lifecycle
        return list(life.transitions) if life else []

    def sources(self, tool: ToolSpec) -> list[str]:
        """The lifecycle states a ``transition`` may start from."""
        if tool.from_ is not None:
            return tool.from_
        life = self.entities[tool.entity].lifecycle
        assert life is not None and tool.to is not None
        return [s for s, targets in life.transitions.items() if tool.to in targets]

    def create_fields(self, tool: ToolSpec) -> list[str]:
        entity = self.entities[tool.entity]
        life = entity.lifecycle.field if entity.lifecycle else None
        if tool.fields is not None:
            return tool.fields
        return [n for n, f in entity.fields.items() if f.create and n != life]


def _operand_problems(spec: ServiceSpec, tool: ToolSpec, operand: str, where: str) -> list[str]:
    entity = spec.entities[tool.entity]
    if operand == "now":
        return []
    head, _, follow = operand.partition("->")
    if head.startswith("record."):
        if tool.op in ("create", "list", "get", "aggregate"):
            return [f"{where}: operand {operand!r} needs a target record (not op {tool.op!r})"]
        name = head.removeprefix("record.")
        field = entity.fields.get(name)
        if field is None and name not in AUTO_FIELDS:
            return [f"{where}: operand {operand!r}: entity {tool.entity!r} has no field {name!r}"]
        ref_type = field.type if field else ""
    else:
        params = _tool_params(spec, tool)
        if head not in params:
            return [f"{where}: operand {operand!r} is not a parameter of the tool (have {sorted(params)})"]
        ref_type = params[head]
    if follow:
        if not ref_type.startswith("ref:"):
            return [f"{where}: operand {operand!r} follows {head!r}, which is not a ref"]
        target = spec.entities.get(ref_type[4:])
        if target is None or (follow not in target.fields and follow not in AUTO_FIELDS):
            return [f"{where}: operand {operand!r}: {ref_type[4:]!r} has no field {follow!r}"]
    return []


def _tool_params(spec: ServiceSpec, tool: ToolSpec) -> dict[str, str]:
    """Parameter name → field type, for operand checking (ids included)."""
    entity = spec.entities.get(tool.entity)
    if entity is None:
        return {}
    params: dict[str, str] = {}
    if tool.op in ("get", "update", "transition", "delete", "adjust", "append", "remove"):
        params[f"{tool.entity}_id"] = f"ref:{tool.entity}"
    if tool.op == "create":
        params |= {n: entity.fields[n].type for n in spec.create_fields(tool) if n in entity.fields}
    if tool.op == "update":
        params |= {n: entity.fields[n].type for n in tool.fields or [] if n in entity.fields}
    params |= {n: p.type for n, p in tool.params.items()}
    return params


def _type_problems(spec: ServiceSpec, type_name: str, where: str) -> list[str]:
    kind, _semantic, local = spec.field_type(type_name)
    if kind == "ref":
        return [] if type_name[4:] in spec.entities else [f"{where}: {type_name!r} names no entity"]
    if kind == "local":
        return [] if local is not None else [f"{where}: local type {type_name!r} is not declared under 'types'"]
    if "." in type_name:
        return [f"{where}: type {type_name!r} belongs to another service; use a shared type or a ref"]
    if type_name not in SHARED:
        return [f"{where}: unknown semantic type {type_name!r} (shared types: {', '.join(sorted(SHARED))})"]
    return []


def _seed_problems(spec: ServiceSpec, entity_name: str, name: str, field: FieldSpec) -> list[str]:
    where = f"entity {entity_name!r} field {name!r}"
    if field.seed is None:
        return []
    kind, _, arg = field.seed.partition(":")
    if kind not in SEED_KINDS:
        return [f"{where}: seed {field.seed!r}: unknown kind {kind!r} (one of {', '.join(SEED_KINDS)})"]
    attrs: dict[str, tuple[str, ...]] = {"person": PERSON_ATTRS, "employee": PERSON_ATTRS, "contact": PERSON_ATTRS}
    attrs |= {"company": COMPANY_ATTRS, "product": PRODUCT_ATTRS}
    if kind in attrs:
        slot, _, attr = arg.partition(".")
        if not slot or attr not in attrs[kind]:
            return [f"{where}: seed {field.seed!r} must be {kind}:<slot>.<attr> with attr in {attrs[kind]}"]
    if kind in ("int", "number", "past", "future") and not re.fullmatch(r"-?[0-9.]+\.\.-?[0-9.]+", arg):
        return [f"{where}: seed {field.seed!r} must be {kind}:<lo>..<hi>"]
    if kind == "choice" and not arg and not spec.enum_of(field.type):
        return [f"{where}: seed 'choice' needs an enum type or 'choice:a|b'"]
    if kind == "ref" and not field.type.startswith("ref:"):
        return [f"{where}: seed 'ref' on a field that is not a ref"]
    if kind == "const":
        try:
            json.loads(arg)
        except ValueError:
            return [f"{where}: seed {field.seed!r}: const needs a JSON literal"]
    if kind == "none" and not field.optional:
        return [f"{where}: seed 'none' on a required field"]
    if kind == "text":
        missing = [p for p in re.findall(r"\{([a-z_][a-z0-9_]*)\}", arg) if p not in spec.entities[entity_name].fields]
        if missing:
            return [f"{where}: text template names unknown fields {missing}"]
    return []


def _entity_problems(spec: ServiceSpec, name: str, entity: EntitySpec) -> list[str]:
    problems: list[str] = []
    for field_name, field in entity.fields.items():
        where = f"entity {name!r} field {field_name!r}"
        if not re.fullmatch(NAME, field_name) or field_name in RESERVED:
            problems.append(f"{where}: invalid or reserved field name (reserved: {', '.join(sorted(RESERVED))})")
        problems.extend(_type_problems(spec, field.type, where))
        problems.extend(_seed_problems(spec, name, field_name, field))
        if field.role is not None and (wrong := role_problem(spec.field_type(field.type)[1], field.role)):
            problems.append(f"{where}: {wrong}")
        if field.type.startswith("ref:"):
            order = list(spec.entities)
            target = field.type[4:]
            if target in order and order.index(target) >= order.index(name) and field.seed != "none":
                problems.append(f"{where}: refers to {target!r}, which must be declared (and seeded) before {name!r}")
    life = entity.lifecycle
    if life is not None:
        life_field = entity.fields.get(life.field)
        enum = spec.enum_of(life_field.type) if life_field else None
        if life_field is None or enum is None:
            problems.append(f"entity {name!r}: lifecycle field {life.field!r} must be a field with an enum type")
        else:
            states = set(life.transitions)
            if states != set(enum):
                problems.append(f"entity {name!r}: lifecycle states {sorted(states)} differ from the enum {enum}")
            if life.initial not in states:
                problems.append(f"entity {name!r}: initial state {life.initial!r} is not a state")
            for source, targets in life.transitions.items():
                bad = [t for t in targets if t not in states]
                if bad:
                    problems.append(f"entity {name!r}: transitions from {source!r} name unknown states {bad}")
    return problems


def _tool_problems(spec: ServiceSpec, tool: ToolSpec) -> list[str]:
    where = f"tool {tool.name!r}"
    entity = spec.entities.get(tool.entity)
    if entity is None:
        return [f"{where}: unknown entity {tool.entity!r}"]
    problems: list[str] = []
    fields = set(entity.fields) | set(AUTO_FIELDS)

    def known(names: list[str], label: str) -> None:
        bad = [n for n in names if n.lstrip("-") not in fields]
        if bad:
            problems.append(f"{where}: {label} names unknown fields {bad} of {tool.entity!r}")

    known(tool.fields or [], "fields")
    known(tool.filters, "filters")
    known(tool.search, "search")
    known([tool.sort] if tool.sort else [], "sort")
    known([tool.field] if tool.field else [], "field")
    known([tool.group_by] if tool.group_by else [], "group_by")
    known(list(tool.set), "set")
    states = spec.states(tool.entity)
    for label, names in (("frozen", tool.frozen), ("when", tool.when or []), ("from", tool.from_ or [])):
        bad = [s for s in names if s not in states]
        if bad:
            problems.append(f"{where}: {label} names unknown states {bad}")
    for pname, param in tool.params.items():
        if not re.fullmatch(NAME, pname) or pname in RESERVED:
            problems.append(f"{where} param {pname!r}: invalid or reserved name")
        problems.extend(_type_problems(spec, param.type, f"{where} param {pname!r}"))
        if param.field is not None and param.field not in entity.fields:
            problems.append(f"{where} param {pname!r}: stores into unknown field {param.field!r}")
        if pname in entity.fields and tool.op in ("create", "update"):
            problems.append(f"{where} param {pname!r}: clashes with a field of {tool.entity!r}")
    life = entity.lifecycle
    if tool.op == "transition":
        if life is None or tool.to not in states:
            problems.append(f"{where}: transition needs an entity lifecycle and 'to' among its states")
        elif not spec.sources(tool):
            problems.append(f"{where}: no state can move to {tool.to!r}")
    if tool.op == "create":
        given = set(spec.create_fields(tool)) | set(tool.set) | {p.field for p in tool.params.values() if p.field}
        given |= {life.field} if life else set()
        missing = [
            n for n, f in entity.fields.items() if n not in given and not (f.optional or f.list) and f.default is None
        ]
        if missing:
            problems.append(f"{where}: create leaves required fields {missing} unset (add them, a default or a 'set')")
    if tool.op == "update" and not tool.fields:
        problems.append(f"{where}: update needs 'fields'")
    if tool.op == "update" and life is not None and life.field in (tool.fields or []):
        problems.append(f"{where}: the lifecycle field {life.field!r} changes only through transitions")
    if tool.op in ("adjust", "append", "remove"):
        target = entity.fields.get(tool.field or "")
        if target is None or len(tool.params) != 1:
            problems.append(f"{where}: {tool.op} needs 'field' and exactly one param")
        elif tool.op == "adjust":
            if target.list or python_type(spec, target.type) not in ("int", "float"):
                problems.append(f"{where}: adjust needs a numeric field")
        elif not target.list or next(iter(tool.params.values())).type != target.type:
            problems.append(f"{where}: {tool.op} needs a list field and a param of its item type")
    if tool.op == "aggregate":
        group = entity.fields.get(tool.group_by or "")
        if group is None or group.list:
            problems.append(f"{where}: aggregate needs 'group_by', a single-valued field")
        if tool.field and python_type(spec, entity.fields[tool.field].type) not in ("int", "float"):
            problems.append(f"{where}: aggregate sums only numeric fields")
    for blocker in tool.blocked_by:
        other = spec.entities.get(blocker)
        if other is None or not any(f.type == f"ref:{tool.entity}" for f in other.fields.values()):
            problems.append(f"{where}: blocked_by {blocker!r} is not an entity with a ref to {tool.entity!r}")
    for cascade in tool.cascade:
        via = entity.fields.get(cascade.via)
        if via is None or not via.type.startswith("ref:"):
            problems.append(f"{where}: cascade via {cascade.via!r} is not a ref field")
        elif bad := [k for k in cascade.set if k not in spec.entities[via.type[4:]].fields]:
            problems.append(f"{where}: cascade sets unknown fields {bad}")
    for effect in tool.effects:
        problems.extend(_effect_problems(spec, tool, effect))
    for i, guard in enumerate(tool.guards):
        for cond in guard.when + guard.require:
            problems.extend(_operand_problems(spec, tool, cond.left, f"{where} guard {i}"))
            if cond.right is not None:
                problems.extend(_operand_problems(spec, tool, cond.right, f"{where} guard {i}"))
            if cond.op in ("in", "not_in") and not isinstance(cond.value, list):
                problems.append(f"{where} guard {i}: {cond.op!r} needs a list value")
    if tool.kind == "write" and tool.op != "create" and tool.op != "delete" and tool.op != "transition":
        pass
    return problems


def _effect_problems(spec: ServiceSpec, tool: ToolSpec, effect: Effect) -> list[str]:
    where = f"tool {tool.name!r} effect {effect.id!r}"
    entity = spec.entities[tool.entity]
    if effect.via.startswith("record."):
        field = entity.fields.get(effect.via.removeprefix("record."))
        ref_type = field.type if field else ""
    else:
        ref_type = _tool_params(spec, tool).get(effect.via, "")
    if not ref_type.startswith("ref:") or ref_type[4:] not in spec.entities:
        return [f"{where}: via {effect.via!r} is neither a ref field of the record nor a ref parameter"]
    target = spec.entities[ref_type[4:]]
    problems = []
    for name, operand in effect.add.items():
        field = target.fields.get(name)
        if field is None or field.list or python_type(spec, field.type) not in ("int", "float"):
            problems.append(f"{where}: adds to {name!r}, which is no numeric field of {ref_type[4:]!r}")
        if isinstance(operand, str):
            if operand.startswith("record."):
                if operand.removeprefix("record.") not in entity.fields:
                    problems.append(f"{where}: operand {operand!r}: {tool.entity!r} has no such field")
            elif operand not in _tool_params(spec, tool):
                problems.append(f"{where}: operand {operand!r} is not a parameter of the tool")
    return problems


def rule_text(rule: str | Rule) -> str:
    return rule if isinstance(rule, str) else rule.text


def spec_problems(spec: ServiceSpec) -> list[str]:
    """Everything wrong with a spec, each naming the entity, field or tool."""
    problems: list[str] = []
    for name, entity in spec.entities.items():
        if not re.fullmatch(NAME, name):
            problems.append(f"entity {name!r}: invalid name")
        problems.extend(_entity_problems(spec, name, entity))
    names = [t.name for t in spec.tools]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"tool {dup!r} is defined twice")
    plurals = [e.plural for e in spec.entities.values()]
    if len(set(plurals)) != len(plurals):
        problems.append("two entities share a plural")
    for tool in spec.tools:
        problems.extend(_tool_problems(spec, tool))
    for ename in spec.entities:
        if not any(t.entity == ename and t.op == "get" for t in spec.tools):
            problems.append(f"entity {ename!r} has no 'get' tool (verification reads records back with it)")
    return problems


def load_spec(path: str | Path) -> ServiceSpec:
    """Read and validate one spec file; errors name the file, entity, field or tool.

    The consistency checks (:func:`spec_problems`, most of the cost) run once per file content and
    version of this package's code: a content that passed them is remembered in the disk cache
    (``servers.schema_cache``), so building a hub of hundreds of specs does not re-check them."""
    try:
        data = Path(path).read_bytes()
        cache = schema_cache.shared()
        key = f"spec-checked:{hashlib.sha256(data).hexdigest()}"
        checked = cache is not None and cache.get(key) is not None
        spec = ServiceSpec.model_validate(json.loads(data), context={CHECKED: checked})
        if cache is not None and not checked:
            cache.put(key, (True,))
        return spec
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


def load_catalog(directory: str | Path = CATALOG_DIR) -> list[ServiceSpec]:
    """Every spec of the catalog, sorted by name."""
    return sorted((load_spec(f) for f in sorted(Path(directory).glob("*.json"))), key=lambda s: s.name)
