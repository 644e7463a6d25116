"""Verification of a spec-run or contributed service: conformance, spec conformance and generated scenarios.

``verify(spec, service)`` runs

1. the framework's conformance checker (schemas, semantic types, determinism, snapshot round
   trip, read-only reads, atomic errors, 400 on invalid input, 404 on unknown ids, outputs that
   match their schemas — with property-based inputs drawn from the tool schemas);
2. spec conformance: the service exposes exactly the spec's tools, each with the spec's kind and
   the parameters, required set and semantic types the spec implies, and records whose fields
   carry the spec's semantic types; and spec lint (:mod:`servers.construction.lint`): every rule
   backed, every ambiguous field with its role, seeds that keep the stated invariants;
3. the generated scenarios of :mod:`servers.construction.scenarios` for every write tool.

A service passes when all three report nothing; the report names every failing tool and check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from servers.conformance import check_service
from servers.construction.lint import spec_lint
from servers.construction.naming import Names
from servers.construction.scenarios import run_scenarios
from servers.construction.spec import CATALOG_DIR, ServiceSpec, load_spec
from servers.construction.tools import ToolWriter
from servers.framework import Service
from servers.types import resolve_ref, semantic_of

FIXED = {"offset": "page_offset", "limit": "page_limit", "query": "search_query"}


@dataclass
class Check:
    check: str  # conformance:<kind> | spec | scenario
    tool: str | None
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.tool or '-'}: {self.message}"


@dataclass
class Verification:
    service: str
    failures: list[Check] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    calls: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failing_tools(self) -> list[str]:
        return sorted({f.tool for f in self.failures if f.tool})

    def summary(self) -> str:
        head = f"{self.service}: {'verified' if self.ok else 'FAILED'} ({self.calls} calls"
        head += f", {len(self.skipped)} scenario(s) skipped)" if self.skipped else ")"
        return "\n".join([head, *(f"  {f}" for f in self.failures)])

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": self.ok,
            "calls": self.calls,
            "failing_tools": self.failing_tools,
            "failures": [str(f) for f in self.failures],
            "skipped": self.skipped,
        }


def expected_parameters(spec: ServiceSpec, tool_name: str) -> dict[str, tuple[str, bool]]:
    """Parameter → (semantic type, required) that the spec implies for a tool."""
    writer = ToolWriter(spec, Names(spec), spec.tool(tool_name))
    writer.write()
    out = {}
    for param in writer.params:
        semantic = FIXED.get(param.name) if not param.type_name or param.name == "query" else None
        out[param.name] = (semantic or spec.field_type(param.type_name)[1], param.default is None)
    return out


def spec_conformance(spec: ServiceSpec, service: Service[Any]) -> list[Check]:
    problems: list[Check] = []
    wanted = {t.name for t in spec.tools}
    for extra in sorted(set(service.tools) - wanted):
        problems.append(Check("spec", extra, "tool is not in the spec"))
    for tool_spec in spec.tools:
        tool = service.tools.get(tool_spec.name)
        if tool is None:
            problems.append(Check("spec", tool_spec.name, "tool of the spec is missing"))
            continue
        if tool.kind != tool_spec.kind:
            problems.append(Check("spec", tool.name, f"kind is {tool.kind!r}, the spec says {tool_spec.kind!r}"))
        props = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        expected = expected_parameters(spec, tool_spec.name)
        if set(props) != set(expected):
            problems.append(
                Check("spec", tool.name, f"parameters {sorted(props)}, the spec implies {sorted(expected)}")
            )
            continue
        for name, (semantic, must) in expected.items():
            got = semantic_of(resolve_ref(props[name], tool.input_schema.get("$defs", {})))
            if got != semantic:
                problems.append(Check("spec", tool.name, f"parameter {name!r} has type {got!r}, not {semantic!r}"))
            if must != (name in required):
                problems.append(
                    Check("spec", tool.name, f"parameter {name!r} should {'' if must else 'not '}be required")
                )
        if tool_spec.op == "get":
            problems.extend(_record_fields(spec, tool_spec.entity, tool.name, tool.output_schema))
    return problems


def _record_fields(spec: ServiceSpec, entity: str, tool: str, schema: dict[str, Any]) -> list[Check]:
    defs = schema.get("$defs", {})
    data = resolve_ref(schema["properties"]["data"], defs)
    props = data.get("properties", {})
    problems = []
    for name, spec_field in spec.entities[entity].fields.items():
        if name not in props:
            problems.append(Check("spec", tool, f"record field {name!r} of {entity!r} is missing"))
            continue
        got = semantic_of(resolve_ref(props[name], defs))
        want = spec.field_type(spec_field.type)[1]
        if got != want:
            problems.append(Check("spec", tool, f"record field {name!r} has type {got!r}, not {want!r}"))
    return problems


def verify(spec: ServiceSpec, service: Service[Any], *, examples: int = 6, seed: int = 0) -> Verification:
    """Every check of a built service against its spec (see the module docstring)."""
    result = Verification(spec.name)
    conformance = check_service(service, seed=seed, examples=examples)
    result.calls += conformance.calls
    for problem in conformance.problems:
        result.failures.append(Check(f"conformance:{problem.check}", problem.tool, problem.message))
    result.failures.extend(spec_conformance(spec, service))
    result.failures.extend(Check("lint", None, problem) for problem in spec_lint(spec, service))
    try:
        scenarios = run_scenarios(spec, service, seed=seed)
    except Exception as exc:  # a service that cannot even be seeded or restored fails here
        result.failures.append(Check("scenario", None, f"scenarios crashed: {type(exc).__name__}: {exc}"))
        return result
    result.calls += scenarios.calls
    result.failures.extend(Check("scenario", f.tool, f.message) for f in scenarios.failures)
    result.skipped.extend(scenarios.skipped)
    return result


def verify_one(name: str, examples: int = 4) -> tuple[str, bool]:
    """Verify a registered service by name: spec-run and contrib ones against their catalog spec."""
    # Imported here, not at module level, for start-up speed: the registry reads every service's
    # manifest (~0.2 s), which building a spec into a service never needs.
    from servers.registry import get_service

    service = get_service(name)
    spec_path = CATALOG_DIR / f"{name}.json"
    if service.source in ("spec", "contrib") and spec_path.exists():
        result = verify(load_spec(spec_path), service, examples=examples)
        return result.summary(), result.ok
    report = check_service(service, examples=examples)
    return f"{report} (conformance)", report.ok


def verify_named(names: list[str], examples: int = 4, workers: int = 1) -> list[tuple[str, bool]]:
    """``verify_one`` over many services, in ``workers`` processes when more than one."""
    if workers <= 1:
        return [verify_one(n, examples) for n in names]
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(partial(verify_one, examples=examples), names))
