"""The models of a service spec (the format is documented in :mod:`servers.construction.spec`).

Kept apart from ``spec`` so that the consistency checks (``consistency``, ``simspec``), which
read a spec through these models, sit below the :class:`~servers.construction.spec.ServiceSpec`
that runs them on validation: the models import neither.
"""

from __future__ import annotations

import keyword
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from servers.construction.vocabulary import SHARED

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
    "pattern", "text", "bool", "const", "ref", "none", "from",
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
    seed_by_state: dict[str, str] | None = Field(
        default=None,
        description="Seeds by the record's lifecycle state (state -> seed), used instead of `seed` in those "
        "states: a passed run's error rate is low, a draft has no approver.",
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


class BaseServiceSpec(Strict):
    """A service spec as parsed, before the cross-field checks that :class:`servers.construction.spec.ServiceSpec`
    adds (those checks read the spec through this class, so it cannot hold them itself)."""

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

    # -- the types of its fields ------------------------------------------------------------

    def python_type(self, type_name: str) -> str:
        """The Python base type (``str``, ``int``, ``float``, ``bool``, ``datetime``, ``date``) of a field type."""
        kind, _, local = self.field_type(type_name)
        if kind == "ref":
            return "str"
        if local is not None:
            return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}[local.type]
        shared = SHARED.get(type_name)
        return shared.python if shared else "str"

    def value_range(self, type_name: str) -> tuple[float | None, float | None]:
        """``(minimum, maximum)`` a value of the type may take (None: unbounded on that side)."""
        _, _, local = self.field_type(type_name)
        if local is not None:
            return local.minimum, local.maximum
        shared = SHARED.get(type_name)
        return (shared.constraints.get("ge"), shared.constraints.get("le")) if shared else (None, None)

    def type_description(self, type_name: str, plural: bool = False) -> str:
        """The description of a field type: a local or shared type's own, or the id(s) of an entity."""
        kind, _, local = self.field_type(type_name)
        if local is not None:
            return local.description
        if kind == "ref":
            noun = type_name[4:].replace("_", " ")
            return f"Ids of {noun}s." if plural else f"Id of the {noun}."
        return SHARED[type_name].description


def rule_text(rule: str | Rule) -> str:
    return rule if isinstance(rule, str) else rule.text
