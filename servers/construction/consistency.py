"""Consistency checks of catalog specs: what :class:`~servers.construction.spec.ServiceSpec` validates.

Every problem names the entity, field or tool. Run once per spec file content
(:func:`servers.construction.spec.load_spec` remembers the contents that passed).
"""

from __future__ import annotations

import json
import re

from servers.construction.specmodels import (
    AUTO_FIELDS,
    COMPANY_ATTRS,
    NAME,
    PERSON_ATTRS,
    PRODUCT_ATTRS,
    RESERVED,
    SEED_KINDS,
    BaseServiceSpec,
    Effect,
    EntitySpec,
    FieldSpec,
    ToolSpec,
)
from servers.construction.vocabulary import SHARED
from servers.roles import role_problem

RESERVED_PLURALS = frozenset({"collections", "seq", "clock"})
"""State field names an entity's records may not take: ``collections`` (where simulated services
keep theirs, ``hub.collateral.NESTED``) and the engine's own counters."""


def _operand_problems(spec: BaseServiceSpec, tool: ToolSpec, operand: str, where: str) -> list[str]:
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


def _tool_params(spec: BaseServiceSpec, tool: ToolSpec) -> dict[str, str]:
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


def type_problems(spec: BaseServiceSpec, type_name: str, where: str) -> list[str]:
    """What is wrong with a field type (a shared, local or foreign type, a ref or a shape) in ``spec``."""
    kind, name, local = spec.field_type(type_name)
    if kind == "ref":
        return [] if type_name[4:] in spec.entities else [f"{where}: {type_name!r} names no entity"]
    if kind == "local":
        return [] if local is not None else [f"{where}: local type {type_name!r} is not declared under 'types'"]
    if kind == "shape":
        if not spec.simulated:
            return [f"{where}: shape types are for simulated services"]
        known = name in spec.shapes or name in spec.entities
        return [] if known else [f"{where}: {type_name!r} names neither a shape nor an entity"]
    if kind == "foreign":
        if not spec.simulated:
            return [f"{where}: type {type_name!r} belongs to another service; use a shared type or a ref"]
        if local is None:
            return [f"{where}: another service's type {type_name!r} needs a copy under 'types' by its full name"]
        return []
    if type_name not in SHARED:
        return [f"{where}: unknown semantic type {type_name!r} (shared types: {', '.join(sorted(SHARED))})"]
    return []


def _seed_problems(spec: BaseServiceSpec, entity_name: str, name: str, field: FieldSpec) -> list[str]:
    where = f"entity {entity_name!r} field {name!r}"
    if field.seed_by_state:
        plain = field.model_copy(update={"seed_by_state": None})
        return _seed_problems(spec, entity_name, name, plain) + _by_state_problems(
            spec, entity_name, name, field, where
        )
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
    if kind == "from":
        return _copy_problems(spec, entity_name, field, where)
    return []


def _by_state_problems(spec: BaseServiceSpec, entity_name: str, name: str, field: FieldSpec, where: str) -> list[str]:
    """``seed_by_state`` names states of the record's lifecycle (not the lifecycle field itself), each
    with a valid seed, and no text template of the record names the field (it is drawn last)."""
    entity = spec.entities[entity_name]
    if entity.lifecycle is None or entity.lifecycle.field == name:
        return [f"{where}: seed_by_state needs a lifecycle of {entity_name!r} and may not seed its state field"]
    assert field.seed_by_state is not None
    lifecycle = entity.lifecycle
    states = {lifecycle.initial, *lifecycle.transitions, *(t for ts in lifecycle.transitions.values() for t in ts)}
    problems = [f"{where}: seed_by_state names {value!r}, no state of {entity_name!r}"
                for value in field.seed_by_state if value not in states]  # fmt: skip
    for value, seed in field.seed_by_state.items():
        alternative = field.model_copy(update={"seed": seed, "seed_by_state": None})
        problems += [f"{p} (state {value!r})" for p in _seed_problems(spec, entity_name, name, alternative)]
    problems += [f"{where}: text seed of {other!r} names a field seeded by state"
                 for other, f in entity.fields.items()
                 if (f.seed or "").startswith("text:") and "{" + name + "}" in (f.seed or "")]  # fmt: skip
    return problems


def _copy_problems(spec: BaseServiceSpec, entity_name: str, field: FieldSpec, where: str) -> list[str]:
    """A ``from:<ref>.<field>`` seed names a reference of its own record and a field of the record
    it points at, of the same type; it may be empty only if the field may be."""
    assert field.seed is not None
    fields = spec.entities[entity_name].fields
    ref_name, _, attr = field.seed.partition(":")[2].partition(".")
    ref = fields.get(ref_name)
    if ref is None or not ref.type.startswith("ref:") or ref.list or (ref.seed or "ref") != "ref":
        return [
            f"{where}: seed {field.seed!r} must name a drawn reference field of {entity_name!r} (from:<ref>.<field>)"
        ]
    parent = spec.entities.get(ref.type[4:])
    source = parent.fields.get(attr) if parent is not None else None
    if source is None:
        return [f"{where}: seed {field.seed!r}: {ref.type[4:]!r} has no field {attr!r}"]
    if (source.type, source.list) != (field.type, field.list):
        return [f"{where}: seed {field.seed!r} copies a {source.type!r} into a {field.type!r} field"]
    if (ref.optional or source.optional) and not field.optional:
        return [f"{where}: seed {field.seed!r} may copy nothing (an empty reference or field) into a required field"]
    return []


def _entity_problems(spec: BaseServiceSpec, name: str, entity: EntitySpec) -> list[str]:
    problems: list[str] = []
    for field_name, field in entity.fields.items():
        where = f"entity {name!r} field {field_name!r}"
        if not re.fullmatch(NAME, field_name) or field_name in RESERVED:
            problems.append(f"{where}: invalid or reserved field name (reserved: {', '.join(sorted(RESERVED))})")
        problems.extend(type_problems(spec, field.type, where))
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


def _tool_problems(spec: BaseServiceSpec, tool: ToolSpec) -> list[str]:
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
        problems.extend(type_problems(spec, param.type, f"{where} param {pname!r}"))
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
            if target.list or spec.python_type(target.type) not in ("int", "float"):
                problems.append(f"{where}: adjust needs a numeric field")
        elif not target.list or next(iter(tool.params.values())).type != target.type:
            problems.append(f"{where}: {tool.op} needs a list field and a param of its item type")
    if tool.op == "aggregate":
        group = entity.fields.get(tool.group_by or "")
        if group is None or group.list:
            problems.append(f"{where}: aggregate needs 'group_by', a single-valued field")
        if tool.field and spec.python_type(entity.fields[tool.field].type) not in ("int", "float"):
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


def _effect_problems(spec: BaseServiceSpec, tool: ToolSpec, effect: Effect) -> list[str]:
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
        if field is None or field.list or spec.python_type(field.type) not in ("int", "float"):
            problems.append(f"{where}: adds to {name!r}, which is no numeric field of {ref_type[4:]!r}")
        if isinstance(operand, str):
            if operand.startswith("record."):
                if operand.removeprefix("record.") not in entity.fields:
                    problems.append(f"{where}: operand {operand!r}: {tool.entity!r} has no such field")
            elif operand not in _tool_params(spec, tool):
                problems.append(f"{where}: operand {operand!r} is not a parameter of the tool")
    return problems


def catalog_problems(spec: BaseServiceSpec) -> list[str]:
    """Everything wrong with a catalog (not simulated) spec, each naming the entity, field or tool."""
    problems: list[str] = simulated_only(spec)
    if not spec.entities:
        problems.append("a service needs at least one entity")
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
    for name, entity in spec.entities.items():
        if entity.plural in RESERVED_PLURALS:
            problems.append(
                f"entity {name!r}: plural {entity.plural!r} is reserved (the state field under which simulated"
                " services keep their records, which the rubric's diffs read as such); name it e.g."
                f" '{name}_{entity.plural}'"
            )
    for tool in spec.tools:
        problems.extend(_tool_problems(spec, tool))
    for ename in spec.entities:
        if not any(t.entity == ename and t.op == "get" for t in spec.tools):
            problems.append(f"entity {ename!r} has no 'get' tool (verification reads records back with it)")
    return problems


def simulated_only(spec: BaseServiceSpec) -> list[str]:
    """What of the simulated subset a catalog spec uses (no implementation here would honour it)."""
    used = [f"type {n!r}: a dotted name (another service's type)" for n in spec.types if "." in n]
    used += [f"type {n!r}: exclusive_minimum" for n, t in spec.types.items() if t.exclusive_minimum is not None]
    used += ["shapes"] * bool(spec.shapes)
    used += [f"entity {n!r}: id_field" for n, e in spec.entities.items() if e.id_field is not None]
    for name, entity in spec.entities.items():
        used += [f"entity {name!r} field {f!r}: bounds" for f, field in entity.fields.items() if field.bounds()]
    for tool in spec.tools:
        used += [f"tool {tool.name!r}: op 'compute'"] * (tool.op == "compute")
        used += [f"tool {tool.name!r}: returns"] * (tool.returns is not None)
        used += [f"tool {tool.name!r} param {n!r}: bounds" for n, p in tool.params.items() if p.bounds()]
    return [f'{u} is for simulated services ("simulated": true)' for u in used]
