"""Conformance checker: ``check_service(service)`` verifies the framework's contract for one service.

Like Gymnasium's ``check_env``, it is run in one parametrised test over every registered service,
and from the command line: ``python -m servers.conformance [NAME ...]``.

Checks (each problem names the check, the tool and what went wrong):
- ``metadata``: name, version, category, description and at least one tool;
- ``schema``: every input and output schema is a valid JSON Schema of an object;
- ``semantic``: every parameter and every result field (recursively, through nested records)
  carries a semantic type and a description; nested records need a description only;
- ``role``: every record field whose semantic type is ambiguous (money, dates, people,
  organisations: :mod:`servers.roles`) names its business role, unless it is a system field;
- ``determinism``: the same seed gives the same state hash;
- ``snapshot``: snapshot → JSON → restore round-trips to the same hash;
- ``read-only``: read tools never change the state (hypothesis-generated valid inputs, ids and
  other values drawn from the seeded state half of the time);
- ``atomic``: any call that returns an error leaves the state hash unchanged (catches a write that
  mutates before it validates);
- ``invalid-input``: schema-invalid input (missing, unknown or wrongly typed arguments, non-object
  arguments) gets a 400 envelope and leaves the state unchanged;
- ``unknown-id``: a write given an unknown id of its own service's entities returns an error;
- ``envelope``: every result is a valid envelope, and successful data validates against the
  tool's output schema;
- ``plausibility``: a tool that can judge its own results (:class:`JudgesResults`: the world
  model's simulated tools, by :mod:`worldmodel.plausibility`) finds nothing implausible in what it
  answered — to the generated inputs, and to each with the arguments of one semantic type made
  equal (a route from a place to itself, a rate from a currency to itself), where implausible
  answers hide.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from servers.framework import Envelope, Service, Tool
from servers.roles import ROLE_KEY, role_problem
from servers.state import snapshot, stable_hash
from servers.types import resolve_ref, semantic_of
from servers.values import state_values

UNKNOWN_ID = "zz-unknown-0000"
WRONG_TYPED: dict[str, Any] = {
    "string": 12345,
    "integer": "not-a-number",
    "number": "NaN-text",
    "boolean": "maybe",
    "array": {"not": "a list"},
    "object": ["not", "an", "object"],
}


@runtime_checkable
class JudgesResults(Protocol):
    """A tool that can tell what is implausible in a result of its own (an empty list: nothing)."""

    def implausible(self, state: Any, arguments: dict[str, Any], data: Any) -> list[str]: ...


@dataclass(frozen=True)
class Problem:
    check: str
    tool: str | None
    message: str

    def __str__(self) -> str:
        where = f" [{self.tool}]" if self.tool else ""
        return f"{self.check}{where}: {self.message}"


@dataclass
class Report:
    service: str
    problems: list[Problem] = field(default_factory=list)
    calls: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        head = f"{self.service}: {'OK' if self.ok else f'{len(self.problems)} problem(s)'} ({self.calls} calls)"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


# ---------------------------------------------------------------------------------------------
# Schema walking


def _branches(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    schema = resolve_ref(schema, defs)
    if "anyOf" in schema:
        return [b for s in schema["anyOf"] for b in _branches(s, defs) if b.get("type") != "null"]
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return _branches(schema["items"], defs)
    return [schema]


def _is_record(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and "properties" in schema


def _described(schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    """A description on the property, its referenced model, its items or its non-null branch."""
    schema = resolve_ref(schema, defs) | {k: v for k, v in schema.items() if k != "$ref"}
    if schema.get("description"):
        return True
    if isinstance(schema.get("items"), dict) and _described(schema["items"], defs):
        return True
    return any(_described(b, defs) for b in schema.get("anyOf", []) if b.get("type") != "null")


def untyped_fields(schema: dict[str, Any], defs: dict[str, Any], path: str, seen: set[str] | None = None) -> list[str]:
    """Paths of properties that lack a semantic type or a description (recursing into records)."""
    seen = set() if seen is None else seen
    missing: list[str] = []
    for branch in _branches(schema, defs):
        if not _is_record(branch):
            continue
        title = str(branch.get("title", ""))
        if title and title in seen:
            continue
        seen.add(title)
        for name, prop in branch["properties"].items():
            where = f"{path}.{name}" if path else name
            nested = [b for b in _branches(prop, defs) if _is_record(b)]
            if not _described(prop, defs):
                missing.append(f"{where} (no description)")
            if nested:
                missing.extend(untyped_fields(prop, defs, where, seen))
            elif semantic_of(prop) is None:
                missing.append(f"{where} (no semantic type)")
    return missing


# ---------------------------------------------------------------------------------------------
# Input generation


def valid_inputs(tool: Tool, values: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    base = from_schema(tool.input_schema, allow_x00=False)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        args: dict[str, Any] = dict(cast(dict[str, Any], draw(base)))
        for name, prop in props.items():
            kind = semantic_of(prop)
            if kind in values and draw(st.booleans()):
                value = draw(st.sampled_from(values[kind]))
                is_list = resolve_ref(prop, tool.input_schema.get("$defs", {})).get("type") == "array"
                args[name] = [value] if is_list else value
        return args

    return build()


def same_typed(tool: Tool, args: dict[str, Any]) -> dict[str, Any] | None:
    """``args`` with every scalar argument given the value of the first earlier one of its semantic
    type (``destination`` = ``origin``), or None when no two arguments share one."""
    first: dict[str, str] = {}
    out = dict(args)
    for name, prop in tool.input_schema.get("properties", {}).items():
        kind = semantic_of(prop)
        if name not in args or kind is None or isinstance(args[name], dict | list):
            continue
        if kind in first:
            out[name] = args[first[kind]]
        else:
            first[kind] = name
    return out if out != args else None


def _mutations(tool: Tool, args: dict[str, Any]) -> list[tuple[str, Any]]:
    """Schema-invalid variants of a valid argument object, each with a label."""
    schema = tool.input_schema
    variants: list[tuple[str, Any]] = [("non-object arguments", ["not", "an", "object"])]
    variants.append(("unknown argument", {**args, "zz_unexpected": 1}))
    for name in schema.get("required", []):
        variants.append((f"missing {name!r}", {k: v for k, v in args.items() if k != name}))
    for name, prop in schema.get("properties", {}).items():
        types = {b.get("type") for b in [resolve_ref(prop, schema.get("$defs", {})), *prop.get("anyOf", [])]}
        types.discard(None)
        if types and "null" not in types and len(types) == 1:
            wrong = WRONG_TYPED.get(str(next(iter(types))))
            if wrong is not None:
                variants.append((f"wrongly typed {name!r}", {**args, name: wrong}))
    return variants


# ---------------------------------------------------------------------------------------------
# The checker


def _run_examples(test: Callable[[Any], None], examples: int, strategy: st.SearchStrategy[Any]) -> None:
    wrapped = settings(
        max_examples=examples,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(test))
    wrapped()


def schema_error(schema: Any) -> str | None:
    """Why ``schema`` is no valid JSON Schema (draft 2020-12), or None.

    The meta-schema checks each of ``$defs`` as a schema of its own, so each is checked apart,
    once per distinct text: a service's records recur in the output schemas of most of its
    tools, and checking the same definitions again was a quarter of a built service's
    verification time.
    """
    defs = schema.get("$defs") if isinstance(schema, dict) else None
    if not isinstance(defs, dict):
        return _checked(json.dumps(schema, sort_keys=True))
    for name, definition in defs.items():
        found = _checked(json.dumps(definition, sort_keys=True))
        if found is not None:
            return f"$defs/{name}: {found}"
    return _checked(json.dumps({k: v for k, v in schema.items() if k != "$defs"}, sort_keys=True))


@functools.lru_cache(maxsize=8192)
def _checked(text: str) -> str | None:
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(text))
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def missing_roles(service: Service[Any]) -> list[Problem]:
    """Record fields of a type that needs a business role (:mod:`servers.roles`) declaring none or
    an unknown one; fields the service declares as ``system_fields`` are system stamps."""
    schema = service.state_type.model_json_schema()
    problems = []
    for model_name, model in sorted(schema.get("$defs", {}).items()):
        for name, prop in model.get("properties", {}).items():
            if name in service.system_fields:
                continue
            bad = role_problem(semantic_of(prop), prop.get(ROLE_KEY))
            if bad:
                problems.append(Problem("role", None, f"{model_name}.{name}: {bad}"))
    return problems


def check_service(service: Service[Any], *, seed: int = 0, examples: int = 12) -> Report:
    """Check ``service`` against the framework's contract; returns a report of every problem."""
    report = Report(service.name)
    add = report.problems.append

    for attr in ("category", "description"):
        if not getattr(service, attr):
            add(Problem("metadata", None, f"missing {attr}"))
    if service.version < 1:
        add(Problem("metadata", None, f"version must be >= 1, got {service.version}"))
    if not service.tools:
        add(Problem("metadata", None, "no tools"))
    report.problems.extend(missing_roles(service))

    for tool in service.tools.values():
        for label, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            invalid = schema_error(schema)
            if invalid is not None:
                add(Problem("schema", tool.name, f"{label} schema is invalid: {invalid}"))
            if schema.get("type") != "object":
                add(Problem("schema", tool.name, f"{label} schema is not an object"))
        for where in untyped_fields(tool.input_schema, tool.input_schema.get("$defs", {}), ""):
            add(Problem("semantic", tool.name, f"parameter {where}"))
        data = tool.output_schema["properties"]["data"]
        for where in untyped_fields(data, tool.output_schema.get("$defs", {}), "data"):
            add(Problem("semantic", tool.name, f"result field {where}"))

    try:
        first, second = service.seed_state(seed), service.seed_state(seed)
    except Exception as exc:
        add(Problem("determinism", None, f"seed({seed}) raised {type(exc).__name__}: {exc}"))
        return report
    base_hash = service.state_hash(first)
    if base_hash != service.state_hash(second):
        add(Problem("determinism", None, f"seed({seed}) gave two different state hashes"))
    base = snapshot(first)
    restored = service.restore(json.loads(json.dumps(base)))
    if service.state_hash(restored) != base_hash:
        add(Problem("snapshot", None, "snapshot → JSON → restore changed the state hash"))
    values = state_values(service, first)

    for tool in service.tools.values():
        _check_tool(service, tool, base, base_hash, values, examples, report)
    return report


def _check_tool(
    service: Service[Any],
    tool: Tool,
    base: dict[str, Any],
    base_hash: str,
    values: dict[str, list[Any]],
    examples: int,
    report: Report,
) -> None:
    reported: set[str] = set()
    validator = jsonschema.Draft202012Validator(tool.output_schema)

    def flag(check: str, message: str) -> None:
        if check not in reported:  # the first counter-example per check and tool is enough
            reported.add(check)
            report.problems.append(Problem(check, tool.name, message))

    def run(args: Any) -> tuple[Envelope, bool]:
        state = service.restore(base)
        envelope = service.call(state, tool.name, args)
        report.calls += 1
        changed = stable_hash(snapshot(state)) != base_hash
        errors = sorted(validator.iter_errors(envelope), key=str)
        if not isinstance(envelope.get("success"), bool) or errors:
            detail = errors[0].message if errors else "no boolean 'success'"
            flag("envelope", f"args {args!r}: result does not match the output schema: {detail}")
        if envelope.get("success") is True and isinstance(tool, JudgesResults) and isinstance(args, dict):
            wrong = tool.implausible(state, args, envelope.get("data"))
            if wrong:
                flag("plausibility", f"{tool.name}({args!r}) answered implausibly: {'; '.join(wrong)}")
        return envelope, changed

    def example(args: dict[str, Any]) -> None:
        variants = [args]
        if isinstance(tool, JudgesResults) and (degenerate := same_typed(tool, args)) is not None:
            variants.append(degenerate)
        for variant in variants:
            envelope, changed = run(variant)
            if changed and tool.kind == "read":
                flag("read-only", f"read tool changed the state with args {variant!r}")
            if changed and not envelope.get("success"):
                flag("atomic", f"error {envelope.get('error')} but the state changed, args {variant!r}")
        if tool.kind != "write":
            return
        for label, bad in _mutations(tool, args):
            envelope, changed = run(bad)
            body = envelope.get("error")  # checked, not trusted: the service under test may answer anything
            code = body.get("code") if isinstance(body, dict) and not envelope.get("success") else None
            if code != 400 or changed:
                flag("invalid-input", f"{label}: expected a 400 envelope and no change, got {envelope!r}")
        own = [
            n
            for n, p in tool.input_schema.get("properties", {}).items()
            if (semantic_of(p) or "").startswith(f"{service.name}.") and (semantic_of(p) or "").endswith("_id")
        ]
        if own:
            unknown = {**args, **{n: UNKNOWN_ID for n in own}}
            for name in own:
                if resolve_ref(tool.input_schema["properties"][name], {}).get("type") == "array":
                    unknown[name] = [UNKNOWN_ID]
            envelope, changed = run(unknown)
            if envelope.get("success") or changed:
                flag(
                    "unknown-id",
                    f"unknown id(s) for {own}: expected an error and no change, got {envelope!r}",
                )

    try:
        _run_examples(example, examples, valid_inputs(tool, values))
    except Exception as exc:  # a strategy that cannot be built is itself a schema problem
        report.problems.append(Problem("schema", tool.name, f"cannot generate inputs: {type(exc).__name__}: {exc}"))


def main(argv: list[str] | None = None) -> int:
    # Imported here, not at module level, for start-up speed: only this command line needs the
    # registry of every service (~0.2 s); the checks themselves take the service they are given.
    from servers.registry import all_services, get_service

    names = (argv if argv is not None else sys.argv[1:]) or list(all_services())
    failed = 0
    for name in names:
        report = check_service(get_service(name))
        print(report)
        failed += not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
