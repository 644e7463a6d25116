"""The operations of spec-run tools: one small interpreter per ``op`` over the typed state.

Each tool of a spec becomes an :class:`Operation`: its declared parameters (names, annotations,
defaults and descriptions, in the order the ejected code declares them) and a call
``(state, **arguments) -> result`` that checks everything — ids that must exist, unique values,
lifecycle states, frozen states, ranges, list membership, the spec's guards — before its first
change, then applies the change, the ``set`` constants, the ``effects`` on other records and the
``updated_at`` stamp. The order of the checks, and every error message, is the ejected code's, so
both fail the same call with the same envelope.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from servers.construction.spec import ToolSpec
from servers.engine.conditions import MISSING, Scope, broken
from servers.engine.models import Models
from servers.framework import (
    BadRequest,
    Conflict,
    Declared,
    Deferred,
    Forbidden,
    NotFound,
    Page,
    ServiceError,
    ServiceState,
    ToolMeta,
    contains,
    paginate,
    require,
)
from servers.state import peek_values
from servers.types import Limit, Offset, Query


def _filter(name: str, how: str) -> Callable[[Any, dict[str, Any]], bool]:
    """A listing's filter on ``name``: equal, a member of a list field, or an email in any case."""

    def test(record: Any, values: dict[str, Any]) -> bool:
        wanted = values[name]
        if wanted is None:
            return True
        if how == "member":
            return wanted in getattr(record, name)
        if how == "email":
            return bool((getattr(record, name) or "").lower() == wanted.lower())
        return bool(getattr(record, name) == wanted)

    return test


ERRORS: dict[int, type[ServiceError]] = {400: BadRequest, 403: Forbidden, 404: NotFound, 409: Conflict}
RECORD_OPS = ("get", "update", "transition", "delete", "adjust", "append", "remove")


class Operation:
    """One spec tool: parameters, result annotation, metadata, and the call itself."""

    def __init__(self, models: Models, tool: ToolSpec) -> None:
        self.models, self.spec, self.tool = models, models.spec, tool
        self.entity = self.spec.entities[tool.entity]
        self.plural = self.entity.plural
        self.label = tool.entity.replace("_", " ")
        self.id_param = f"{tool.entity}_id"
        self.params: list[Declared] = []
        self.types: dict[str, str] = {}  # param -> type name
        self.nullable: set[str] = set()
        self.result: Any = Deferred(lambda: self.model)
        self.checked: list[str] = []  # ref params whose records must exist (404), in order
        self.call: Callable[[ServiceState, dict[str, Any]], Any] = getattr(self, f"_declare_{tool.op}")()

    @property
    def model(self) -> Any:
        return self.models.records[self.tool.entity]

    def __call__(self, state: ServiceState, **values: Any) -> Any:
        return self.call(state, values)

    # -- parameters --------------------------------------------------------------------------

    def _describe(self, type_name: str, explicit: str | None) -> str:
        return explicit or self.spec.type_description(type_name)

    def add(self, name: str, type_name: str, description: str, *, optional: bool, listed: bool = False,
            default: Any = None) -> None:  # fmt: skip
        annotation = self.models.annotation(type_name, listed=listed)
        self.types[name] = type_name
        if optional or default is not None:
            if default is None:
                annotation = annotation | None
                self.nullable.add(name)
            self.params.append(Declared(name, annotation, False, default, description))
        else:
            self.params.append(Declared(name, annotation, True, None, description))

    def add_field(self, name: str, optional: bool) -> None:
        field = self.entity.fields[name]
        self.add(name, field.type, self._describe(field.type, field.description),
                 optional=optional or field.optional or field.list, listed=field.list,
                 default=None if optional else field.default)  # fmt: skip

    def add_id(self) -> None:
        self.add(self.id_param, f"ref:{self.tool.entity}", f"Id of the {self.label}.", optional=False)

    def add_extra(self) -> None:
        for name, param in self.tool.params.items():
            self.add(name, param.type, param.description, optional=param.optional, listed=param.list,
                     default=param.default)  # fmt: skip

    def required_first(self) -> None:
        self.params.sort(key=lambda p: not p.required)

    def field_type(self, name: str) -> str:
        return self.entity.fields[name].type if name in self.entity.fields else "date_time"

    # -- checks ------------------------------------------------------------------------------

    def table(self, state: ServiceState, entity: str | None = None) -> dict[str, Any]:
        return getattr(state, self.spec.entities[entity or self.tool.entity].plural)

    def target(self, state: ServiceState, values: dict[str, Any]) -> Any:
        return require(self.table(state), values[self.id_param], self.label)

    def check_refs(self, state: ServiceState, values: dict[str, Any], names: list[str]) -> dict[str, Any]:
        """404 for an unknown id given in a (single) ref param; the records found, by param."""
        found: dict[str, Any] = {}
        for name in names:
            type_name = self.types.get(name, "")
            value = values.get(name)
            if not type_name.startswith("ref:") or isinstance(value, list) or value is None:
                continue
            found[name] = require(self.table(state, type_name[4:]), value, type_name[4:].replace("_", " "))
        return found

    def check_unique(self, state: ServiceState, values: dict[str, Any], names: list[str], own: str | None) -> None:
        for name in names:
            field = self.entity.fields.get(name)
            value = values.get(name)
            if field is None or not field.unique or value is None:
                continue
            if any(getattr(r, name) == value and r.id != own for r in peek_values(self.table(state))):
                raise Conflict(f"a {self.label} with {name} {value!r} already exists")

    def check_state(self, record: Any, values: dict[str, Any], allowed: list[str], verb: str) -> None:
        life = self.entity.lifecycle
        if life is None or set(allowed) >= set(self.spec.states(self.tool.entity)):
            return
        status = getattr(record, life.field)
        if status not in allowed:
            raise Conflict(f"{self.label} {values[self.id_param]!r} is {status!r}; {verb} needs one of {allowed}")

    def check_frozen(self, record: Any, values: dict[str, Any]) -> None:
        life = self.entity.lifecycle
        if life is None or not self.tool.frozen:
            return
        status = getattr(record, life.field)
        if status in self.tool.frozen:
            raise Conflict(f"{self.label} {values[self.id_param]!r} is {status!r} and cannot be changed")

    def linked_record(self, state: ServiceState, record: Any, via: str) -> Any:
        """The record the ref field ``via`` of ``record`` points to (None if unset or dangling)."""
        key = getattr(record, via)
        target = self.entity.fields[via].type[4:]
        return None if key is None else self.table(state, target).get(key)

    def check_guards(self, state: ServiceState, values: dict[str, Any], record: Any, fetched: dict[str, Any]) -> None:
        if not self.tool.guards:
            return

        def linked(head: str, follow: str) -> Any:
            if head.startswith("record."):
                other = self.linked_record(state, record, head.removeprefix("record."))
            elif head in fetched:
                other = fetched[head]
            else:
                key = values.get(head)
                type_name = self.types.get(head, "")
                other = self.table(state, type_name[4:]).get(key) if key is not None else None
            value = None if other is None else getattr(other, follow)
            return MISSING if value is None else value

        guard = broken(self.tool.guards, Scope(values, record, state.clock, linked))
        if guard is not None:
            prefix = f"{self.label} {values[self.id_param]!r}: " if self.tool.op in RECORD_OPS else ""
            raise ERRORS[guard.code](prefix + guard.message)

    def plan_effects(self, state: ServiceState, values: dict[str, Any], record: Any) -> list[tuple[Any, str, Any]]:
        """(record, field, new value) of every effect, each checked against its field's range."""
        plan: list[tuple[Any, str, Any]] = []
        for effect in self.tool.effects:
            if effect.via.startswith("record."):
                name = effect.via.removeprefix("record.")
                key = values.get(name) if record is None else getattr(record, name)
                type_name = self.entity.fields[name].type
            else:
                key, type_name = values.get(effect.via), self.types[effect.via]
            target_entity = type_name[4:]
            other = None if key is None else self.table(state, target_entity).get(key)
            if other is None:
                continue  # nothing linked: nothing to change
            for field_name, operand in effect.add.items():
                amount = self._operand(operand, values, record)
                if amount is None:
                    continue
                field = self.spec.entities[target_entity].fields[field_name]
                current = getattr(other, field_name) or 0
                integer = self.spec.python_type(field.type) == "int"
                new_value = current + amount if integer else round(current + amount, 6)
                lo, hi = self.spec.value_range(field.type)
                if (lo is not None and new_value < lo) or (hi is not None and new_value > hi):
                    label = target_entity.replace("_", " ")
                    raise Conflict(
                        f"{effect.id}: {label} {key!r} {field_name} would become {new_value}, outside "
                        f"[{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"
                    )
                plan.append((other, field_name, new_value))
        return plan

    def _operand(self, operand: str | float, values: dict[str, Any], record: Any) -> Any:
        if not isinstance(operand, str):
            return operand
        if operand.startswith("record."):
            name = operand.removeprefix("record.")
            return values.get(name) if record is None else getattr(record, name)
        return values.get(operand)

    @staticmethod
    def apply_effects(plan: list[tuple[Any, str, Any]], now: dt.datetime) -> None:
        for other, field_name, new_value in plan:
            setattr(other, field_name, new_value)
            other.updated_at = now

    # -- changes -----------------------------------------------------------------------------

    def constant(self, raw: Any, entity: str, name: str, now: dt.datetime) -> Any:
        """A ``set`` value: ``"$now"`` is the clock (its date for a date field)."""
        if raw != "$now":
            return raw
        field = self.spec.entities[entity].fields.get(name)
        return now.date() if field and self.spec.python_type(field.type) == "date" else now

    def apply_set(self, record: Any, now: dt.datetime) -> None:
        for name, raw in self.tool.set.items():
            setattr(record, name, self.constant(raw, self.tool.entity, name, now))

    def store_params(self, record: Any, values: dict[str, Any]) -> None:
        for name, param in self.tool.params.items():
            if param.field is not None and (values.get(name) is not None or name not in self.nullable):
                setattr(record, param.field, values.get(name))

    def cascades(self, state: ServiceState, record: Any, now: dt.datetime) -> None:
        for cascade in self.tool.cascade:
            other = self.linked_record(state, record, cascade.via)
            if other is None:
                continue
            target = self.entity.fields[cascade.via].type[4:]
            for name, raw in cascade.set.items():
                setattr(other, name, self.constant(raw, target, name, now))
            other.updated_at = now

    # -- reads -------------------------------------------------------------------------------

    def _declare_list(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool, entity, spec = self.tool, self.entity, self.spec
        words = entity.plural.replace("_", " ")
        tests: list[Callable[[Any, dict[str, Any]], bool]] = []
        for name in tool.filters:
            field = entity.fields.get(name)
            type_name = field.type if field else "date_time"
            self.add(name, type_name, f"Only {words} with this {name.replace('_', ' ')}.", optional=True)
            tests.append(
                _filter(
                    name, "member" if field and field.list else "email" if type_name == "email_address" else "equal"
                )
            )
        if tool.search:
            fields = " or ".join(f"the {f.replace('_', ' ')}" for f in tool.search)
            self.params.append(
                Declared("query", Query | None, False, None, f"Case-insensitive text to find in {fields}.")
            )
            texts = [(f, spec.python_type(self.field_type(f)) == "str") for f in tool.search]
            tests.append(
                lambda r, v: any(
                    contains(getattr(r, f) if plain else str(getattr(r, f)), v["query"]) for f, plain in texts
                )
            )
        self.params.append(Declared("offset", Offset, False, 0, f"Number of {words} to skip."))
        self.params.append(Declared("limit", Limit, False, 20, f"Maximum number of {words} to return."))
        sort = (tool.sort or "id").lstrip("-")
        reverse = (tool.sort or "").startswith("-")
        key: Callable[[Any], Any] = lambda r: (getattr(r, sort), r.id)  # noqa: E731
        if sort in entity.fields and (entity.fields[sort].optional or entity.fields[sort].list):
            zero = {"str": "", "int": 0, "float": 0.0, "bool": False}.get(spec.python_type(self.field_type(sort)))
            if zero is None:
                key = lambda r: (getattr(r, sort) is None, str(getattr(r, sort) or ""), r.id)  # noqa: E731
            else:
                key = lambda r: (getattr(r, sort) is None, getattr(r, sort) or zero, r.id)  # noqa: E731
        self.result = Deferred(lambda: Page[self.model])  # type: ignore[name-defined]

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            rows = [r for r in self.table(state).values() if all(test(r, values) for test in tests)]
            return paginate(sorted(rows, key=key, reverse=reverse), values["offset"], values["limit"])

        return run

    def _declare_get(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        self.add_id()
        return self.target

    def _declare_aggregate(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool, entity = self.tool, self.entity
        words = entity.plural.replace("_", " ")
        for name in tool.filters:
            self.add(name, self.field_type(name), f"Only {words} with this {name.replace('_', ' ')}.", optional=True)
        self.result = Deferred(lambda: list[self.models.rows[tool.name]])  # type: ignore[name-defined]
        group, total = tool.group_by, tool.field
        assert group is not None

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            groups: dict[Any, list[Any]] = {}
            for r in self.table(state).values():
                if all(values[n] is None or getattr(r, n) == values[n] for n in tool.filters):
                    groups.setdefault(getattr(r, group), []).append(r)
            ordered = sorted(groups.items(), key=lambda kv: (kv[0] is None, str(kv[0])))
            out = []
            for key, rows in ordered:
                extra = {f"total_{total}": round(sum(getattr(r, total) or 0 for r in rows), 2)} if total else {}
                out.append(self.models.rows[tool.name](**{group: key, "count": len(rows), **extra}))
            return out

        return run

    # -- writes ------------------------------------------------------------------------------

    def _declare_create(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool, entity = self.tool, self.entity
        given = self.spec.create_fields(tool)
        for name in given:
            self.add_field(name, optional=False)
        self.add_extra()
        self.required_first()
        checked = given + list(tool.params)
        life = entity.lifecycle

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            fetched = self.check_refs(state, values, checked)
            self.check_unique(state, values, given, None)
            self.check_guards(state, values, None, fetched)
            plan = self.plan_effects(state, values, None)
            now = state.tick()
            data: dict[str, Any] = {"id": state.new_id(entity.id_prefix)}
            for name, field in entity.fields.items():
                if name in given:
                    data[name] = (values[name] or []) if field.list else values[name]
                elif life is not None and name == life.field:
                    data[name] = life.initial
                elif name in tool.set:
                    data[name] = self.constant(tool.set[name], tool.entity, name, now)
            record = self.model(**data, created_at=now, updated_at=now)
            self.store_params(record, values)
            self.table(state)[record.id] = record
            self.cascades(state, record, now)
            self.apply_effects(plan, now)
            return record

        return run

    def _declare_update(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        fields = self.tool.fields or []
        self.add_id()
        for name in fields:
            self.add_field(name, optional=True)
        self.add_extra()

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            record = self.target(state, values)
            if all(values.get(n) is None for n in fields):
                raise BadRequest("give at least one of: " + ", ".join(fields))
            self.check_frozen(record, values)
            fetched = self.check_refs(state, values, fields)
            self.check_unique(state, values, fields, values[self.id_param])
            self.check_guards(state, values, record, fetched)
            plan = self.plan_effects(state, values, record)
            now = state.tick()
            for name in fields:
                if values.get(name) is not None:
                    setattr(record, name, values[name])
            return self.finish(state, record, values, now, plan)

        return run

    def finish(self, state: ServiceState, record: Any, values: dict[str, Any], now: dt.datetime,
               plan: list[tuple[Any, str, Any]]) -> Any:  # fmt: skip
        self.store_params(record, values)
        self.apply_set(record, now)
        self.cascades(state, record, now)
        self.apply_effects(plan, now)
        record.updated_at = now
        return record

    def _declare_transition(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool = self.tool
        life = self.entity.lifecycle
        assert life is not None
        self.add_id()
        self.add_extra()
        self.required_first()
        sources = self.spec.sources(tool)

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            record = self.target(state, values)
            self.check_state(record, values, sources, tool.name)
            fetched = self.check_refs(state, values, list(tool.params))
            # a parameter the transition stores into the unique field it is named after (a receipt
            # number) is unique too, as the spec interpreter expects
            self.check_unique(state, values, [n for n, p in tool.params.items() if p.field == n], values[self.id_param])
            self.check_guards(state, values, record, fetched)
            plan = self.plan_effects(state, values, record)
            now = state.tick()
            setattr(record, life.field, tool.to)
            return self.finish(state, record, values, now, plan)

        return run

    def _declare_delete(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool = self.tool
        self.add_id()
        self.add_extra()
        blockers = []
        for blocker in tool.blocked_by:
            other = self.spec.entities[blocker]
            refs = [n for n, f in other.fields.items() if f.type == f"ref:{tool.entity}"]
            blockers.append((blocker, other.plural.replace("_", " "), refs))

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            record = self.target(state, values)
            key = values[self.id_param]
            if tool.when is not None:
                self.check_state(record, values, tool.when, tool.name)
            for blocker, words, refs in blockers:
                if any(getattr(r, n) == key for r in peek_values(self.table(state, blocker)) for n in refs):
                    raise Conflict(f"{self.label} {key!r} still has {words}; it cannot be deleted")
            fetched = self.check_refs(state, values, list(tool.params))
            self.check_guards(state, values, record, fetched)
            plan = self.plan_effects(state, values, record)
            del self.table(state)[key]
            if tool.cascade:
                self.cascades(state, record, state.clock)
            self.apply_effects(plan, state.clock)
            state.tick()
            return record

        return run

    def _declare_adjust(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool = self.tool
        assert tool.field is not None
        name = tool.field
        field = self.entity.fields[name]
        (pname,) = tool.params
        self.add_id()
        self.add_extra()
        integer = self.spec.python_type(field.type) == "int"
        lo, hi = self.spec.value_range(field.type)
        bounds = f"outside [{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            record = self.target(state, values)
            self.check_frozen(record, values)
            current = getattr(record, name)
            current = (current or 0) if field.optional else current
            new_value = current + values[pname] if integer else round(current + values[pname], 6)
            if (lo is not None and new_value < lo) or (hi is not None and new_value > hi):
                raise Conflict(f"{self.label} {values[self.id_param]!r}: {name} would become {new_value}, {bounds}")
            self.check_guards(state, values, record, {})
            plan = self.plan_effects(state, values, record)
            now = state.tick()
            setattr(record, name, new_value)
            return self.finish(state, record, values, now, plan)

        return run

    def _declare_append(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        return self._member(adding=True)

    def _declare_remove(self) -> Callable[[ServiceState, dict[str, Any]], Any]:
        return self._member(adding=False)

    def _member(self, adding: bool) -> Callable[[ServiceState, dict[str, Any]], Any]:
        tool = self.tool
        assert tool.field is not None
        name = tool.field
        (pname,) = tool.params
        self.add_id()
        self.add_extra()
        noun = name.replace("_", " ")

        def run(state: ServiceState, values: dict[str, Any]) -> Any:
            record = self.target(state, values)
            self.check_frozen(record, values)
            item, items, key = values[pname], getattr(record, name), values[self.id_param]
            if adding and item in items:
                raise Conflict(f"{self.label} {key!r} already has {item!r} in {noun}")
            if not adding and item not in items:
                raise NotFound(f"{self.label} {key!r} has no {item!r} in {noun}")
            self.check_guards(state, values, record, {})
            plan = self.plan_effects(state, values, record)
            now = state.tick()
            setattr(record, name, [*items, item] if adding else [v for v in items if v != item])
            self.apply_set(record, now)
            self.cascades(state, record, now)
            self.apply_effects(plan, now)
            record.updated_at = now
            return record

        return run

    # -- metadata ----------------------------------------------------------------------------

    def meta(self) -> ToolMeta:
        """What the tool does, from its spec (see :class:`servers.tooling.ToolMeta`)."""
        tool, entity = self.tool, self.entity
        life = entity.lifecycle.field if entity.lifecycle else None
        guarded = [c.left for g in tool.guards for c in g.when + g.require] + [
            c.right or "" for g in tool.guards for c in g.when + g.require
        ]
        checked = [o.removeprefix("record.") for o in guarded if o.startswith("record.") and "->" not in o]
        reads = [*tool.filters, *tool.search, *checked]
        sets: list[str] = list(tool.set)
        sets += [p.field for p in tool.params.values() if p.field]
        if tool.op == "create":
            sets = [*self.spec.create_fields(tool), *([life] if life else []), *sets]
        elif tool.op == "update":
            sets = [*(tool.fields or []), *sets]
        elif tool.op == "transition" and life:
            sets = [life, *sets]
        elif tool.op in ("adjust", "append", "remove") and tool.field:
            sets = [tool.field, *sets]
        op: Any = tool.op
        return ToolMeta(op=op, entity=tool.entity, collection=entity.plural,
                        reads=tuple(dict.fromkeys(reads)), sets=tuple(dict.fromkeys(sets)))  # fmt: skip


def operations(models: Models) -> list[Operation]:
    return [Operation(models, tool) for tool in models.spec.tools]
