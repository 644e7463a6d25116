"""Service specs: the catalog format from which services are built and verified.

One JSON file per service in ``servers/catalog/`` (and, for the simulated subset below, in
``worldmodel/specs/``). A service spec declares the state's **entities** and the semantic type of
every field, and describes each tool by its **operation** on an entity, so that one spec yields
(a) a native typed module (``servers.construction.template``), (b) the tool schemas every
implementation must expose (``servers.construction.schemas``), (c) generated verification
scenarios (``servers.construction.scenarios``) and (d) a simulated fallback for the world model
(``worldmodel.fromspec``). Shape::

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

**Simulated services** (``"simulated": true``; the world model's own, ``worldmodel/specs/``) have
no offline implementation: the world model serves every tool, keeping what writes store
(:mod:`worldmodel.fromspec` compiles them; :mod:`servers.construction.simspec` checks them and
renders their schemas). They use the same constructs, with what simulation needs and none of what
only the spec engine implements (lifecycles, guards, effects, cascades, seeds, ``fields``,
``filters``…)::

    {"name": "flights", "category": "travel", "simulated": true, "description": "...",
     "types": {"airport_code": {"description": "IATA airport code.", "pattern": "^[A-Z]{3}$"},
               "geocoding.latitude": {"description": "...", "type": "number", "minimum": -90, "maximum": 90}},
     "entities": {"booking": {"plural": "bookings", "id_prefix": "bk", "id_field": "booking_id", "description": "...",
                              "fields": {"booking_id": {"type": "ref:booking", "description": "Id of the booking."},
                                         "total_price": {"type": "money_amount", "description": "...",
                                                         "role": "amount_paid", "minimum": 20, "maximum": null},
                                         "created_at": {"type": "date_time", "description": "...", "role": "system"}}}},
     "shapes": {"flight_offer": {"description": "...", "fields": {"price": {"type": "money_amount", ...}, ...}}},
     "tools": [
       {"name": "search_flights", "op": "compute", "description": "...",
        "params": {"origin": {"type": "flights.airport_code", "description": "..."},
                   "limit": {"type": "page_limit", "description": "...", "maximum": 50, "default": 10}},
        "returns": {"flights": {"type": "shape:flight_offer", "list": true, "description": "..."},
                    "total_results": {"type": "count", "description": "..."}}},
       {"name": "book_flight", "op": "create", "entity": "booking", "description": "...", "params": {...}},
       {"name": "list_bookings", "op": "list", "entity": "booking", "description": "...", "params": {...},
        "returns": {"bookings": {"type": "shape:booking", "list": true, "description": "..."},
                    "total": {"type": "count", "description": "..."}}},
       {"name": "cancel_booking", "op": "update", "entity": "booking", "description": "...",
        "params": {"booking_id": {"type": "ref:booking", "description": "..."}}, "set": {"status": "cancelled"}}]}

- **Operations**: ``compute`` (a read that is a pure function of its arguments: the same question
  gets the same answer all episode long), and ``create``, ``get``, ``list``, ``update``,
  ``delete`` on an entity's records. A tool takes exactly its ``params`` (required unless
  ``optional`` or with a ``default``): ``get``, ``update`` and ``delete`` take the record's id field;
  a parameter named like a field of the entity sets it (``create``, ``update``) or filters by it
  (``list``); an ``update`` may also ``set`` constant values.
- **Results**: ``create``, ``get`` and ``update`` answer the entity's record; ``compute``, ``list``
  and ``delete`` their ``returns`` (fields, as an entity's), a list's records in a list field of
  type ``shape:<entity>``, its ``count`` fields counting them.
- **Entities** name the field that holds a record's id (``id_field``, a field of their own, e.g.
  ``booking_id`` of type ``ref:booking``); a record has exactly its ``fields`` (no implicit id or
  stamps). Stored fields of an ambiguous type name their ``role``, as in any spec (spec lint).
- **Shapes** are named field sets for records nested in results (one flight offer, one route
  step), written ``shape:<name>`` (``list: true`` for an array of them); an entity's name is
  also a shape: its record.
- **Bounds**: a field or parameter may restate its type's ``minimum`` / ``maximum`` (``null``
  removes one: a price with no upper bound), ``min_length`` / ``max_length``, fix a ``const``
  (a flag always true), and bound a list (``min_items``, ``max_items``, ``unique_items``).
- **Types**: a local type may have an ``exclusive_minimum``; another service's type is used by its
  full name (``geocoding.latitude``) and declared under ``types`` by that name, a copy of the
  owner's, so values connect to that service's tools.
"""

from __future__ import annotations

import hashlib
import json
import keyword
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from servers import schema_cache
from servers.construction.vocabulary import SHARED

CATALOG_DIR = Path(__file__).resolve().parents[1] / "catalog"
CHECKED = "consistency_checked"  # validation context: the content passed spec_problems before

NAME = r"^[a-z][a-z0-9_]{1,40}$"
READ_OPS = ("list", "get", "aggregate", "compute")
WRITE_OPS = ("create", "update", "transition", "delete", "adjust", "append", "remove")
OPS = Literal[
    "list", "get", "aggregate", "compute", "create", "update", "transition", "delete", "adjust", "append", "remove"
]
#: The operations of simulated services (the world model's effects; ``compute``: a pure function of the arguments).
SIMULATED_OPS = ("compute", "create", "get", "list", "update", "delete")
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
    exclusive_minimum: float | None = Field(default=None, description="Simulated services only.")
    min_length: int | None = None
    max_length: int | None = None


class Bounds(Strict):
    """Simulated services only: bounds of one field or parameter that replace its type's.

    A numeric bound given replaces the type's on that side, ``null`` removes it (a price with no
    upper bound); ``const`` fixes the value (a flag that is always true); the ``*_items`` bounds
    apply to a ``list`` field."""

    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    const: Any = None
    min_items: int | None = Field(default=None, ge=0)
    max_items: int | None = Field(default=None, ge=0)
    unique_items: bool = False

    def bounds(self) -> dict[str, Any]:
        """The bounds this field or parameter sets (``None``: a bound it removes)."""
        return {k: getattr(self, k) for k in Bounds.model_fields if k in self.model_fields_set}


class FieldSpec(Bounds):
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
    id_field: str | None = Field(
        default=None, description="Simulated services only (and required there): the field holding the record's id."
    )


class ShapeSpec(Strict):
    """Simulated services only: a record nested in a result (``shape:<name>``), e.g. one flight offer."""

    description: str = ""
    fields: dict[str, FieldSpec] = Field(min_length=1)


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


class ParamSpec(Bounds):
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
    entity: str = ""  # none for ``compute``
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
    returns: dict[str, FieldSpec] | None = Field(
        default=None, description="Simulated services only: the result of a compute, list or delete tool."
    )

    @property
    def kind(self) -> Literal["read", "write"]:
        return "read" if self.op in READ_OPS else "write"


class ServiceSpec(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{1,30}$")
    version: int = Field(default=1, ge=1)
    category: str = Field(min_length=2)
    description: str = Field(min_length=10)
    modelled_on: str = ""
    simulated: bool = Field(default=False, description="No offline implementation: the world model serves it.")
    rules: list[str | Rule] = Field(default_factory=list)
    types: dict[str, TypeSpec] = Field(default_factory=dict)
    entities: dict[str, EntitySpec] = Field(default_factory=dict)
    shapes: dict[str, ShapeSpec] = Field(default_factory=dict)
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
        """``(kind, semantic name, local type)`` with kind ``shared``, ``local``, ``ref``, ``foreign``
        (another service's type: a simulated service declares a copy under its full name) or
        ``shape`` (a nested record of a simulated service's result; the name is the shape's)."""
        if type_name.startswith("ref:"):
            return "ref", f"{self.name}.{type_name[4:]}_id", None
        if type_name.startswith("shape:"):
            return "shape", type_name[6:], None
        if type_name.startswith(f"{self.name}."):
            return "local", type_name, self.types.get(type_name.split(".", 1)[1])
        if "." in type_name:
            return "foreign", type_name, self.types.get(type_name)
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


def rule_text(rule: str | Rule) -> str:
    return rule if isinstance(rule, str) else rule.text


def spec_problems(spec: ServiceSpec) -> list[str]:
    """Everything wrong with a spec, each naming the entity, field or tool."""
    # The checks live beside the models and import them: imported here, when first needed.
    from servers.construction.consistency import catalog_problems
    from servers.construction.simspec import simulated_problems

    return simulated_problems(spec) if spec.simulated else catalog_problems(spec)


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
