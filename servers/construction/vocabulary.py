"""The shared semantic types of ``servers.types`` as data: alias name, Python type, enum, constraints.

The template compiler imports these aliases into generated modules (``EmailAddress``), the
scenario generator draws values for them, and spec validation checks field types against them.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args, get_origin

from pydantic.fields import FieldInfo

import servers.types as types_module
from servers.types import SEMANTIC_KEY

if TYPE_CHECKING:
    from servers.construction.spec import ServiceSpec


@dataclass(frozen=True)
class SharedType:
    semantic: str
    alias: str  # name in servers.types
    python: str  # "str", "int", "float", "bool", "datetime", "date"
    description: str
    enum: list[str] | None = None
    constraints: dict[str, Any] = field(default_factory=dict)


def _shared() -> dict[str, SharedType]:
    found: dict[str, SharedType] = {}
    for alias, value in vars(types_module).items():
        if get_origin(value) is not typing.Annotated or alias.startswith("_"):
            continue
        base, *meta = get_args(value)
        info = next((m for m in meta if isinstance(m, FieldInfo)), None)
        extra = info.json_schema_extra if info is not None else None
        if not isinstance(extra, dict) or SEMANTIC_KEY not in extra:
            continue
        enum = None
        if get_origin(base) is typing.Literal:
            enum, python = [str(a) for a in get_args(base)], "str"
        else:
            python = {"AwareDatetime": "datetime"}.get(base.__name__, base.__name__)
        constraints: dict[str, Any] = {}
        for item in info.metadata if info is not None else []:
            for key in ("ge", "le", "gt", "lt", "pattern", "min_length", "max_length"):
                if getattr(item, key, None) is not None:
                    constraints[key] = getattr(item, key)
        semantic = str(extra[SEMANTIC_KEY])
        description = str(info.description) if info is not None else ""
        found.setdefault(semantic, SharedType(semantic, alias, python, description, enum, constraints))
    return found


#: Semantic name → shared type, for every top-level alias of ``servers.types``.
SHARED: dict[str, SharedType] = _shared()


def python_type(spec: ServiceSpec, type_name: str) -> str:
    """The Python base type (``str``, ``int``, ``float``, ``bool``, ``datetime``, ``date``) of a field type."""
    kind, _, local = spec.field_type(type_name)
    if kind == "ref":
        return "str"
    if local is not None:
        return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}[local.type]
    shared = SHARED.get(type_name)
    return shared.python if shared else "str"


def value_range(spec: ServiceSpec, type_name: str) -> tuple[float | None, float | None]:
    """``(minimum, maximum)`` a value of the type may take (None: unbounded on that side)."""
    _, _, local = spec.field_type(type_name)
    if local is not None:
        return local.minimum, local.maximum
    shared = SHARED.get(type_name)
    return (shared.constraints.get("ge"), shared.constraints.get("le")) if shared else (None, None)


def type_description(spec: ServiceSpec, type_name: str, plural: bool = False) -> str:
    """The description of a field type: a local or shared type's own, or the id(s) of an entity."""
    kind, _, local = spec.field_type(type_name)
    if local is not None:
        return local.description
    if kind == "ref":
        noun = type_name[4:].replace("_", " ")
        return f"Ids of {noun}s." if plural else f"Id of the {noun}."
    return SHARED[type_name].description
