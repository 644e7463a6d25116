"""Tool bodies of built services: one typed function per spec tool, every check before any change."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from servers.construction.naming import Names, lit, wrap_doc
from servers.construction.spec import SYSTEM_FIELDS, Condition, ServiceSpec, ToolSpec

ERRORS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 409: "Conflict"}
NEGATE = {
    "is": "is not",
    "is not": "is",
    "==": "!=",
    "!=": "==",
    "<": ">=",
    "<=": ">",
    ">": "<=",
    ">=": "<",
    "in": "not in",
    "not in": "in",
}
RECORD_OPS = ("get", "update", "transition", "delete", "adjust", "append", "remove")


@dataclass
class Param:
    name: str
    annotation: str
    description: str
    default: str | None = None  # None: required
    type_name: str = ""
    nullable: bool = False


@dataclass
class Body:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)


def _msg(prefix: str, text: str) -> str:
    """``f"<prefix>" "<text>"`` with the text split so no line gets too long."""
    return f"f{prefix!r} {lit(text)}" if prefix else lit(text)


def _raise(body: Body, code: int, prefix: str, text: str, depth: int = 2) -> None:
    body.add(f"raise {ERRORS[code]}({_msg(prefix, text)})", depth)


class ToolWriter:
    def __init__(self, spec: ServiceSpec, names: Names, tool: ToolSpec) -> None:
        self.spec, self.names, self.tool = spec, names, tool
        self.entity = spec.entities[tool.entity]
        self.cls = names.cls[tool.entity]
        self.params: list[Param] = []
        self.body = Body()
        self.fetched: dict[str, str] = {}  # operand head → variable holding the referenced record
        self.id_param = f"{tool.entity}_id"
        self.label = tool.entity.replace("_", " ")

    # -- parameters --------------------------------------------------------------------------

    def _desc(self, type_name: str, explicit: str | None) -> str:
        return explicit or self.spec.type_description(type_name)

    def add_param(self, name: str, type_name: str, description: str, *, optional: bool, listed: bool = False,
                  default: Any = None) -> None:  # fmt: skip
        base = self.names.type_of(type_name)
        annotation = f"list[{base}]" if listed else base
        if optional or default is not None:
            text_default = "None" if default is None else repr(default)
            if default is None:
                annotation += " | None"
            self.params.append(Param(name, annotation, description, text_default, type_name, default is None))
        else:
            self.params.append(Param(name, annotation, description, None, type_name, False))

    def field_param(self, name: str, optional: bool) -> None:
        spec_field = self.entity.fields[name]
        self.add_param(
            name,
            spec_field.type,
            self._desc(spec_field.type, spec_field.description),
            optional=optional or spec_field.optional or spec_field.list,
            listed=spec_field.list,
            default=None if optional else spec_field.default,
        )

    def id_param_add(self) -> None:
        self.add_param(self.id_param, f"ref:{self.tool.entity}", f"Id of the {self.label}.", optional=False)

    # -- operands and guards -----------------------------------------------------------------

    def _param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def _ref_var(self, head: str) -> str:
        """Variable holding the record a ref param or ``record.<ref field>`` points to."""
        if head not in self.fetched:
            stem = head.removeprefix("record.").removesuffix("_id")
            self.fetched[head] = f"{stem}_linked" if head.startswith("record.") else f"{stem}_record"
        return self.fetched[head]

    def operand(self, text: str) -> tuple[str, list[str]]:
        """Python expression of a guard operand, and the expressions that may be None before it."""
        if text == "now":
            return "state.clock", []
        head, _, follow = text.partition("->")
        if head.startswith("record."):
            name = head.removeprefix("record.")
            spec_field = self.entity.fields.get(name)
            value, nullable = f"record.{name}", bool(spec_field and spec_field.optional)
            ref_type = spec_field.type if spec_field else ""
        else:
            param = self._param(head)
            value, nullable, ref_type = head, param.nullable, param.type_name
        if not follow:
            return value, [value] if nullable else []
        var = self._ref_var(head)
        # a ref param is fetched with require() (never None once given); a record's link may dangle
        maybe = [var] if head.startswith("record.") or nullable else []
        target = self.spec.entities[ref_type[4:]]
        if follow in target.fields and target.fields[follow].optional:
            maybe.append(f"{var}.{follow}")
        return f"{var}.{follow}", maybe

    def _is_date(self, text: str) -> bool:
        """Whether a guard operand holds a date (not a moment)."""
        head, _, follow = text.partition("->")
        if head.startswith("record."):
            spec_field = self.entity.fields.get(head.removeprefix("record."))
            type_name = spec_field.type if spec_field else ""
        else:
            type_name = self._param(head).type_name
        if follow:
            target = self.spec.entities[type_name[4:]].fields.get(follow)
            type_name = target.type if target else ""
        return bool(type_name) and self.spec.python_type(type_name) == "date"

    def condition(self, cond: Condition, in_require: bool) -> tuple[str, str]:
        """The condition as Python, and its negation."""
        left, left_null = self.operand(cond.left)
        if cond.op in ("present", "absent"):
            parts = [*[v for v in left_null if v != left], left]
            present = " and ".join(f"{v} is not None" for v in parts)
            missing = " or ".join(f"{v} is None" for v in parts)
            present, missing = (f"({present})", f"({missing})") if len(parts) > 1 else (present, missing)
            return (present, missing) if cond.op == "present" else (missing, present)
        if cond.right is not None:
            right, right_null = self.operand(cond.right)
        else:
            right, right_null = (repr(tuple(cond.value)) if cond.op in ("in", "not_in") else repr(cond.value)), []
        # a date compared with `now` is compared with today's date (as the engine does)
        if cond.left == "now" and cond.right is not None and self._is_date(cond.right):
            left = "state.clock.date()"
        if cond.right == "now" and self._is_date(cond.left):
            right = "state.clock.date()"
        op = {"in": "in", "not_in": "not in"}.get(cond.op, cond.op)
        if isinstance(cond.value, bool) and cond.right is None and op in ("==", "!="):
            op = "is" if op == "==" else "is not"
        test, negated = f"{left} {op} {right}", f"{left} {NEGATE[op]} {right}"
        nullable = list(dict.fromkeys(left_null + right_null))
        if not nullable:
            return test, negated
        # a comparison with a missing value neither triggers `when` nor fails `require`
        missing = " or ".join(f"{v} is None" for v in nullable)
        present = " and ".join(f"{v} is not None" for v in nullable)
        if in_require:
            return f"({missing} or {test})", f"({present} and {negated})"
        return f"({present} and {test})", f"({missing} or {negated})"

    def guards(self) -> None:
        prefix = f"{self.label} {{{self.id_param}!r}}: " if self.tool.op in RECORD_OPS else ""
        for guard in self.tool.guards:
            when = [self.condition(c, False)[0] for c in guard.when]
            broken = [self.condition(c, True)[1] for c in guard.require]
            failed = broken[0] if len(broken) == 1 else f"({' or '.join(broken)})"
            self.body.add(f"if {' and '.join([*when, failed])}:")
            self.names.framework_used.add(ERRORS[guard.code])
            _raise(self.body, guard.code, prefix, guard.message)

    def fetch_refs(self, names: list[str]) -> None:
        """404 for unknown ids given in ref params (and keep the record when a guard reads it)."""
        used = {c.left.partition("->")[0] for g in self.tool.guards for c in g.when + g.require if "->" in c.left}
        used |= {
            (c.right or "").partition("->")[0]
            for g in self.tool.guards
            for c in g.when + g.require
            if "->" in (c.right or "")
        }
        for name in names:
            param = self._param(name)
            target = param.type_name[4:]
            if not param.type_name.startswith("ref:") or "list[" in param.annotation:
                continue
            plural = self.spec.entities[target].plural
            label = target.replace("_", " ")
            self.names.framework_used.add("require")
            call = f"require(state.{plural}, {name}, {label!r})"
            if name in used:
                var = self._ref_var(name)
                call = f"{call} if {name} is not None else None" if param.nullable else call
                self.body.add(f"{var} = {call}")
            elif param.nullable:
                self.body.add(f"if {name} is not None:")
                self.body.add(call, 2)
            else:
                self.body.add(call)

    def fetch_linked(self) -> None:
        """Records that ``record.<ref field>`` points to, for guards and cascades."""
        heads = {c.left.partition("->")[0] for g in self.tool.guards for c in g.when + g.require if "->" in c.left}
        heads |= {(c.right or "").partition("->")[0] for g in self.tool.guards for c in g.when + g.require
                  if "->" in (c.right or "")}  # fmt: skip
        heads |= {f"record.{c.via}" for c in self.tool.cascade}
        for head in sorted(h for h in heads if h.startswith("record.")):
            name = head.removeprefix("record.")
            target = self.spec.entities[self.entity.fields[name].type[4:]].plural
            key = f"record.{name}"
            getter = f"state.{target}.get({key})"
            if self.entity.fields[name].optional:
                getter = f"{getter} if {key} is not None else None"
            self.body.add(f"{self._ref_var(head)} = {getter}")

    def unique_checks(self, given: list[str], exclude_self: bool) -> None:
        for name in given:
            spec_field = self.entity.fields.get(name)
            if spec_field is None or not spec_field.unique:
                continue
            other = f" and r.id != {self.id_param}" if exclude_self else ""
            test = f"any(r.{name} == {name}{other} for r in state.{self.entity.plural}.values())"
            nullable = self._param(name).nullable
            self.body.add(f"if {name} is not None and {test}:" if nullable else f"if {test}:")
            self.names.framework_used.add("Conflict")
            self.body.add(f"raise Conflict(f{f'a {self.label} with {name} {{{name}!r}} already exists'!r})", 2)

    def state_check(self, allowed: list[str], verb: str) -> None:
        life = self.entity.lifecycle
        if life is None or set(allowed) >= set(self.spec.states(self.tool.entity)):
            return
        self.names.framework_used.add("Conflict")
        self.body.add(f"if record.{life.field} not in {tuple(allowed)!r}:")
        prefix = f"{self.label} {{{self.id_param}!r}} is {{record.{life.field}!r}}; "
        self.body.add(f"raise Conflict({_msg(prefix, f'{verb} needs one of {allowed}')})", 2)

    def frozen_check(self) -> None:
        life = self.entity.lifecycle
        if life is None or not self.tool.frozen:
            return
        self.names.framework_used.add("Conflict")
        self.body.add(f"if record.{life.field} in {tuple(self.tool.frozen)!r}:")
        message = f"{self.label} {{{self.id_param}!r}} is {{record.{life.field}!r}} and cannot be changed"
        self.body.add(f"raise Conflict(f{message!r})", 2)

    # -- mutations ---------------------------------------------------------------------------

    def value(self, raw: Any, entity: str | None = None, name: str = "") -> str:
        """A ``set`` value as Python: ``"$now"`` is the clock (its date for a date field)."""
        if raw != "$now":
            return repr(raw)
        spec_field = self.spec.entities[entity or self.tool.entity].fields.get(name)
        return "now.date()" if spec_field and self.spec.python_type(spec_field.type) == "date" else "now"

    def apply_set(self, target: str) -> None:
        for name, raw in self.tool.set.items():
            self.body.add(f"{target}.{name} = {self.value(raw, None, name)}")

    def effect_checks(self) -> None:
        """Each effect's new values, computed and range-checked before the first change."""
        creating = self.tool.op == "create"
        for i, effect in enumerate(self.tool.effects):
            if effect.via.startswith("record."):
                via = effect.via.removeprefix("record.")
                key, ref_type = (via if creating else f"record.{via}"), self.entity.fields[via].type
            else:
                key, ref_type = effect.via, self._param(effect.via).type_name
            target = self.spec.entities[ref_type[4:]]
            var = f"effect_{i}_record"
            self.body.add(f"{var} = state.{target.plural}.get({key}) if {key} is not None else None")
            for name, operand in effect.add.items():
                if isinstance(operand, str):
                    field = operand.removeprefix("record.")
                    amount = field if (creating or not operand.startswith("record.")) else f"record.{field}"
                else:
                    amount = repr(operand)
                new = f"effect_{i}_{name}"
                integer = self.spec.python_type(target.fields[name].type) == "int"
                total = f"({var}.{name} or 0) + {amount}"
                self.body.add(f"{new} = None")
                self.body.add(f"if {var} is not None and {amount} is not None:")
                self.body.add(f"{new} = {total}" if integer else f"{new} = round({total}, 6)", 2)
                lo, hi = self.spec.value_range(target.fields[name].type)
                checks = ([f"{new} < {lo!r}"] if lo is not None else []) + (
                    [f"{new} > {hi!r}"] if hi is not None else []
                )
                if checks:
                    self.names.framework_used.add("Conflict")
                    label = ref_type[4:].replace("_", " ")
                    bounds = f"outside [{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"
                    message = f"{effect.id}: {label} {{{key}!r}} {name} would become {{{new}}}, {bounds}"
                    self.body.add(f"if {' or '.join(checks)}:", 2)
                    self.body.add(f"raise Conflict(f{message!r})", 3)

    def apply_effects(self) -> None:
        for i, effect in enumerate(self.tool.effects):
            for name in effect.add:
                self.body.add(f"if effect_{i}_{name} is not None:")
                self.body.add(f"effect_{i}_record.{name} = effect_{i}_{name}", 2)
                self.body.add(f"effect_{i}_record.updated_at = now", 2)

    def cascades(self) -> None:
        self.apply_effects()
        for cascade in self.tool.cascade:
            var = self._ref_var(f"record.{cascade.via}")
            self.body.add(f"if {var} is not None:")
            target = self.entity.fields[cascade.via].type[4:]
            for name, raw in cascade.set.items():
                self.body.add(f"{var}.{name} = {self.value(raw, target, name)}", 2)
            self.body.add(f"{var}.updated_at = now", 2)

    def store_params(self) -> None:
        for name, param in self.tool.params.items():
            if param.field is None:
                continue
            if self._param(name).nullable:
                self.body.add(f"if {name} is not None:")
                self.body.add(f"record.{param.field} = {name}", 2)
            else:
                self.body.add(f"record.{param.field} = {name}")

    def extra_params(self) -> None:
        for name, param in self.tool.params.items():
            self.add_param(name, param.type, param.description, optional=param.optional, listed=param.list,
                           default=param.default)  # fmt: skip

    # -- per operation -----------------------------------------------------------------------

    def op_list(self) -> str:
        tool, entity = self.tool, self.entity
        conds = []
        for name in tool.filters:
            spec_field = entity.fields.get(name)
            type_name = spec_field.type if spec_field else "date_time"
            label = f"Only {entity.plural.replace('_', ' ')} with this {name.replace('_', ' ')}."
            self.add_param(name, type_name, label, optional=True)
            if spec_field and spec_field.list:
                conds.append(f"({name} is None or {name} in r.{name})")
            elif type_name == "email_address":
                conds.append(f"({name} is None or (r.{name} or '').lower() == {name}.lower())")
            else:
                conds.append(f"({name} is None or r.{name} == {name})")
        if tool.search:
            self.names.framework_used.add("contains")
            fields = " or ".join(f"the {f.replace('_', ' ')}" for f in tool.search)
            self.params.append(Param("query", "Query | None", f"Case-insensitive text to find in {fields}.", "None",
                                     "search_query", True))  # fmt: skip
            values = ", ".join(f"r.{f}" if self.spec.python_type(self._ftype(f)) == "str" else f"str(r.{f})"
                               for f in tool.search)  # fmt: skip
            conds.append(f"any(contains(v, query) for v in ({values},))")
        self.params.append(Param("offset", "Offset", f"Number of {entity.plural.replace('_', ' ')} to skip.", "0"))
        self.params.append(
            Param("limit", "Limit", f"Maximum number of {entity.plural.replace('_', ' ')} to return.", "20")
        )
        self.names.framework_used.add("paginate")
        where = " and ".join(conds) or "True"
        self.body.add(f"rows = [r for r in state.{entity.plural}.values() if {where}]")
        sort = (tool.sort or "id").lstrip("-")
        reverse = ", reverse=True" if (tool.sort or "").startswith("-") else ""
        key = f"r.{sort}"
        if sort in entity.fields and (entity.fields[sort].optional or entity.fields[sort].list):
            zero = {"str": "''", "int": "0", "float": "0.0", "bool": "False"}.get(
                self.spec.python_type(self._ftype(sort))
            )
            key = f"r.{sort} is None, str(r.{sort} or '')" if zero is None else f"r.{sort} is None, r.{sort} or {zero}"
        self.body.add(f"return paginate(sorted(rows, key=lambda r: ({key}, r.id){reverse}), offset, limit)")
        return f"Page[{self.cls}]"

    def _ftype(self, name: str) -> str:
        return self.entity.fields[name].type if name in self.entity.fields else "date_time"

    def op_get(self) -> str:
        self.id_param_add()
        self.names.framework_used.add("require")
        self.body.add(f"return require(state.{self.entity.plural}, {self.id_param}, {self.label!r})")
        return self.cls

    def op_aggregate(self) -> str:
        tool, entity = self.tool, self.entity
        row = self.names.row[tool.name]
        for name in tool.filters:
            self.add_param(name, self._ftype(name), f"Only {entity.plural.replace('_', ' ')} with this "
                           f"{name.replace('_', ' ')}.", optional=True)  # fmt: skip
        conds = " and ".join(f"({n} is None or r.{n} == {n})" for n in tool.filters) or "True"
        group = tool.group_by
        self.body.add("groups: dict[Any, list[Any]] = {}")
        self.body.add(f"for r in state.{entity.plural}.values():")
        self.body.add(f"if {conds}:" if tool.filters else "if True:", 2)
        self.body.add(f"groups.setdefault(r.{group}, []).append(r)", 3)
        total = ""
        if tool.field:
            total = f", total_{tool.field}=round(sum(r.{tool.field} or 0 for r in rows), 2)"
        self.body.add("ordered = sorted(groups.items(), key=lambda kv: (kv[0] is None, str(kv[0])))")
        self.body.add(f"return [{row}({group}=key, count=len(rows){total}) for key, rows in ordered]")
        return f"list[{row}]"

    def op_create(self) -> str:
        tool, entity = self.tool, self.entity
        given = self.spec.create_fields(tool)
        for name in given:
            self.field_param(name, optional=False)
        self.extra_params()
        self.params.sort(key=lambda p: p.default is not None)
        self.fetch_refs(given + list(tool.params))
        self.unique_checks(given, exclude_self=False)
        self.guards()
        self.effect_checks()
        self.body.add("now = state.tick()")
        life = entity.lifecycle
        values = [f"id=state.new_id({entity.id_prefix!r})"]
        for name, spec_field in entity.fields.items():
            if name in given:
                values.append(f"{name}={name} or []" if spec_field.list else f"{name}={name}")
            elif life is not None and name == life.field:
                values.append(f"{name}={life.initial!r}")
            elif name in tool.set:
                values.append(f"{name}={self.value(tool.set[name], None, name)}")
        values += [f"{name}=now" for name in SYSTEM_FIELDS]
        self.body.add(f"record = {self.cls}({', '.join(values)})")
        self.store_params()
        self.body.add(f"state.{entity.plural}[record.id] = record")
        for cascade in tool.cascade:  # the record a new one points to may change with it
            target = self.spec.entities[entity.fields[cascade.via].type[4:]].plural
            getter = f"state.{target}.get(record.{cascade.via})"
            if entity.fields[cascade.via].optional:
                getter = f"{getter} if record.{cascade.via} is not None else None"
            self.body.add(f"{self._ref_var(f'record.{cascade.via}')} = {getter}")
        self.cascades()
        self.body.add("return record")
        return self.cls

    def _target(self) -> None:
        self.names.framework_used.add("require")
        self.body.add(f"record = require(state.{self.entity.plural}, {self.id_param}, {self.label!r})")

    def op_update(self) -> str:
        fields = self.tool.fields or []
        self.id_param_add()
        for name in fields:
            self.field_param(name, optional=True)
        self.extra_params()
        self._target()
        self.names.framework_used.add("BadRequest")
        self.body.add(f"if all(v is None for v in ({', '.join(fields)},)):")
        self.body.add(f"raise BadRequest({lit('give at least one of: ' + ', '.join(fields))})", 2)
        self.frozen_check()
        self.fetch_refs(fields)
        self.fetch_linked()
        self.unique_checks(fields, exclude_self=True)
        self.guards()
        self.effect_checks()
        self.body.add("now = state.tick()")
        for name in fields:
            self.body.add(f"if {name} is not None:")
            self.body.add(f"record.{name} = {name}", 2)
        self.store_params()
        self.apply_set("record")
        self.cascades()
        self.body.add("record.updated_at = now")
        self.body.add("return record")
        return self.cls

    def op_transition(self) -> str:
        tool = self.tool
        life = self.entity.lifecycle
        assert life is not None
        self.id_param_add()
        self.extra_params()
        self.params.sort(key=lambda p: p.default is not None)
        self._target()
        self.state_check(self.spec.sources(tool), tool.name)
        self.fetch_refs(list(tool.params))
        self.fetch_linked()
        self.unique_checks([n for n, p in tool.params.items() if p.field == n], exclude_self=True)
        self.guards()
        self.effect_checks()
        self.body.add("now = state.tick()")
        self.body.add(f"record.{life.field} = {tool.to!r}")
        self.store_params()
        self.apply_set("record")
        self.cascades()
        self.body.add("record.updated_at = now")
        self.body.add("return record")
        return self.cls

    def op_delete(self) -> str:
        tool = self.tool
        self.id_param_add()
        self.extra_params()
        self._target()
        if tool.when is not None:
            self.state_check(tool.when, tool.name)
        for blocker in tool.blocked_by:
            other = self.spec.entities[blocker]
            refs = [n for n, f in other.fields.items() if f.type == f"ref:{tool.entity}"]
            test = " or ".join(f"r.{n} == {self.id_param}" for n in refs)
            self.names.framework_used.add("Conflict")
            self.body.add(f"if any({test} for r in state.{other.plural}.values()):")
            message = (
                f"{self.label} {{{self.id_param}!r}} still has {other.plural.replace('_', ' ')}; it cannot be deleted"
            )
            self.body.add(f"raise Conflict(f{message!r})", 2)
        self.fetch_refs(list(tool.params))
        self.fetch_linked()
        self.guards()
        self.effect_checks()
        self.body.add(f"del state.{self.entity.plural}[{self.id_param}]")
        self.cascades_on_delete()
        self.body.add("state.tick()")
        self.body.add("return record")
        return self.cls

    def cascades_on_delete(self) -> None:
        if self.tool.cascade or self.tool.effects:
            self.body.add("now = state.clock")
            self.cascades()

    def op_adjust(self) -> str:
        tool = self.tool
        assert tool.field is not None
        spec_field = self.entity.fields[tool.field]
        (pname,) = tool.params
        self.id_param_add()
        self.extra_params()
        self._target()
        self.frozen_check()
        python = self.spec.python_type(spec_field.type)
        current = f"(record.{tool.field} or 0)" if spec_field.optional else f"record.{tool.field}"
        total = f"{current} + {pname}" if python == "int" else f"round({current} + {pname}, 6)"
        self.body.add(f"new_value = {total}")
        lo, hi = self.spec.value_range(spec_field.type)
        checks = ([f"new_value < {lo!r}"] if lo is not None else []) + (
            [f"new_value > {hi!r}"] if hi is not None else []
        )
        if checks:
            self.names.framework_used.add("Conflict")
            self.body.add(f"if {' or '.join(checks)}:")
            prefix = f"{self.label} {{{self.id_param}!r}}: {tool.field} would become {{new_value}}, "
            bounds = f"outside [{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"
            self.body.add(f"raise Conflict({_msg(prefix, bounds)})", 2)
        self.fetch_linked()
        self.guards()
        self.effect_checks()
        self.body.add("now = state.tick()")
        self.body.add(f"record.{tool.field} = new_value")
        self.store_params()
        self.apply_set("record")
        self.cascades()
        self.body.add("record.updated_at = now")
        self.body.add("return record")
        return self.cls

    def op_member(self, adding: bool) -> str:
        tool = self.tool
        assert tool.field is not None
        (pname,) = tool.params
        self.id_param_add()
        self.extra_params()
        self._target()
        self.frozen_check()
        noun = tool.field.replace("_", " ")
        if adding:
            self.names.framework_used.add("Conflict")
            self.body.add(f"if {pname} in record.{tool.field}:")
            self.body.add(
                f"raise Conflict(f{f'{self.label} {{{self.id_param}!r}} already has {{{pname}!r}} in {noun}'!r})", 2
            )
        else:
            self.names.framework_used.add("NotFound")
            self.body.add(f"if {pname} not in record.{tool.field}:")
            self.body.add(
                f"raise NotFound(f{f'{self.label} {{{self.id_param}!r}} has no {{{pname}!r}} in {noun}'!r})", 2
            )
        self.fetch_linked()
        self.guards()
        self.effect_checks()
        self.body.add("now = state.tick()")
        if adding:
            self.body.add(f"record.{tool.field} = [*record.{tool.field}, {pname}]")
        else:
            self.body.add(f"record.{tool.field} = [v for v in record.{tool.field} if v != {pname}]")
        self.apply_set("record")
        self.cascades()
        self.body.add("record.updated_at = now")
        self.body.add("return record")
        return self.cls

    # -- assembly ----------------------------------------------------------------------------

    def write(self) -> str:
        op = self.tool.op
        returns = {
            "list": self.op_list,
            "get": self.op_get,
            "aggregate": self.op_aggregate,
            "create": self.op_create,
            "update": self.op_update,
            "transition": self.op_transition,
            "delete": self.op_delete,
            "adjust": self.op_adjust,
            "append": lambda: self.op_member(True),
            "remove": lambda: self.op_member(False),
        }[op]()
        params = [f"state: {self.names.state}"]
        for p in self.params:
            params.append(f"{p.name}: {p.annotation}" + ("" if p.default is None else f" = {p.default}"))
        doc = [wrap_doc(self.tool.description, 4).lstrip()]
        if self.params:
            doc += ["", "    Args:"]
            for p in self.params:
                doc.append(wrap_doc(f"{p.name}: {p.description}", 8))
        docstring = '    """' + "\n".join(doc) + ("\n    " if len(doc) > 1 else "") + '"""'
        decorator = "@service.read" if self.tool.kind == "read" else "@service.write"
        return "\n".join(
            [decorator, f"def {self.tool.name}({', '.join(params)}) -> {returns}:", docstring, *self.body.lines]
        )


def tool_code(spec: ServiceSpec, names: Names, tool: ToolSpec) -> str:
    """The source of one tool function."""
    return ToolWriter(spec, names, tool).write()


def literal(value: Any) -> str:
    return json.dumps(value)
