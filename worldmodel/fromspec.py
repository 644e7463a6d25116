"""The compiler from the catalog format to the world model's form (:class:`worldmodel.spec.SimSpec`).

Two kinds of catalog spec are served by the world model:

- a **simulated** spec (``"simulated": true``, the world model's own ``worldmodel/specs``): its
  tools serve the schemas the spec declares (:mod:`servers.construction.simspec`), ``compute``
  becoming a pure effect (``none``), the other ops the effect of their name on the entity's
  collection (``key``: the entity's ``id_field``; a list's records in its ``shape:<entity>``
  result field);
- a spec-run spec (``servers/catalog``) whose implementation failed verification — or was never
  built — is still offered to agents: its tools are served by the world model. The tool schemas are
  the ones the spec engine's service exposes (:func:`servers.engine.build_service`), so an agent
  sees the same interface either way; each tool's ``op`` becomes the world-model effect that keeps
  later calls consistent with earlier ones (create → create, get → get, list → list,
  update/transition/adjust/append/remove → update, a transition also setting the lifecycle field
  to its target, delete → delete, aggregate → none). Aggregates, whose native result is a list,
  answer ``{"groups": [...]}`` because world-model outputs are objects.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from servers.construction import simspec
from servers.construction.spec import CATALOG_DIR, ServiceSpec, load_spec
from servers.engine import build_service as engine_service
from servers.framework import Service
from servers.registry import names as registered_names
from servers.types import SEMANTIC_KEY
from worldmodel.engine import Backend, SimState, build_service
from worldmodel.rules import RulesBackend
from worldmodel.spec import Collection, Effect, SimSpec, SimTool

EFFECTS = {
    "create": "create",
    "get": "get",
    "list": "list",
    "update": "update",
    "transition": "update",
    "adjust": "update",
    "append": "update",
    "remove": "update",
    "delete": "delete",
    "aggregate": "none",
    "compute": "none",
}


def _plain(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with ``$ref`` inlined and optional ``anyOf [X, null]`` folded into X."""
    if isinstance(schema, list):
        return [_plain(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = copy.deepcopy(defs[schema["$ref"].removeprefix("#/$defs/")])
        return _plain({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, defs)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        real = [b for b in branches if b.get("type") != "null"]
        if len(real) == 1:
            merged = {**_plain(real[0], defs), **{k: v for k, v in schema.items() if k not in ("anyOf", "default")}}
            return merged
    # pydantic's "title" annotations go (a string); a property called "title" stays (a schema)
    out = {k: _plain(v, defs) for k, v in schema.items() if k != "$defs" and not (k == "title" and isinstance(v, str))}
    if out.get("type") == "array" and isinstance(out.get("items"), dict) and SEMANTIC_KEY in out["items"]:
        out.setdefault(SEMANTIC_KEY, out["items"][SEMANTIC_KEY])
        out.setdefault("description", out["items"].get("description", "List of values."))
    return out


def simulated_spec(spec: ServiceSpec) -> SimSpec:
    """The world model's form of a catalog spec: a simulated spec's declared interface, or the
    interface a native build of a spec-run one would have."""
    if spec.simulated:
        return _compile_simulated(spec)
    reference = engine_service(spec)
    collections = {
        e.plural: Collection(id_field="id", id_prefix=e.id_prefix.upper()[:5].ljust(2, "X"), description=e.description)
        for e in spec.entities.values()
    }
    tools = []
    for tool_spec in spec.tools:
        tool = reference.tools[tool_spec.name]
        inputs = _plain(tool.input_schema, tool.input_schema.get("$defs", {}))
        data = _plain(tool.output_schema["properties"]["data"], tool.output_schema.get("$defs", {}))
        if data.get("type") == "array":
            data = {
                "type": "object",
                "properties": {"groups": {**data, "description": "One row per group."}},
                "required": ["groups"],
            }
        entity = spec.entities[tool_spec.entity]
        op = EFFECTS[tool_spec.op]
        life = entity.lifecycle
        # a transition moves the record to its target state, as the native build would
        moved = {life.field: tool_spec.to} if tool_spec.op == "transition" and life and tool_spec.to else {}
        effect = Effect(
            op=op,
            collection=None if op == "none" else entity.plural,
            key=f"{tool_spec.entity}_id" if op in ("get", "update", "delete") else None,
            items_field="items" if op == "list" else None,
            set=moved,
        )
        tools.append(
            SimTool(
                name=tool_spec.name,
                description=tool_spec.description,
                kind=tool_spec.kind,
                input_schema=inputs,
                output_schema=data,
                effect=effect,
            )
        )
    return SimSpec(
        name=spec.name,
        version=spec.version,
        category=spec.category,
        description=spec.description,
        modelled_on=spec.modelled_on,
        collections=collections,
        tools=tools,
    )


def _compile_simulated(spec: ServiceSpec) -> SimSpec:
    collections = {
        e.plural: Collection(id_field=e.id_field or "id", id_prefix=e.id_prefix.upper(), description=e.description)
        for e in spec.entities.values()
    }
    tools = []
    for tool in spec.tools:
        op = EFFECTS[tool.op]
        entity = spec.entities.get(tool.entity)
        effect = Effect(
            op=op,
            collection=entity.plural if entity else None,
            key=entity.id_field if entity and op in ("get", "update", "delete") else None,
            items_field=simspec.items_field(spec, tool) if op == "list" else None,
            set=dict(tool.set),
        )
        tools.append(
            SimTool(
                name=tool.name,
                description=tool.description,
                kind=tool.kind,
                input_schema=simspec.input_schema(spec, tool),
                output_schema=simspec.output_schema(spec, tool),
                effect=effect,
            )
        )
    return SimSpec(
        name=spec.name,
        version=spec.version,
        category=spec.category,
        description=spec.description,
        modelled_on=spec.modelled_on,
        collections=collections,
        tools=tools,
    )


def routed_paths(directory: str | Path = CATALOG_DIR) -> list[Path]:
    """The files of catalog specs with no verified native service mounted (a spec is named like
    its file, so none is parsed to tell)."""
    native = set(registered_names())
    return [p for p in sorted(Path(directory).glob("*.json")) if p.stem not in native]


def routed_specs(directory: str | Path = CATALOG_DIR) -> list[ServiceSpec]:
    """Catalog specs with no verified native service mounted: the world model serves them."""
    return [load_spec(p) for p in routed_paths(directory)]


def routed_services(backend: Backend | None = None, directory: str | Path = CATALOG_DIR) -> list[Service[SimState]]:
    """Simulated services for every routed catalog spec."""
    chosen = backend or RulesBackend()
    return [build_service(simulated_spec(s), chosen) for s in routed_specs(directory)]
