"""Eject: write a spec as a hand-editable Python service package.

A catalog service runs from its spec (:mod:`servers.engine`); when a service needs behaviour the
spec format cannot express, ``compoworld services eject NAME --to DIR`` starts its Python version
from here. ``compile_spec(spec)`` returns the package's files: ``models.py`` (semantic types,
records, state and seed) and ``__init__.py`` plus ``tools*.py`` (the service and one typed
function per tool, every rule checked before the first mutation), written in the style of the
hand-written services. The ejected code behaves as the engine does — same schemas, same seeded
state hashes, same envelopes for the same calls (tests/servers/test_engine.py checks it) — and is
the reference the ``llm`` construction backend's code is compared with in tests. The tool bodies
come from ``servers.construction.tools``; this module writes the models and the seed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from servers.construction.naming import Names, lit, wrap_doc
from servers.construction.seeding import field_seed, seed_order
from servers.construction.spec import (
    AUTO_FIELDS,
    SYSTEM_FIELDS,
    EntitySpec,
    FieldSpec,
    ServiceSpec,
    ToolSpec,
    rule_text,
)
from servers.construction.tools import tool_code
from servers.roles import ROLE_KEY, SYSTEM

HEADER = "# Ejected by `compoworld services eject` from servers/catalog/{name}.json; edit freely.\n"


def compile_spec(spec: ServiceSpec, formatted: bool = True, source: str = "hand-written") -> dict[str, str]:
    """File name → source text of the package, formatted with ruff when it is installed; the
    service declares ``source`` (``hand-written`` once ejected, ``contrib`` for the llm backend's)."""
    files = {"models.py": _models(spec, Names(spec), source), **_package_files(spec)}
    return {name: format_source(text) for name, text in files.items()} if formatted else files


def format_source(text: str) -> str:
    """Drop unused imports, sort them and ``ruff format`` (unchanged when ruff is not installed)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        return text
    for args in (["check", "--fix", "--select", "F401,I", "--quiet"], ["format"]):
        done = subprocess.run(
            [ruff, *args, "--line-length", "120", "--stdin-filename", "built.py", "-"],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        text = done.stdout if done.stdout else text
    return text


# ---------------------------------------------------------------------------------------------
# models.py


def _type_alias(spec: ServiceSpec, names: Names, key: str) -> str:
    local = spec.types[key]
    base = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}[local.type]
    if local.enum:
        base = f"Literal[{', '.join(json.dumps(v) for v in local.enum)}]"
    extras = []
    for attr, kw in (("minimum", "ge"), ("maximum", "le"), ("min_length", "min_length"), ("max_length", "max_length")):
        value = getattr(local, attr)
        if value is not None:
            number = int(value) if local.type == "integer" or float(value).is_integer() else value
            extras.append(f"{kw}={number!r}")
    if local.pattern:
        extras.append(f"pattern={local.pattern!r}")
    args = ", ".join([lit(f"{spec.name}.{key}"), lit(local.description), *extras])
    return f"{names.local[key]} = Annotated[{base}, sem({args})]"


def field_annotation(spec: ServiceSpec, names: Names, field: FieldSpec) -> str:
    base = names.type_of(field.type)
    if field.list:
        return f"list[{base}]"
    return f"{base} | None" if field.optional else base


def _field_line(spec: ServiceSpec, names: Names, name: str, field: FieldSpec) -> str:
    annotation = field_annotation(spec, names, field)
    options = []
    if field.list:
        options.append("default_factory=list")
    elif field.optional:
        options.append("default=None")
    elif field.default is not None:
        options.append(f"default={field.default!r}")
    description = field.description or (spec.type_description(field.type, plural=True) if field.list else None)
    if description:
        options.append(f"description={lit(description)}")
    if field.role:
        options.append(f"json_schema_extra={{{ROLE_KEY!r}: {field.role!r}}}")
    if not options:
        return f"    {name}: {annotation}"
    if options == [f"default={field.default!r}"]:
        return f"    {name}: {annotation} = {field.default!r}"
    return f"    {name}: {annotation} = Field({', '.join(options)})"


def _record(spec: ServiceSpec, names: Names, entity_name: str, entity: EntitySpec) -> str:
    doc = wrap_doc(entity.description, 4).lstrip()
    lines = [f"class {names.cls[entity_name]}(Record):", f'    """{doc}"""', ""]
    lines.append(f"    id: {names.id_alias[entity_name]}")
    lines += [_field_line(spec, names, n, f) for n, f in entity.fields.items()]
    lines += [f"    {name}: Annotated[DateTime, role({SYSTEM!r})]" for name in SYSTEM_FIELDS]
    return "\n".join(lines)


def seed_expression(spec: ServiceSpec, entity_name: str, name: str, field: FieldSpec) -> str:
    """Python expression drawing one seeded value of a field (``values`` holds earlier fields)."""
    lifecycle = spec.entities[entity_name].lifecycle
    if field.seed_by_state and lifecycle is not None:
        expr = seed_expression(spec, entity_name, name, field.model_copy(update={"seed_by_state": None}))
        for value, seed in reversed(list(field.seed_by_state.items())):
            alternative = field.model_copy(update={"seed": seed, "seed_by_state": None})
            drawn = seed_expression(spec, entity_name, name, alternative)
            expr = f"({drawn}) if values[{lifecycle.field!r}] == {value!r} else ({expr})"
        return expr
    python = spec.python_type(field.type)
    kind, _, arg = field_seed(spec, field).partition(":")
    if kind == "from":
        ref, attr = arg.split(".")
        parent = spec.entities[spec.entities[entity_name].fields[ref].type[4:]].plural
        return f"copied(state.{parent}, values[{ref!r}], {attr!r})"
    if kind in ("person", "employee", "contact"):
        slot, attr = arg.split(".")
        expr = f"person_attr(slots.person({slot!r}, {kind!r}), {attr!r})"
    elif kind == "company":
        slot, attr = arg.split(".")
        expr = f"company_attr(slots.company({slot!r}), {attr!r})"
    elif kind == "product":
        slot, attr = arg.split(".")
        expr = f"product_attr(slots.product({slot!r}), {attr!r})"
    elif kind == "choice":
        options = arg.split("|") if arg else spec.enum_of(field.type) or []
        expr = f"rng.choice({tuple(options)!r})"
    elif kind in ("int", "number"):
        lo, hi = (float(v) for v in arg.split(".."))
        expr = f"rng.randint({int(lo)}, {int(hi)})" if python == "int" else f"number(rng, {lo:g}, {hi:g})"
    elif kind in ("past", "future"):
        lo, hi = (float(v) for v in arg.split(".."))
        lo, hi = (-hi, -lo) if kind == "past" else (lo, hi)
        expr = f"days_from(world.now, rng, {lo:g}, {hi:g})"
        if python == "date":
            expr += ".date()"
    elif kind == "pattern":
        expr = f"pattern(rng, {arg!r})"
    elif kind == "text":
        expr = f"text(rng, {lit(arg)}, values)"
    elif kind == "bool":
        expr = f"rng.random() < {float(arg or 0.5)!r}"
    elif kind == "const":
        expr = repr(json.loads(arg))
    elif kind == "ref":
        target = spec.entities[field.type[4:]].plural
        expr = f"rng.choice(sorted(state.{target}))"
    else:  # none
        return "None"
    if python == "float" and kind in ("int", "product"):
        expr = f"float({expr})"
    if python == "int" and kind == "product":
        expr = f"int({expr})"
    if field.list:
        expr = f"sorted({{{expr} for _ in range(rng.randint(0, 2))}})"
    elif field.optional and field.seed_null > 0:
        expr = f"None if rng.random() < {field.seed_null!r} else {expr}"
    return expr


def _seed_function(spec: ServiceSpec, names: Names) -> str:
    lines = [
        "def seed(rng: random.Random, world: Population) -> " + names.state + ":",
        f'    """The initial {spec.name} data of a world, drawn from its shared population."""',
        f"    state = {names.state}(clock=world.now)",
    ]
    for entity in spec.entities.values():
        lines.append(f"    _seed_{entity.plural}(rng, world, state)")
    lines.append("    return state")
    functions = ["\n".join(lines)]
    for entity_name, entity in spec.entities.items():
        functions.append(_seed_entity(spec, names, entity_name, entity))
    return "\n\n\n".join(functions)


def _seed_entity(spec: ServiceSpec, names: Names, entity_name: str, entity: EntitySpec) -> str:
    cls = names.cls[entity_name]
    unique = [n for n, f in entity.fields.items() if f.unique]
    ordered = [(n, entity.fields[n]) for n in seed_order(entity.fields)]
    body = [
        f"def _seed_{entity.plural}(rng: random.Random, world: Population, state: {names.state}) -> None:",
        "    def draw() -> dict[str, Any]:",
        "        slots = Slots(rng, world)",
        "        values: dict[str, Any] = {}",
    ]
    draws = [f"        values[{n!r}] = {seed_expression(spec, entity_name, n, f)}" for n, f in ordered]
    if not any("slots." in line for line in draws):
        body.remove("        slots = Slots(rng, world)")
    body += draws
    body.append("        return values")
    body.append("")
    if unique:
        body.append("    taken: set[tuple[str, Any]] = set()")
    body.append(f"    for _ in range({entity.seed.count}):")
    body.append("        values = draw()")
    if unique:
        body.append(f"        keys = {{(k, values[k]) for k in {tuple(unique)!r} if values[k] is not None}}")
        body.append("        if keys & taken:  # a unique value drawn twice: skip the record")
        body.append("            continue")
        body.append("        taken |= keys")
    body.append("        created, updated = stamps(rng, world.now)")
    body.append(
        f"        record = {cls}(id=state.new_id({entity.id_prefix!r}), "
        "created_at=created, updated_at=updated, **values)"
    )
    body.append(f"        state.{entity.plural}[record.id] = record")
    if entity.seed.duplicates:
        body.append(
            f"    for original in rng.sample(sorted(state.{entity.plural}.values(), key=lambda r: r.id), "
            f"min({entity.seed.duplicates}, len(state.{entity.plural}))):"
        )
        body.append("        # a stale near-duplicate: same data, entered weeks earlier")
        body.append("        values = original.model_dump(exclude={" + ", ".join(repr(a) for a in AUTO_FIELDS) + "})")
        if unique:
            body.append("        fresh = draw()")
            body.append(f"        values |= {{k: fresh[k] for k in {tuple(unique)!r}}}")
            body.append(f"        keys = {{(k, values[k]) for k in {tuple(unique)!r} if values[k] is not None}}")
            body.append("        if keys & taken:")
            body.append("            continue")
            body.append("        taken |= keys")
        body.append("        created = original.created_at - dt.timedelta(days=rng.randint(20, 90))")
        body.append(
            f"        copy = {cls}(id=state.new_id({entity.id_prefix!r}), "
            "created_at=created, updated_at=created, **values)"
        )
        body.append(f"        state.{entity.plural}[copy.id] = copy")
    return "\n".join(body)


def _models(spec: ServiceSpec, names: Names, source: str) -> str:
    doc = f'"""Models and seed of the built {spec.name} service (see the package docstring)."""'
    imports = [
        "from __future__ import annotations",
        "",
        "import datetime as dt",
        "import random",
        "from typing import Annotated, Any, Literal",
        "",
        "from pydantic import Field",
        "",
        "from servers.construction.seeding import (",
        "    Slots, company_attr, copied, days_from, number, pattern, person_attr, product_attr, stamps, text,",
        ")",
        "from servers.framework import Record, Service, ServiceState",
        "from servers.population import Population",
        "from servers.roles import role",
        f"from servers.types import {', '.join(sorted(names.shared_used | {'DateTime', 'Total', 'ident', 'sem'}))}",
    ]
    rows = [_row_model(spec, names, t.name) for t in spec.tools if t.op == "aggregate"]
    records = [_record(spec, names, n, e) for n, e in spec.entities.items()]
    seed_code = _seed_function(spec, names)
    imports[-1] = (
        f"from servers.types import {', '.join(sorted(names.shared_used | {'DateTime', 'Total', 'ident', 'sem'}))}"
    )
    parts = [HEADER.format(name=spec.name) + doc, "\n".join(imports)]
    aliases = [f"{names.id_alias[e]} = Annotated[str, ident({spec.name!r}, {e!r})]" for e in spec.entities]
    aliases += [_type_alias(spec, names, key) for key in spec.types]
    parts.append("\n".join(aliases))
    parts += records + rows
    state = [f"class {names.state}(ServiceState):"]
    state += [
        f"    {e.plural}: dict[str, {names.cls[n]}] = Field(default_factory=dict)" for n, e in spec.entities.items()
    ]
    parts.append("\n".join(state))
    parts.append(seed_code)
    parts.append(_service_definition(spec, names, source))
    return "\n\n\n".join(parts) + "\n"


def _row_model(spec: ServiceSpec, names: Names, tool_name: str) -> str:
    tool = spec.tool(tool_name)
    entity = spec.entities[tool.entity]
    assert tool.group_by is not None
    group = entity.fields.get(tool.group_by, None)
    key_type = field_annotation(spec, names, group) if group else "DateTime"
    lines = [
        f"class {names.row[tool_name]}(Record):",
        f'    """One group of {tool_name}: the {entity.plural} sharing a {tool.group_by}."""',
        "",
        f"    {tool.group_by}: {key_type}",
        f'    count: Count = Field(description="Number of {entity.plural.replace("_", " ")} in the group.")',
    ]
    if tool.field:
        lines.append(f'    total_{tool.field}: Total = Field(description="Sum of {tool.field} over the group.")')
    names.shared_used.add("Count")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# __init__.py


def _module_doc(spec: ServiceSpec) -> str:
    tools = ", ".join(t.name for t in spec.tools)
    state = "; ".join(f"{e.plural} by id ({e.description.rstrip('.')})" for e in spec.entities.values())
    seed = ", ".join(
        f"{e.seed.count} {e.plural.replace('_', ' ')}"
        + (f" (+{e.seed.duplicates} stale near-duplicates)" if e.seed.duplicates else "")
        for e in spec.entities.values()
    )
    parts = [spec.description]
    if spec.modelled_on:
        parts.append(f"Modelled on: {spec.modelled_on}.")
    parts.append(f"Tools: {tools}.")
    parts.append(f"State: {state}.")
    parts.append(f"Seed: {seed}, drawn from the shared population.")
    if spec.rules:
        parts.append("Rules: " + " ".join(rule_text(r) for r in spec.rules))
    parts.append(f"Version history: {spec.version} — ejected from servers/catalog/{spec.name}.json.")
    return '"""' + "\n\n".join(wrap_doc(p, 0) for p in parts) + '\n"""'


def _service_definition(spec: ServiceSpec, names: Names, source: str) -> str:
    return textwrap.dedent(f"""\
        service = Service(
            {spec.name!r},
            version={spec.version},
            category={spec.category!r},
            description={lit(spec.description)},
            state={names.state},
            seed=seed,
            source={source!r},
            system_fields={SYSTEM_FIELDS!r},
        )""")


def _tool_module(spec: ServiceSpec, tools: list[ToolSpec], part: str) -> str:
    names = Names(spec)
    bodies = [tool_code(spec, names, t) for t in tools]
    framework = sorted(names.framework_used | {"Page"})
    model_names = sorted({names.state, *names.cls.values(), *names.row.values(), *names.id_alias.values(),
                          *names.local.values(), "service"})  # fmt: skip
    imports = [
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        f"from servers.framework import {', '.join(framework)}",
        f"from servers.types import {', '.join(sorted(names.shared_used | {'Limit', 'Offset', 'Query'}))}",
        "",
        f"from .models import {', '.join(model_names)}",
    ]
    entities = sorted({t.entity for t in tools}, key=list(spec.entities).index)
    doc = f'"""Tools of the built {spec.name} service over {", ".join(spec.entities[e].plural for e in entities)}."""'
    header = HEADER.format(name=spec.name) + doc
    return "\n\n\n".join([header, "\n".join(imports), *bodies]) + "\n"


def _tool_parts(spec: ServiceSpec, budget: int = 450) -> list[list[ToolSpec]]:
    """The tools grouped by entity and packed into modules of about ``budget`` lines."""
    parts: list[list[ToolSpec]] = []
    size = budget
    for entity in spec.entities:
        tools = [t for t in spec.tools if t.entity == entity]
        if not tools:
            continue
        lines = sum(tool_code(spec, Names(spec), t).count("\n") + 6 for t in tools)
        if size + lines > budget:
            parts.append([])
            size = 0
        parts[-1].extend(tools)
        size += lines
    return parts


def _package_files(spec: ServiceSpec) -> dict[str, str]:
    parts = _tool_parts(spec)
    stems = ["tools"] if len(parts) == 1 else [f"tools_{i + 1}" for i in range(len(parts))]
    files = {f"{stem}.py": _tool_module(spec, tools, stem) for stem, tools in zip(stems, parts, strict=True)}
    init = [
        HEADER.format(name=spec.name) + _module_doc(spec),
        "from __future__ import annotations",
        f"from . import {', '.join(stems)}  # noqa: F401  (importing them registers the tools)\n"
        "from .models import service\n\n"
        '__all__ = ["service"]',
    ]
    files["__init__.py"] = "\n\n".join(init) + "\n"
    return files
