"""The world model's compiled form of a service spec: tools with JSON schemas and effects.

Specs are written in the one catalog format (:mod:`servers.construction.spec`; the world model's
own services are its simulated subset, ``worldmodel/specs/*.json``), and
:func:`worldmodel.fromspec.simulated_spec` compiles each into a :class:`SimSpec`: every tool with
the input and output JSON schemas it serves (every property carrying ``x-semantic-type`` and a
description; ``output_schema`` describes the ``data`` of the success envelope) and the ``effect``
that relates a call to the simulated state, which keeps later calls consistent with earlier ones:

- ``none``: a pure function of (world seed, tool, arguments) — the same question gets the same
  answer all episode long (a catalog ``compute``, or an ``aggregate``);
- ``create``: the output becomes a new record of ``collection`` (arguments with the same names
  as output fields are copied in, so a booking shows the passenger that was asked for);
- ``get`` / ``update`` / ``delete``: act on the record whose id is the argument ``key``
  (unknown id → 404); ``update`` copies same-named arguments and the constant fields of ``set``;
- ``list``: the records of ``collection`` whose fields equal the given filter arguments, in the
  output's array field ``items_field``.

Nothing reads this form from files: it is built only by the compiler.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, model_validator

from servers import schema_cache
from servers.types import SEMANTIC_KEY, VOCABULARY


class Collection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id_field: str
    id_prefix: str = Field(default="ID", pattern=r"^[A-Z]{2,5}$")
    description: str = ""


class Effect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: Literal["none", "create", "get", "update", "delete", "list"] = "none"
    collection: str | None = None
    key: str | None = None
    items_field: str | None = None
    set: dict[str, Any] = Field(default_factory=dict)


class SimTool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{1,50}$")
    description: str = Field(min_length=1)
    kind: Literal["read", "write"]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    effect: Effect = Field(default_factory=Effect)


class SimSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{1,30}$")
    version: int = 1
    category: str
    description: str
    modelled_on: str = ""
    """The real product(s) the simulated API follows (the catalog spec's ``modelled_on``)."""
    collections: dict[str, Collection] = Field(default_factory=dict)
    tools: list[SimTool]

    @model_validator(mode="after")
    def _consistent(self) -> SimSpec:
        problems = spec_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _untyped(schema: dict[str, Any], path: str) -> list[str]:
    """Properties without a semantic type or description (recursing into objects and arrays)."""
    missing: list[str] = []
    for name, prop in schema.get("properties", {}).items():
        where = f"{path}.{name}" if path else name
        if not prop.get("description"):
            missing.append(f"{where} has no description")
        items = prop.get("items") if prop.get("type") == "array" else None
        if prop.get("type") == "object" and "properties" in prop:
            missing.extend(_untyped(prop, where))
        elif isinstance(items, dict) and items.get("type") == "object":
            missing.extend(_untyped(items, where))
        elif SEMANTIC_KEY not in prop and not (isinstance(items, dict) and SEMANTIC_KEY in items):
            missing.append(f"{where} has no {SEMANTIC_KEY}")
        else:
            kind = prop.get(SEMANTIC_KEY) or (items or {}).get(SEMANTIC_KEY)
            if kind not in VOCABULARY and "." not in str(kind):
                missing.append(f"{where}: unknown semantic type {kind!r} (not in servers.types)")
    return missing


def schema_error(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is not a valid JSON Schema (2020-12), or None; remembered on disk per schema text
    (checking against the meta-schema costs ~8 ms a schema, most of loading the world model's specs)."""
    text = json.dumps(schema, sort_keys=True)

    def check() -> tuple[str]:
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            return (exc.message,)
        return ("",)

    cache = schema_cache.shared()
    key = f"metaschema:{hashlib.sha256(text.encode()).hexdigest()}"
    (message,) = cache.get_or_make(key, check) if cache is not None else check()
    return message or None


def spec_problems(spec: SimSpec) -> list[str]:
    """Everything wrong with a spec, each naming the tool and field."""
    problems: list[str] = []
    names = [t.name for t in spec.tools]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"tool {dup!r} is defined twice")
    for tool in spec.tools:
        where = f"{spec.name}.{tool.name}"
        for label, schema in (("input_schema", tool.input_schema), ("output_schema", tool.output_schema)):
            invalid = schema_error(schema)
            if invalid:
                problems.append(f"{where}: {label} is not valid JSON Schema: {invalid}")
                continue
            if schema.get("type") != "object":
                problems.append(f"{where}: {label} must be an object schema")
            problems.extend(f"{where}: {label} {m}" for m in _untyped(schema, ""))
        effect = tool.effect
        if effect.op == "none":
            continue
        collection = spec.collections.get(effect.collection or "")
        if collection is None:
            problems.append(f"{where}: effect {effect.op!r} names unknown collection {effect.collection!r}")
            continue
        inputs = tool.input_schema.get("properties", {})
        outputs = tool.output_schema.get("properties", {})
        if effect.op in ("get", "update", "delete") and effect.key not in inputs:
            problems.append(f"{where}: effect key {effect.key!r} is not an input parameter")
        if effect.op == "create" and collection.id_field not in outputs:
            problems.append(f"{where}: create must output the id field {collection.id_field!r}")
        if effect.op == "list" and outputs.get(effect.items_field or "", {}).get("type") != "array":
            problems.append(f"{where}: list needs items_field naming an array output field")
        if (effect.op in ("create", "update", "delete")) != (tool.kind == "write"):
            problems.append(f"{where}: effect {effect.op!r} does not fit kind {tool.kind!r}")
    return problems
