"""Generated scenarios: every write tool of a built service checked against its spec.

For each write tool the scenario builder draws argument sets from the seeded world (records in
every lifecycle state, values of the right semantic type, boundary values of guard thresholds,
unknown ids, missing optional values), predicts from the **spec alone** what must happen (which
rules fail, hence which error codes are acceptable; or which fields of which records change) and
compares with what the implementation does through its envelope boundary:

- success exactly when the spec allows the call, and an error code the spec names otherwise;
- after an error, the state is unchanged;
- after a success, the record reads back (through the entity's ``get`` tool) with the values the
  spec implies (create → read back; update/transition/adjust/append/remove → read back; delete →
  404 on read back), and no other record changed except a ``cascade`` target.

The prediction is an interpreter of the spec, written independently of the code generator, so a
template bug or a broken LLM-written implementation shows up as a disagreement.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from servers.construction.spec import Condition, ServiceSpec, ToolSpec
from servers.framework import Service
from servers.state import snapshot

UNKNOWN = "zz_unknown_0000"
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EXAMPLES: dict[str, list[Any]] = {
    "email_address": ["new.person@example.com"],
    "person_name": ["Robin Example"],
    "phone_number": ["+14155550100"],
    "company_name": ["Example Industries"],
    "city": ["Springfield"],
    "country_code": ["US"],
    "currency_code": ["USD", "EUR"],
    "money_amount": [0.0, 150.0, 2500.0, 12000.0],
    "percentage": [0.0, 50.0, 100.0],
    "quantity": [1, 10, 250],
    "count": [0, 3],
    "rating": [1, 5],
    "duration_minutes": [30, 90],
    "duration_hours": [0.5, 4.0, 12.0],
    "duration_days": [1.0, 5.0],
    "date_time": ["2026-12-01T09:00:00Z", "2027-01-15T14:30:00Z"],
    "date": ["2026-12-01", "2027-01-15"],
    "flag": [True, False],
    "tag": ["urgent", "review"],
    "title": ["Scenario check"],
    "note": ["Checked by the scenario."],
    "document_text": ["Body written by the scenario."],
    "message_text": ["Hello from the scenario."],
    "reference_code": ["REF-12345"],
    "url": ["https://example.com/page"],
    "web_domain": ["example.com"],
    "job_title": ["Analyst"],
    "department": ["Finance"],
    "product_sku": ["SKU-100"],
    "product_name": ["Laptop Stand"],
    "street_address": ["1 Main Street"],
    "location": ["Room 4"],
    "username": ["robin.example"],
    "time_zone": ["Europe/Berlin"],
    "file_name": ["report.pdf"],
    "mime_type": ["application/pdf"],
    "priority": ["low", "urgent"],
}


@dataclass
class Failure:
    tool: str
    message: str

    def __str__(self) -> str:
        return f"{self.tool}: {self.message}"


@dataclass
class ScenarioReport:
    service: str
    calls: int = 0
    failures: list[Failure] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < 1e-6
    if isinstance(a, str) and isinstance(b, str) and a != b:
        try:
            return dt.datetime.fromisoformat(a) == dt.datetime.fromisoformat(b)
        except ValueError:
            return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _order(a: Any, b: Any) -> tuple[Any, Any]:
    """Comparable forms of two operands (ISO date strings as datetimes; a day and a moment as two
    days, as the engine compares them)."""
    if isinstance(a, str) and isinstance(b, str):
        try:
            x, y = dt.datetime.fromisoformat(a), dt.datetime.fromisoformat(b)
        except ValueError:
            return a, b
        return (x.date(), y.date()) if DAY.match(a) or DAY.match(b) else (x, y)
    return a, b


def holds(op: str, left: Any, right: Any) -> bool | None:
    """A condition's truth, or None when a compared value is missing."""
    if op == "present":
        return left is not None
    if op == "absent":
        return left is None
    if left is None or right is None:
        return None
    if op == "in":
        return any(_same(left, r) for r in right)
    if op == "not_in":
        return not any(_same(left, r) for r in right)
    if op == "==":
        return _same(left, right)
    if op == "!=":
        return not _same(left, right)
    a, b = _order(left, right)
    try:
        return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])
    except TypeError:
        return None


class Added(NamedTuple):
    """What an effect adds: ``amount`` to ``field`` (of type ``type``) of record ``key`` in ``plural``."""

    plural: str
    key: Any
    field: str
    type: str
    before: Any
    amount: Any


class Interpreter:
    """Predicts a write's outcome from the spec and a JSON snapshot of the state."""

    def __init__(self, spec: ServiceSpec) -> None:
        self.spec = spec

    def params(self, tool: ToolSpec) -> dict[str, str]:
        """Parameter → type, from the spec."""
        entity = self.spec.entities[tool.entity]
        out: dict[str, str] = {}
        if tool.op != "create":
            out[f"{tool.entity}_id"] = f"ref:{tool.entity}"
        names = self.spec.create_fields(tool) if tool.op == "create" else tool.fields or []
        out |= {n: entity.fields[n].type for n in names}
        return out | {n: p.type for n, p in tool.params.items()}

    def _operand(self, tool: ToolSpec, text: str, args: dict[str, Any], state: dict[str, Any],
                 record: dict[str, Any] | None) -> Any:  # fmt: skip
        if text == "now":
            return state["clock"]
        head, _, follow = text.partition("->")
        if head.startswith("record."):
            name = head.removeprefix("record.")
            value = (record or {}).get(name)
            ref_type = self.spec.entities[tool.entity].fields[name].type if name in self.spec.entities[
                tool.entity].fields else ""  # fmt: skip
        else:
            value = args.get(head, self._default(tool, head))
            ref_type = self.params(tool).get(head, "")
        if not follow:
            return value
        target = self.spec.entities[ref_type[4:]].plural
        linked = state[target].get(value) if value is not None else None
        return None if linked is None else linked.get(follow)

    def _default(self, tool: ToolSpec, name: str) -> Any:
        """The value a param takes when it is not given (a create field's default counts)."""
        if name in tool.params:
            return tool.params[name].default
        spec_field = self.spec.entities[tool.entity].fields.get(name)
        return spec_field.default if tool.op == "create" and spec_field is not None else None

    def _fails(self, tool: ToolSpec, cond: Condition, args: dict[str, Any], state: dict[str, Any],
               record: dict[str, Any] | None) -> bool | None:  # fmt: skip
        left = self._operand(tool, cond.left, args, state, record)
        right = self._operand(tool, cond.right, args, state, record) if cond.right else cond.value
        return holds(cond.op, left, right)

    def effects(self, tool: ToolSpec, args: dict[str, Any], state: dict[str, Any],
                record: dict[str, Any] | None) -> list[Added]:  # fmt: skip
        """What every effect of the call adds, to which record of ``state``."""
        entity = self.spec.entities[tool.entity]
        source = record if record is not None else args
        out: list[Added] = []
        for effect in tool.effects:
            if effect.via.startswith("record."):
                via = effect.via.removeprefix("record.")
                key, ref_type = source.get(via), entity.fields[via].type
            else:
                key, ref_type = args.get(effect.via), self.params(tool).get(effect.via, "")
            target = self.spec.entities[ref_type[4:]]
            linked = state[target.plural].get(key) if key is not None else None
            for name, operand in effect.add.items() if linked is not None else []:
                amount: Any = operand
                if isinstance(operand, str):
                    amount = source.get(operand[7:]) if operand.startswith("record.") else args.get(operand)
                if amount is not None:
                    before = linked.get(name)  # type: ignore[union-attr]
                    out.append(Added(target.plural, key, name, target.fields[name].type, before, amount))
        return out

    def violations(self, tool: ToolSpec, args: dict[str, Any], state: dict[str, Any]) -> set[int]:
        """The error codes the spec gives for this call (empty: it must succeed)."""
        spec, entity = self.spec, self.spec.entities[tool.entity]
        codes: set[int] = set()
        records = state[entity.plural]
        record = None
        if tool.op != "create":
            record = records.get(args[f"{tool.entity}_id"])
            if record is None:
                return {404}
        life = entity.lifecycle
        status = record.get(life.field) if record and life else None
        if tool.op == "update" and all(args.get(n) is None for n in tool.fields or []):
            codes.add(400)
        if tool.op in ("update", "adjust", "append", "remove") and status in tool.frozen:
            codes.add(409)
        if tool.op == "transition" and status not in spec.sources(tool):
            codes.add(409)
        if tool.op == "delete" and tool.when is not None and status not in tool.when:
            codes.add(409)
        for name, type_name in self.params(tool).items():
            value = args.get(name)
            is_ref = type_name.startswith("ref:") and value is not None and not isinstance(value, list)
            is_target = name == f"{tool.entity}_id" and tool.op != "create"
            if is_ref and not is_target and value not in state[spec.entities[type_name[4:]].plural]:
                codes.add(404)
        for name in self.params(tool):
            spec_field = entity.fields.get(name)
            if spec_field is not None and spec_field.unique and args.get(name) is not None:
                own = args.get(f"{tool.entity}_id")
                if any(_same(r.get(name), args[name]) and r["id"] != own for r in records.values()):
                    codes.add(409)
        for blocker in tool.blocked_by if tool.op == "delete" else []:
            other = spec.entities[blocker]
            refs = [n for n, f in other.fields.items() if f.type == f"ref:{tool.entity}"]
            if any(r.get(n) == record["id"] for r in state[other.plural].values() for n in refs):  # type: ignore[index]
                codes.add(409)
        if tool.op == "adjust" and record is not None and tool.field:
            (pname,) = tool.params
            new = (record.get(tool.field) or 0) + args[pname]
            lo, hi = spec.value_range(entity.fields[tool.field].type)
            if (lo is not None and new < lo - 1e-9) or (hi is not None and new > hi + 1e-9):
                codes.add(409)
        if tool.op in ("append", "remove") and record is not None and tool.field:
            (pname,) = tool.params
            present = any(_same(v, args[pname]) for v in record.get(tool.field) or [])
            if tool.op == "append" and present:
                codes.add(409)
            if tool.op == "remove" and not present:
                codes.add(404)
        for added in self.effects(tool, args, state, record):
            lo, hi = spec.value_range(added.type)
            new = (added.before or 0) + added.amount  # an effect that would push a field out of its range: 409
            if (lo is not None and new < lo - 1e-9) or (hi is not None and new > hi + 1e-9):
                codes.add(409)
        for guard in tool.guards:
            when = all(self._fails(tool, c, args, state, record) is True for c in guard.when)
            ok = all(self._fails(tool, c, args, state, record) is not False for c in guard.require)
            if when and not ok:
                codes.add(guard.code)
        return codes

    def expected(self, tool: ToolSpec, args: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
        """Field values the written record must read back with (for create: every given field)."""
        entity = self.spec.entities[tool.entity]
        out: dict[str, Any] = {}
        if tool.op == "create":
            for name in self.spec.create_fields(tool):
                value = args.get(name)
                out[name] = value if value is not None or not entity.fields[name].list else []
            if entity.lifecycle:
                out[entity.lifecycle.field] = entity.lifecycle.initial
        if tool.op == "update":
            out |= {n: args[n] for n in tool.fields or [] if args.get(n) is not None}
        if tool.op == "transition" and entity.lifecycle:
            out[entity.lifecycle.field] = tool.to
        record = before[entity.plural].get(args.get(f"{tool.entity}_id", ""), {})
        if tool.op == "adjust" and tool.field:
            (pname,) = tool.params
            out[tool.field] = (record.get(tool.field) or 0) + args[pname]
        if tool.op in ("append", "remove") and tool.field:
            (pname,) = tool.params
            items = list(record.get(tool.field) or [])
            out[tool.field] = [*items, args[pname]] if tool.op == "append" else [v for v in items if v != args[pname]]
        for name, param in tool.params.items():
            if param.field and args.get(name) is not None:
                out[param.field] = args[name]
        out |= {k: v for k, v in tool.set.items() if v != "$now"}
        return out


# ---------------------------------------------------------------------------------------------
# Argument sets and the run


_MISSING = object()


def _plus(value: Any, step: float) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value + step if isinstance(value, float) or isinstance(step, float) else value + int(step)


class Scenarios:
    """Draws argument sets for each write tool and checks the implementation against the spec."""

    def __init__(self, spec: ServiceSpec, service: Service[Any], seed: int = 0, per_tool: int = 16) -> None:
        self.spec, self.service, self.per_tool = spec, service, per_tool
        self.interp = Interpreter(spec)
        self.base = snapshot(service.seed_state(seed))
        self.rng = random.Random(f"scenarios:{spec.name}:{seed}")
        self.pools = self._pools()
        self.fresh = 0

    def _pools(self) -> dict[str, list[Any]]:
        pools: dict[str, list[Any]] = {}
        for name, entity in self.spec.entities.items():
            pools.setdefault(f"ref:{name}", []).extend(sorted(self.base.get(entity.plural, {})))
            for fname, spec_field in entity.fields.items():
                for record in self.base.get(entity.plural, {}).values():
                    value = record.get(fname)
                    for item in value if isinstance(value, list) else [value]:
                        if item is not None:
                            pools.setdefault(spec_field.type, []).append(item)
        for key, local in self.spec.types.items():
            extra: list[Any] = list(local.enum or [])
            if local.type in ("integer", "number") and local.minimum is not None and local.maximum is not None:
                lo, hi = local.minimum, local.maximum
                extra += [lo, hi, (lo + hi) / 2] if local.type == "number" else [int(lo), int(hi), int((lo + hi) // 2)]
            pools.setdefault(f"{self.spec.name}.{key}", []).extend(extra)
        for type_name, examples in EXAMPLES.items():
            pools.setdefault(type_name, []).extend(examples)
        for tool in self.spec.tools:  # threshold values and their neighbours
            for guard in tool.guards:
                for cond in guard.when + guard.require:
                    kind = self.interp.params(tool).get(cond.left) if tool.kind == "write" else None
                    if kind and isinstance(cond.value, int | float) and not isinstance(cond.value, bool):
                        pools.setdefault(kind, []).extend([cond.value, cond.value + 1, max(cond.value - 1, 0)])
        return {k: sorted({repr(v): v for v in vs}.values(), key=repr) for k, vs in pools.items()}

    def _value(self, type_name: str, listed: bool) -> Any:
        pool = self.pools.get(type_name) or []
        if not pool:
            return None
        value = self.rng.choice(pool)
        if self.spec.python_type(type_name) == "float" and isinstance(value, int):
            value = float(value)
        return [value] if listed else value

    def _unique_value(self, type_name: str) -> Any:
        self.fresh += 1
        pool = self.pools.get(type_name) or []
        if type_name == "email_address":
            return f"scenario{self.fresh}@example.com"
        if self.spec.python_type(type_name) in ("int", "float") and pool:
            return max(pool) + self.fresh if isinstance(max(pool), int | float) else None
        seeds = [f.seed for e in self.spec.entities.values() for f in e.fields.values() if f.type == type_name]
        patterns = [s.removeprefix("pattern:") for s in seeds if s and s.startswith("pattern:")]
        if patterns:
            # Imported here, not at module level, for start-up speed: seeding needs the population
            # (faker, ~0.1 s), and few scenarios draw a fresh value from a pattern.
            from servers.construction.seeding import pattern

            return pattern(self.rng, patterns[0])
        return f"{self.rng.choice(pool)} {self.fresh}" if pool and isinstance(pool[0], str) else None

    def _args(self, tool: ToolSpec) -> list[dict[str, Any]]:
        """Candidate argument sets: every lifecycle state, unknown ids, optional values on and off."""
        entity = self.spec.entities[tool.entity]
        records = list(self.base[entity.plural].values())
        targets: list[str] = []
        if tool.op != "create":
            life = entity.lifecycle
            by_state: dict[Any, list[str]] = {}
            for r in records:
                by_state.setdefault(r.get(life.field) if life else None, []).append(r["id"])
            targets = [self.rng.choice(sorted(ids)) for _, ids in sorted(by_state.items(), key=repr)]
            targets += [UNKNOWN]
            while len(targets) < self.per_tool and records:
                targets.append(self.rng.choice(records)["id"])
        out: list[dict[str, Any]] = []
        for i in range(max(self.per_tool, len(targets))):
            args: dict[str, Any] = {}
            if targets:
                args[f"{tool.entity}_id"] = targets[i % len(targets)]
            for name, type_name in self.interp.params(tool).items():
                if name == f"{tool.entity}_id" and tool.op != "create":
                    continue
                spec_field = entity.fields.get(name) if tool.op in ("create", "update") else None
                param = tool.params.get(name)
                optional = tool.op == "update" or bool(
                    (spec_field and (spec_field.optional or spec_field.list or spec_field.default is not None))
                    or (param and (param.optional or param.default is not None))
                )
                if optional and self.rng.random() < 0.4:
                    continue
                listed = bool((spec_field and spec_field.list) or (param and param.list))
                if spec_field is not None and spec_field.unique and self.rng.random() < 0.7:
                    value = self._unique_value(type_name)
                else:
                    value = self._value(type_name, listed)
                if value is not None:
                    args[name] = value
            out.append(args)
        return out + [v for base in out[:4] for g in tool.guards for v in self._against(tool, g, base)]

    def _against(self, tool: ToolSpec, guard: Any, base: dict[str, Any]) -> list[dict[str, Any]]:
        """Variants of ``base`` that make the guard's ``when`` true and break its ``require``, one by one."""
        params = self.interp.params(tool)
        args = dict(base)
        for cond in guard.when:
            if not self._force(args, params, cond, True):
                return []
        variants = []
        for cond in guard.require:
            variant = dict(args)
            if self._force(variant, params, cond, False):
                variants.append(variant)
        return variants

    def _force(self, args: dict[str, Any], params: dict[str, str], cond: Condition, truth: bool) -> bool:
        """Set the param of a ``param <op> literal`` condition so the condition has ``truth``."""
        if cond.left not in params or cond.right is not None or "->" in cond.left:
            return cond.left == "now" or cond.left.startswith("record.")  # decided by the target record
        name, op, value = cond.left, cond.op, cond.value
        if op in ("present", "absent"):
            if (op == "present") == truth:
                drawn = self._value(params[name], False)
                if drawn is None:
                    return False
                args[name] = drawn
            else:
                args.pop(name, None)
            return True
        step = 1 if self.spec.python_type(params[name]) == "int" else 0.5
        first = value[0] if isinstance(value, list) and value else None
        wanted = {
            ("==", True): value, ("!=", False): value, ("in", True): first,
            ("not_in", False): first, (">", True): _plus(value, step), ("<=", False): _plus(value, step),
            (">=", True): value, ("<", False): value, ("<", True): _plus(value, -step),
            (">=", False): _plus(value, -step), ("<=", True): value, (">", False): value,
        }.get((op, truth), _MISSING)  # fmt: skip
        if wanted is _MISSING:  # != true / == false / not_in true / in false: any other pool value
            others = [
                v
                for v in self.pools.get(params[name], [])
                if not _same(v, value) and not (isinstance(value, list) and v in value)
            ]
            if not others:
                return False
            wanted = self.rng.choice(others)
        if wanted is None:
            return False
        args[name] = wanted
        return True

    def run(self) -> ScenarioReport:
        report = ScenarioReport(self.spec.name)
        for tool in self.spec.tools:
            if tool.kind != "write":
                continue
            if tool.name not in self.service.tools:
                report.failures.append(Failure(tool.name, "the spec's tool is missing from the service"))
                continue
            tried = 0
            for args in self._args(tool):
                if isinstance(self.service.tools[tool.name].validate(args), str):
                    continue  # schema-invalid: the conformance checker covers 400s
                tried += 1
                problem = self._check(tool, args)
                report.calls += 1
                if problem:
                    report.failures.append(Failure(tool.name, problem))
                    break
            if not tried:
                report.skipped.append(f"{tool.name}: no schema-valid arguments could be drawn")
        return report

    def _check(self, tool: ToolSpec, args: dict[str, Any]) -> str | None:
        state = self.service.restore(self.base)
        before = snapshot(state)
        codes = self.interp.violations(tool, args, before)
        envelope = self.service.call(state, tool.name, args)
        after = snapshot(state)
        if not envelope["success"]:
            code = envelope["error"]["code"]
            if after != before:
                return f"args {args!r}: error {code} but the state changed"
            if not codes:
                return f"args {args!r}: the spec allows this call but it failed: {envelope.get('error')}"
            if code not in codes:
                return f"args {args!r}: expected an error in {sorted(codes)}, got {envelope.get('error')}"
            return None
        if codes:
            return f"args {args!r}: the spec forbids this call ({sorted(codes)}) but it succeeded"
        return self._read_back(tool, args, before, after, envelope["data"])

    def _read_back(self, tool: ToolSpec, args: dict[str, Any], before: dict[str, Any], after: dict[str, Any],
                   data: Any) -> str | None:  # fmt: skip
        entity = self.spec.entities[tool.entity]
        record_id = args.get(f"{tool.entity}_id") if tool.op != "create" else (data or {}).get("id")
        get = next(t.name for t in self.spec.tools if t.entity == tool.entity and t.op == "get")
        state = self.service.restore(after)
        read = self.service.call(state, get, {f"{tool.entity}_id": record_id})
        if tool.op == "delete":
            if read["success"] or read["error"]["code"] != 404:
                return f"args {args!r}: deleted record {record_id!r} still reads back: {read!r}"
        else:
            if not read["success"]:
                return f"args {args!r}: record {record_id!r} does not read back: {read['error']}"
            expected = self.interp.expected(tool, args, before)
            if tool.op == "create":
                for name, spec_field in entity.fields.items():
                    given = name in expected and args.get(name) is None and name not in tool.set
                    if given and spec_field.default is not None:
                        expected[name] = spec_field.default
            for name, value in expected.items():
                if not _same(read["data"].get(name), value):
                    return f"args {args!r}: {name} reads back {read['data'].get(name)!r}, expected {value!r}"
        allowed = {(entity.plural, record_id)}
        for cascade in tool.cascade:
            target_id = before[entity.plural].get(record_id, {}).get(cascade.via) or args.get(cascade.via)
            target = self.spec.entities[entity.fields[cascade.via].type[4:]]
            allowed.add((target.plural, target_id))
            linked = after[target.plural].get(target_id) if target_id else None
            for name, value in cascade.set.items():
                if linked is not None and value != "$now" and not _same(linked.get(name), value):
                    return f"args {args!r}: cascade left {target.plural} {target_id!r} {name}={linked.get(name)!r}"
        record = before[entity.plural].get(record_id)
        for added in self.interp.effects(tool, args, before, record):
            allowed.add((added.plural, added.key))  # the records an effect changes, by what it adds
            expected_value, got = (added.before or 0) + added.amount, after[added.plural][added.key].get(added.field)
            if not _same(got, expected_value):
                return (f"args {args!r}: effect on {added.plural} {added.key!r} left {added.field}={got!r}, "
                        f"expected {expected_value!r}")  # fmt: skip
        for other in self.spec.entities.values():
            old, new = before[other.plural], after[other.plural]
            for rid in set(old) | set(new):
                if (other.plural, rid) not in allowed and old.get(rid) != new.get(rid):
                    return f"args {args!r}: {other.plural} {rid!r} changed but the tool should not touch it"
        return None


def run_scenarios(spec: ServiceSpec, service: Service[Any], seed: int = 0, per_tool: int = 16) -> ScenarioReport:
    """Check every write tool of ``service`` against ``spec`` (see the module docstring)."""
    return Scenarios(spec, service, seed, per_tool).run()
