"""The simulated subset of the catalog format: its checks and the tool schemas its services serve.

A spec with ``"simulated": true`` has no offline implementation: the world model serves every tool
(``worldmodel.fromspec`` compiles it). It uses the catalog's constructs with what simulation needs
(see :mod:`servers.construction.spec` for the format): ``compute`` tools, ``returns``, ``shapes``,
an entity's ``id_field``, per-field bounds and copies of other services' types; and none of what
only the spec engine implements (lifecycles, guards, effects, cascades, seeds, filters…).
"""

from __future__ import annotations

import re
from typing import Any

from servers.construction.consistency import type_problems
from servers.construction.specmodels import (
    NAME,
    SIMULATED_OPS,
    BaseServiceSpec,
    FieldSpec,
    ParamSpec,
    ToolSpec,
)
from servers.construction.vocabulary import SHARED
from servers.roles import ROLE_KEY, role_problem
from servers.types import SEMANTIC_KEY

#: Tool keys only the spec engine implements: a simulated tool that set one would promise behaviour
#: the world model does not have.
ENGINE_ONLY = ("fields", "filters", "search", "sort", "to", "from_", "frozen", "when", "blocked_by", "field",
               "group_by", "cascade", "guards", "effects")  # fmt: skip
RECORD_OPS = ("create", "get", "update")
"""Operations whose result is the entity's record (the others declare ``returns``)."""
JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "date": "string",
              "datetime": "string"}  # fmt: skip
FORMATS = {"date": "date", "datetime": "date-time"}
CONSTRAINTS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum",
               "pattern": "pattern", "min_length": "minLength", "max_length": "maxLength"}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Schemas: what a simulated service's tools take and answer


def _number(value: float) -> int | float:
    """Bounds as the JSON a person writes: ``5000``, not ``5000.0`` (the engine does the same)."""
    return int(value) if float(value).is_integer() else value


def shape_fields(spec: BaseServiceSpec, name: str) -> dict[str, FieldSpec]:
    """The fields of ``shape:<name>``: a shape's, or an entity's record."""
    return spec.shapes[name].fields if name in spec.shapes else spec.entities[name].fields


def type_schema(spec: BaseServiceSpec, type_name: str) -> dict[str, Any]:
    """The JSON schema of a value of a type, without description."""
    kind, name, local = spec.field_type(type_name)
    if kind == "shape":
        return record_schema(spec, shape_fields(spec, name))
    if kind == "ref":
        return {"type": "string", SEMANTIC_KEY: name, "minLength": 1}
    if local is not None:
        out: dict[str, Any] = {"type": local.type, SEMANTIC_KEY: name}
        for attr, key in (("enum", "enum"), ("pattern", "pattern"), ("min_length", "minLength"),
                          ("max_length", "maxLength")):  # fmt: skip
            if getattr(local, attr) is not None:
                out[key] = getattr(local, attr)
        for attr, key in (("minimum", "minimum"), ("exclusive_minimum", "exclusiveMinimum"), ("maximum", "maximum")):
            if getattr(local, attr) is not None:
                out[key] = _number(getattr(local, attr))
        return out
    shared = SHARED[type_name]
    out = {"type": JSON_TYPES[shared.python], SEMANTIC_KEY: name}
    if shared.python in FORMATS:
        out["format"] = FORMATS[shared.python]
    if shared.enum:
        out["enum"] = list(shared.enum)
    out |= {CONSTRAINTS[k]: v for k, v in shared.constraints.items()}
    return out


def field_schema(spec: BaseServiceSpec, field: FieldSpec | ParamSpec) -> dict[str, Any]:
    """The JSON-schema property of a field, result field or parameter: its type, bounds and description."""
    value = type_schema(spec, field.type)
    bounds = field.bounds()
    for attr, key in (("minimum", "minimum"), ("maximum", "maximum"), ("min_length", "minLength"),
                      ("max_length", "maxLength"), ("const", "const")):  # fmt: skip
        if attr not in bounds:
            continue
        if attr == "minimum":
            value.pop("exclusiveMinimum", None)  # a lower bound given replaces the type's, either kind
        if bounds[attr] is None:
            value.pop(key, None)
        else:
            value[key] = bounds[attr]
    description = field.description or _described_type(spec, field.type)
    if field.list:
        out: dict[str, Any] = {"type": "array", "description": description, "items": value}
        if SEMANTIC_KEY in value:
            out[SEMANTIC_KEY] = value[SEMANTIC_KEY]
        for attr, key in (("min_items", "minItems"), ("max_items", "maxItems")):
            if bounds.get(attr) is not None:
                out[key] = bounds[attr]
        if field.unique_items:
            out["uniqueItems"] = True
    else:
        out = {"type": value.pop("type"), "description": description, **value}
    if isinstance(field, FieldSpec) and field.role is not None:
        out[ROLE_KEY] = field.role
    if field.default is not None:
        out["default"] = field.default
    return out


def _described_type(spec: BaseServiceSpec, type_name: str) -> str:
    kind, name, _ = spec.field_type(type_name)
    if kind == "shape":
        return spec.shapes[name].description if name in spec.shapes else spec.entities[name].description
    return spec.type_description(type_name)


def record_schema(spec: BaseServiceSpec, fields: dict[str, FieldSpec]) -> dict[str, Any]:
    """An object schema of ``fields`` (in their order; the ones not ``optional`` are required)."""
    return {
        "type": "object",
        "properties": {name: field_schema(spec, f) for name, f in fields.items()},
        "required": [name for name, f in fields.items() if not f.optional],
    }


def input_schema(spec: BaseServiceSpec, tool: ToolSpec) -> dict[str, Any]:
    """What the tool takes: its ``params``, in their order (required unless optional or defaulted)."""
    return {
        "type": "object",
        "properties": {name: field_schema(spec, p) for name, p in tool.params.items()},
        "required": [name for name, p in tool.params.items() if not p.optional and p.default is None],
        "additionalProperties": False,
    }


def output_schema(spec: BaseServiceSpec, tool: ToolSpec) -> dict[str, Any]:
    """What the tool answers (the envelope's ``data``): the record, or its ``returns``."""
    if tool.op in RECORD_OPS:
        return record_schema(spec, spec.entities[tool.entity].fields)
    return record_schema(spec, tool.returns or {})


def items_field(spec: BaseServiceSpec, tool: ToolSpec) -> str | None:
    """The result field of a ``list`` tool that holds the records (``shape:<entity>``, a list)."""
    wanted = f"shape:{tool.entity}"
    return next((n for n, f in (tool.returns or {}).items() if f.type == wanted and f.list), None)


# ---------------------------------------------------------------------------------------------
# Checks


def _bounds_problems(spec: BaseServiceSpec, field: FieldSpec | ParamSpec, where: str) -> list[str]:
    bounds = field.bounds()
    if not bounds or type_problems(spec, field.type, where):
        return []  # a bad type is reported by itself
    base = "object" if field.type.startswith("shape:") else type_schema(spec, field.type)["type"]
    problems = []
    if ({"minimum", "maximum"} & set(bounds)) and base not in ("integer", "number"):
        problems.append(f"{where}: minimum / maximum need a numeric type")
    if ({"min_length", "max_length"} & set(bounds)) and base != "string":
        problems.append(f"{where}: min_length / max_length need a text type")
    if ({"min_items", "max_items", "unique_items"} & set(bounds)) and not field.list:
        problems.append(f"{where}: min_items / max_items / unique_items need a list field")
    return problems


def _field_problems(
    spec: BaseServiceSpec, name: str, field: FieldSpec | ParamSpec, where: str, nested: bool
) -> list[str]:
    """A field, result field or parameter: its name, type (shapes only where ``nested``), role and bounds."""
    where = f"{where} {name!r}"
    problems = [] if re.fullmatch(NAME, name) else [f"{where}: invalid name"]
    problems += type_problems(spec, field.type, where)
    if not nested and field.type.startswith("shape:"):
        problems.append(f"{where}: a shape is a result's nested record, not a stored or given value")
    problems += _bounds_problems(spec, field, where)
    if isinstance(field, FieldSpec):
        if field.role is not None and (wrong := role_problem(spec.field_type(field.type)[1], field.role)):
            problems.append(f"{where}: {wrong}")
        if field.seed is not None or field.unique:
            problems.append(f"{where}: seed and unique are for spec-run services (a simulated state starts empty)")
    elif field.field is not None:
        problems.append(f"{where}: 'field' is for spec-run services (a param named like a field sets it)")
    return problems


def _cycle(spec: BaseServiceSpec, name: str, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The chain of shapes by which ``name`` contains itself, if it does."""
    if name in path:
        return (*path, name)
    for field in shape_fields(spec, name).values():
        kind, inner, _ = spec.field_type(field.type)
        if kind == "shape" and (inner in spec.shapes or inner in spec.entities):
            found = _cycle(spec, inner, (*path, name))
            if found:
                return found
    return None


def _entity_problems(spec: BaseServiceSpec) -> list[str]:
    problems: list[str] = []
    for name, entity in spec.entities.items():
        where = f"entity {name!r}"
        if not re.fullmatch(NAME, name) or name in spec.shapes:
            problems.append(f"{where}: invalid name, or the name of a shape too")
        for field_name, field in entity.fields.items():
            problems += _field_problems(spec, field_name, field, f"{where} field", nested=False)
        key = entity.fields.get(entity.id_field or "")
        if key is None or key.list or key.optional:
            problems.append(f"{where}: a simulated entity names its id field (id_field), a required single field")
        if entity.lifecycle is not None or "seed" in entity.model_fields_set:
            problems.append(f"{where}: lifecycle and seed are for spec-run services")
    plurals = [e.plural for e in spec.entities.values()]
    if len(set(plurals)) != len(plurals):
        problems.append("two entities share a plural")
    return problems


def _tool_problems(spec: BaseServiceSpec, tool: ToolSpec) -> list[str]:
    where = f"tool {tool.name!r}"
    if tool.op not in SIMULATED_OPS:
        return [f"{where}: op {tool.op!r} is not simulated (one of {', '.join(SIMULATED_OPS)})"]
    entity = spec.entities.get(tool.entity)
    if (tool.op == "compute") != (tool.entity == "") or (tool.entity and entity is None):
        return [f"{where}: every op but compute names a known entity, compute none (got {tool.entity!r})"]
    problems = [
        f"{where}: {k.rstrip('_')!r} is for spec-run services" for k in ENGINE_ONLY if k in tool.model_fields_set
    ]
    for name, param in tool.params.items():
        problems += _field_problems(spec, name, param, f"{where} param", nested=False)
    for name, field in (tool.returns or {}).items():
        problems += _field_problems(spec, name, field, f"{where} returns", nested=True)
    if (tool.returns is None) != (tool.op in RECORD_OPS):
        problems.append(
            f"{where}: compute, list and delete declare 'returns'; create, get and update answer the record"
        )
    if tool.set and tool.op != "update":
        problems.append(f"{where}: only an update may 'set' fields")
    if entity is None:
        return problems
    if bad := [k for k in tool.set if k not in entity.fields]:
        problems.append(f"{where}: set names unknown fields {bad} of {tool.entity!r}")
    key = tool.params.get(entity.id_field or "")
    if tool.op in ("get", "update", "delete") and (key is None or key.optional or key.default is not None):
        problems.append(f"{where}: {tool.op} takes the record's id field {entity.id_field!r} (required)")
    if tool.op == "create" and key is not None:
        problems.append(f"{where}: create draws the id; {entity.id_field!r} is not a parameter")
    if tool.op == "update" and not tool.set and set(tool.params) <= {entity.id_field}:
        problems.append(f"{where}: an update changes something: params named like fields, or 'set'")
    if tool.op == "list" and items_field(spec, tool) is None:
        problems.append(f"{where}: a list returns its records in a list field of type 'shape:{tool.entity}'")
    return problems


def simulated_problems(spec: BaseServiceSpec) -> list[str]:
    """Everything wrong with a simulated spec, each naming the type, entity, shape, field or tool."""
    problems: list[str] = []
    for name, local in spec.types.items():
        owner, dot, bare = name.rpartition(".")
        if dot and (owner == spec.name or not re.fullmatch(NAME, owner) or not re.fullmatch(NAME, bare)):
            problems.append(f"type {name!r}: a copied type is named '<other service>.<type>'")
        numeric = local.type in ("integer", "number")
        if not numeric and (local.minimum, local.maximum, local.exclusive_minimum) != (None, None, None):
            problems.append(f"type {name!r}: bounds need a numeric type")
    problems += _entity_problems(spec)
    for name, shape in spec.shapes.items():
        if not re.fullmatch(NAME, name):
            problems.append(f"shape {name!r}: invalid name")
        for field_name, field in shape.fields.items():
            problems += _field_problems(spec, field_name, field, f"shape {name!r} field", nested=True)
    if not problems:  # a cycle is looked for only among shapes that exist
        for name in spec.shapes:
            if chain := _cycle(spec, name):
                problems.append(f"shape {name!r} contains itself: {' -> '.join(chain)}")
                break
    names = [t.name for t in spec.tools]
    problems += [f"tool {dup!r} is defined twice" for dup in sorted({n for n in names if names.count(n) > 1})]
    for tool in spec.tools:
        problems += _tool_problems(spec, tool)
    for i, rule in enumerate(spec.rules):
        if not isinstance(rule, str) and rule.holds is not None:
            problems.append(f"rule {i}: an invariant ('holds') is checked on seeds; a simulated state has none")
    return problems
