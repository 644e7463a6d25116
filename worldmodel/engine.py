"""Simulated services: a spec plus a backend become a regular ``servers`` service.

Each spec becomes a :class:`~servers.framework.Service` (source ``simulated``) whose state is a
:class:`SimState` — the records that simulated writes created, by collection — so everything
the framework does for native services works here too: the envelope boundary, snapshot /
restore / hash / diff, copy-on-write worlds in the hub, recording, the conformance checker.

A call validates its arguments against the spec's input schema (400 naming the field), applies
the tool's effect to the simulated state (``create`` stores a record, ``get`` reads one or
answers 404, ``list`` filters, ``update`` / ``delete`` change one), and asks the backend only for
the values the state does not already know. Outputs always validate against the spec's output
schema; arguments echo into same-named output fields, so a forecast for Berlin says Berlin.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Protocol

import jsonschema
from pydantic import TypeAdapter

from servers.framework import (
    BadGateway,
    BadRequest,
    NotFound,
    Service,
    ServiceState,
    Tool,
    ToolMeta,
    envelope_schema,
)
from servers.population import Population
from servers.state import canonical_json, stable_hash
from servers.values import encodable
from worldmodel.plausibility import check
from worldmodel.spec import SimSpec, SimTool


class SimState(ServiceState):
    """What simulated writes created: ``collections[name][id] = record``; plus the world seed."""

    world_seed: int = 0
    collections: dict[str, dict[str, dict[str, Any]]] = {}


class Backend(Protocol):
    """Produces a tool's output; the engine keeps it consistent with the simulated state."""

    name: str

    def generate(self, request: GenerateRequest) -> dict[str, Any]: ...


class GenerateRequest:
    """Everything a backend may use to produce one output."""

    def __init__(
        self,
        spec: SimSpec,
        tool: SimTool,
        arguments: dict[str, Any],
        records: list[dict[str, Any]],
        state: SimState,
        world: Population,
        rng_key: str,
    ) -> None:
        self.spec = spec
        self.tool = tool
        self.arguments = arguments
        self.records = records
        self.state = state
        self.world = world
        self.rng_key = rng_key

    @property
    def schema(self) -> dict[str, Any]:
        return self.tool.output_schema

    def rng(self) -> random.Random:
        return random.Random(self.rng_key)

    def state_hash(self) -> str:
        return stable_hash(self.state.collections)


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def schema_errors(validator: jsonschema.Draft202012Validator, value: Any, noun: str = "field") -> list[str]:
    """Readable validation errors, each naming the argument or field."""
    out: list[str] = []
    for err in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in err.absolute_path)
        if err.validator == "required" and isinstance(err.instance, dict):
            missing = [k for k in err.validator_value if k not in err.instance]
            out.extend(f"missing required {noun} {'.'.join([where, k]) if where else k!r}" for k in missing)
        elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = set(err.schema.get("properties", {}))
            out.extend(f"unknown {noun} {k!r}" for k in err.instance if k not in allowed)
        else:
            out.append(f"{noun} {where or '(top level)'!r}: {err.message}")
    return list(dict.fromkeys(out))  # jsonschema reports 'required' once per missing key


MAX_DEPTH = 64
"""How deeply arguments may nest (objects in arrays in objects…); no tool spec needs more."""


def argument_problem(arguments: dict[str, Any]) -> str | None:
    """What makes ``arguments`` unusable whatever the schema says, naming the field (None if nothing).

    Text that is not valid Unicode — a lone surrogate (``"\\ud800"``, which JSON can carry as
    an escape) cannot be encoded as UTF-8: it would break the rng seed, the state hash, the prompt
    of the llm backend and every transport the answer is written to — and nesting deeper than
    :data:`MAX_DEPTH` (it would exhaust the recursion of every later step). Walked without
    recursion, so no input can make the check itself fail.
    """
    stack: list[tuple[Any, str, int]] = [(arguments, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            if not encodable(value):
                return (
                    f"argument '{where or '(top level)'}' is not valid Unicode text "
                    "(it holds a lone surrogate such as \\ud800)"
                )
            continue
        if not isinstance(value, dict | list | tuple):
            continue
        if depth >= MAX_DEPTH:
            return f"argument '{where.split('.')[0]}' nests deeper than {MAX_DEPTH} levels"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            path = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and not encodable(key):
                return f"argument name '{ascii(path)[1:-1]}' is not valid Unicode text (it holds a lone surrogate)"
            stack.append((item, path, depth + 1))
    return None


class SpecTool(Tool):
    """A tool defined by a spec: JSON-schema validation instead of Python annotations, and a judge of
    its own results (:meth:`implausible`)."""

    input_validator: jsonschema.Draft202012Validator | None = None
    spec: SimTool | None = None

    def implausible(self, state: Any, arguments: dict[str, Any], data: Any) -> list[str]:
        """What contradicts its arguments, the world's clock or itself in ``data``, the result of a
        call with ``arguments`` that left ``state`` (:mod:`worldmodel.plausibility`); the conformance
        checker asks every tool that can tell."""
        checked = self.validate(arguments)
        if self.spec is None or isinstance(checked, str) or not isinstance(data, dict):
            return []
        return [str(v) for v in check(self.spec, checked, data, state.clock)]

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        assert self.input_validator is not None
        problem = argument_problem(arguments)
        if problem is not None:
            return f"invalid arguments for {self.name!r}: {problem}"
        problems = schema_errors(self.input_validator, arguments, noun="argument")
        if problems:
            return f"invalid arguments for {self.name!r}: " + "; ".join(problems)
        defaults = {
            k: copy.deepcopy(p["default"])
            for k, p in self.input_schema.get("properties", {}).items()
            if "default" in p and k not in arguments
        }
        return {**defaults, **arguments}


class Simulator:
    """Runs the tools of one spec against a :class:`SimState` with a backend."""

    def __init__(self, spec: SimSpec, backend: Backend) -> None:
        self.spec = spec
        self.backend = backend
        self.output_validators = {t.name: _validator(t.output_schema) for t in spec.tools}

    def run(self, tool: SimTool, state: SimState, arguments: dict[str, Any]) -> dict[str, Any]:
        effect = tool.effect
        records = state.collections.get(effect.collection or "", {})
        world = Population.generate(state.world_seed)
        key_value = arguments.get(effect.key) if effect.key else None
        if effect.op in ("get", "update", "delete") and key_value not in records:
            raise NotFound(
                f"{effect.collection.rstrip('s') if effect.collection else 'record'} {key_value!r} not found"
            )
        if effect.op == "get":
            context = [records[str(key_value)]]
        elif effect.op == "list":
            context = [r for r in records.values() if _matches(r, arguments, tool)]
        elif effect.op in ("update", "delete"):
            context = [records[str(key_value)]]
        else:
            context = []
        args_key = canonical_json(_question(tool, arguments) if effect.op == "none" else arguments)
        salt = state.seq if effect.op == "create" else ""
        request = GenerateRequest(
            self.spec,
            tool,
            arguments,
            context,
            state,
            world,
            rng_key=f"{state.world_seed}:{self.spec.name}:{tool.name}:{args_key}:{salt}",
        )
        output = self._complete(tool, self.backend.generate(request), arguments, context, request)
        return self._apply(tool, state, output, arguments)

    def _complete(
        self,
        tool: SimTool,
        output: dict[str, Any],
        arguments: dict[str, Any],
        context: list[dict[str, Any]],
        request: GenerateRequest,
    ) -> dict[str, Any]:
        """Overlay what the state and the arguments already fix, then check the output schema."""
        props = tool.output_schema.get("properties", {})
        fixed: dict[str, Any] = {}
        if tool.effect.op in ("get", "update", "delete") and context:
            fixed.update({k: v for k, v in context[0].items() if k in props})
        fixed.update({k: v for k, v in arguments.items() if k in props and _fits(props[k], v)})
        if tool.effect.op in ("update",):
            fixed.update({k: v for k, v in tool.effect.set.items() if k in props})
        if tool.effect.op == "create":
            collection = self.spec.collections[tool.effect.collection or ""]
            fixed[collection.id_field] = f"{collection.id_prefix}-{request.state.seq + 1:05d}"
        if tool.effect.op == "list" and tool.effect.items_field:
            item_schema = props[tool.effect.items_field].get("items", {})
            item_props = item_schema.get("properties", {})
            fixed[tool.effect.items_field] = [{k: v for k, v in r.items() if k in item_props} for r in context]
            for name, prop in props.items():
                if prop.get("x-semantic-type") == "count":
                    fixed[name] = len(context)
        result = {**output, **fixed}
        problems = schema_errors(self.output_validators[tool.name], result)
        if problems:
            raise BadGateway(f"simulated output of {tool.name!r} does not fit its schema: {'; '.join(problems)}")
        return result

    def _apply(
        self, tool: SimTool, state: SimState, output: dict[str, Any], arguments: dict[str, Any]
    ) -> dict[str, Any]:
        effect = tool.effect
        if effect.op not in ("create", "update", "delete"):
            return output
        name = effect.collection or ""
        collection = self.spec.collections[name]
        records = dict(state.collections.get(name, {}))
        if effect.op == "create":
            state.seq += 1  # the id in the output was drawn as seq + 1
            records[str(output[collection.id_field])] = {**arguments, **output}
        elif effect.op == "update":
            record_id = str(arguments[effect.key or ""])
            changed = {k: v for k, v in arguments.items() if k != effect.key}
            records[record_id] = {**records[record_id], **changed, **effect.set}
        else:
            records.pop(str(arguments[effect.key or ""]))
        state.collections = {**state.collections, name: records}
        state.tick()
        return output


def _question(tool: SimTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """What a lookup's answer is drawn from: its required arguments, text compared as a person
    would (case and surrounding spaces aside). The same question gets the same answer however it
    is asked: an agent that adds an optional country to "the weather in Lyon", or writes "lyon",
    is told what the task's author was told (a reported answer is checked against it)."""
    required = set(tool.input_schema.get("required", [])) or set(arguments)  # (a listing's filters are its question)
    return {k: v.strip().casefold() if isinstance(v, str) else v for k, v in arguments.items() if k in required}


def _fits(schema: dict[str, Any], value: Any) -> bool:
    return not list(_validator(schema).iter_errors(value))


def _matches(record: dict[str, Any], arguments: dict[str, Any], tool: SimTool) -> bool:
    """List filters: every argument that names a record field must equal it (text case-insensitively)."""
    for key, wanted in arguments.items():
        if key not in record or isinstance(wanted, list | dict):
            continue
        have = record[key]
        if isinstance(have, str) and isinstance(wanted, str):
            if have.casefold() != wanted.casefold():
                return False
        elif have != wanted:
            return False
    return True


def _singular(plural: str) -> str:
    """``bookings`` → ``booking``, ``entries`` → ``entry``, ``watchlist`` stays."""
    if plural.endswith("ies") and len(plural) > 3:
        return plural[:-3] + "y"
    if plural.endswith(("sses", "shes", "ches", "xes")):
        return plural[:-2]
    if plural.endswith("s") and not plural.endswith("ss"):
        return plural[:-1]
    return plural


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    found = schema.get("properties", {})
    return found if isinstance(found, dict) else {}


def record_fields(spec: SimSpec, collection: str) -> list[str]:
    """The fields a record of ``collection`` can hold: what creates store (arguments and output),
    what updates copy in (arguments and constant ``set`` fields), and what gets and lists show."""
    fields: dict[str, None] = {}
    for tool in spec.tools:
        effect = tool.effect
        if effect.collection != collection:
            continue
        inputs, outputs = _properties(tool.input_schema), _properties(tool.output_schema)
        if effect.op == "create":
            fields.update(dict.fromkeys([*inputs, *outputs]))
        elif effect.op == "update":
            fields.update(dict.fromkeys([*(k for k in inputs if k != effect.key), *effect.set]))
        elif effect.op == "get":
            fields.update(dict.fromkeys(outputs))
        elif effect.op == "list":
            items = outputs.get(effect.items_field or "", {}).get("items", {})
            fields.update(dict.fromkeys(_properties(items) if isinstance(items, dict) else {}))
    return list(fields)


STAMPS = ("created_at", "updated_at")
"""Timestamps a created record carries that no caller sets, left out of a tool's ``sets``."""


def spec_meta(spec: SimSpec, tool: SimTool) -> ToolMeta:
    """The metadata of a simulated tool, read off its effect: ``create``/``get``/``list``/``update``/
    ``delete`` keep their name, ``none`` is a ``lookup`` (a read) or an ``action`` (a write). A list
    reads the scalar arguments that name record fields (the filters :func:`_matches` applies); a
    create sets what it stores but the id and the stamps; an update sets its arguments but the key,
    and its constant ``set`` fields."""
    effect = tool.effect
    if effect.op == "none" or effect.collection is None:
        return ToolMeta(op="lookup" if tool.kind == "read" else "action")
    name = effect.collection
    fields = record_fields(spec, name)
    inputs = _properties(tool.input_schema)
    reads: list[str] = []
    sets: list[str] = []
    if effect.op == "list":
        reads = [k for k, p in inputs.items() if k in fields and p.get("type") not in ("array", "object")]
    elif effect.op == "create":
        stored = dict.fromkeys([*inputs, *_properties(tool.output_schema)])
        sets = [k for k in stored if k != spec.collections[name].id_field and k not in STAMPS]
    elif effect.op == "update":
        sets = list(dict.fromkeys([*(k for k in inputs if k != effect.key), *effect.set]))
    return ToolMeta(op=effect.op, entity=_singular(name), collection=name, reads=tuple(reads), sets=tuple(sets))


def build_service(spec: SimSpec, backend: Backend) -> Service[SimState]:
    """The spec as a regular service (source ``simulated``) backed by ``backend``."""
    simulator = Simulator(spec, backend)

    def seed(rng: random.Random, world: Population) -> SimState:
        return SimState(world_seed=world.seed, clock=world.now)

    service: Service[SimState] = Service(
        spec.name,
        version=spec.version,
        category=spec.category,
        description=spec.description,
        state=SimState,
        seed=seed,
        source="simulated",
        modelled_on=spec.modelled_on,
        # The engine stamps nothing on a record: a created one is the arguments plus the backend's
        # output (its id drawn from seq), so only the base fields, seq and clock, are the system's.
        system_fields=(),
    )
    any_adapter: TypeAdapter[Any] = TypeAdapter(Any)
    for tool_spec in spec.tools:

        def run(state: SimState, _tool: SimTool = tool_spec, **arguments: Any) -> dict[str, Any]:
            if not isinstance(state, SimState):
                raise BadRequest("simulated tools need a simulated state")
            return simulator.run(_tool, state, arguments)

        tool = SpecTool(
            service=spec.name,
            name=tool_spec.name,
            kind=tool_spec.kind,
            description=tool_spec.description,
            func=run,
            params=(),
            result_adapter=any_adapter,
            input_schema=tool_spec.input_schema,
            output_schema=envelope_schema(tool_spec.output_schema),
            meta=spec_meta(spec, tool_spec),
        )
        tool.input_validator = _validator(tool_spec.input_schema)
        tool.spec = tool_spec
        service.tools[tool_spec.name] = tool
    return service
