"""Tools and envelopes: the boundary every service call goes through.

A :class:`Tool` is one callable of a service: its kind (read/write), its validated parameters,
its JSON schemas (built on first use) and its :class:`ToolMeta` — what the tool does to which
entity, which fields it reads and which it sets — so that consumers (the task generator, the
adversaries, the collateral check) read a tool's meaning instead of guessing it from its name.
Hand-written services build tools from typed functions (:func:`build_tool`, through the
``Service.read``/``Service.write`` decorators); the spec engine builds them from explicit
parameter lists (:func:`make_tool`). Errors are exceptions inside a service and envelopes at its
boundary.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import functools
import inspect
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from pydantic import AwareDatetime, BaseModel, NaiveDatetime, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from servers import schema_cache

ToolKind = Literal["read", "write"]


class ErrorBody(TypedDict):
    code: int
    message: str


class Ok(TypedDict):
    """A tool's answer when it worked."""

    success: Literal[True]
    data: Any


class Err(TypedDict):
    """A tool's answer when it did not: an HTTP-like ``code`` and a message naming what was wrong."""

    success: Literal[False]
    error: ErrorBody


Envelope = Ok | Err
"""What every tool answers. A type only: envelopes are plain dicts at run time (JSON in, JSON out),
so a value that crosses a boundary untyped (a parsed JSON reply) is checked, not converted."""


# ---------------------------------------------------------------------------------------------
# Errors and envelopes


class ServiceError(Exception):
    """An expected failure of a tool call, turned into an error envelope at the boundary."""

    code = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ServiceError):
    code = 400


class Forbidden(ServiceError):
    code = 403


class NotFound(ServiceError):
    code = 404


class Conflict(ServiceError):
    code = 409


class BadGateway(ServiceError):
    """An upstream (a model endpoint, an external server) answered with something unusable."""

    code = 502


class Unavailable(ServiceError):
    """An upstream could not be reached; retrying later may work."""

    code = 503


def ok(data: Any) -> Ok:
    return {"success": True, "data": data}


def error(code: int, message: str) -> Err:
    return {"success": False, "error": {"code": code, "message": message}}


ENVELOPE_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "integer", "description": "HTTP-like status: 400, 403, 404, 409, 429, 500, 503."},
        "message": {"type": "string", "description": "What went wrong, naming the bad field or id."},
    },
    "required": ["code", "message"],
}


def envelope_schema(data_schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema of a tool: the envelope around ``data_schema`` (``$defs`` hoisted)."""
    data = dict(data_schema)
    defs = data.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "success": {"type": "boolean", "description": "True when the call succeeded."},
            "data": data,
            "error": ENVELOPE_ERROR_SCHEMA,
        },
        "required": ["success"],
    }
    if defs:
        schema["$defs"] = defs
    return schema


# ---------------------------------------------------------------------------------------------
# Tools


_ARGS_RE = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION_RE = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?):\s*$")
_PARAM_RE = re.compile(r"^\s+(\w+)\s*(\([^)]*\))?:\s*(.*)$")


@functools.lru_cache(maxsize=4096)
def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description})."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    for line in lines:
        if _ARGS_RE.match(line):
            section, current = "args", None
        elif _SECTION_RE.match(line):
            section, current = "other", None
        elif section == "description":
            description.append(line)
        elif section == "args":
            match = _PARAM_RE.match(line)
            if match and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = match.group(1)
                params[current] = match.group(3).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}"
    return "\n".join(description).strip(), params


_ADAPTERS: dict[Any, tuple[TypeAdapter[Any], dict[str, Any], dict[str, Any]]] = {}


def adapter(annotation: Any) -> tuple[TypeAdapter[Any], dict[str, Any], dict[str, Any]]:
    """The cached (adapter, validation schema, serialisation schema) of one annotation.

    Tools share a few dozen distinct annotations (the semantic types), so building one adapter
    per annotation instead of one pydantic model per tool makes constructing 10,000 tools take
    well under a second instead of about ten (measured in bench/hub.py). Treat the schemas as
    read-only: they are shared.
    """
    try:
        key: Any = annotation
        hash(key)
    except TypeError:
        key = repr(annotation)
    found = _ADAPTERS.get(key)
    if found is None:
        made = TypeAdapter(annotation)  # its own: schemas carry the annotation's descriptions
        found = (made, made.json_schema(), made.json_schema(mode="serialization"))
        _ADAPTERS[key] = found
    return found


_VALIDATORS: dict[Any, TypeAdapter[Any]] = {}


def validator(annotation: Any) -> TypeAdapter[Any]:
    """The cached adapter of one annotation, without its JSON schemas (those cost most).

    Annotations that validate alike share one adapter: the library's 10,000 parameters carry
    2,600 distinct annotations, most differing only in their description, and building an
    adapter costs about a millisecond."""
    try:
        found = _VALIDATORS.get(annotation)
    except TypeError:
        found = None
    if found is None:
        key = _validation_key(annotation)
        found = _VALIDATORS.get(key)
        if found is None:
            found = _VALIDATORS.setdefault(key, TypeAdapter(annotation))
        with contextlib.suppress(TypeError):  # an unhashable annotation is found by its key
            _VALIDATORS[annotation] = found
    return found


_DOCUMENTATION = ("description", "json_schema_extra", "title", "examples")
"""What a field's metadata says for readers only: it never changes what validates."""


def _validation_key(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(annotation)
        parts = []
        for item in metadata:
            if isinstance(item, FieldInfo):
                item = copy.copy(item)
                for name in _DOCUMENTATION:
                    setattr(item, name, None)
            parts.append(repr(item))
        return ("annotated", _validation_key(base), tuple(parts))
    if origin is typing.Literal:
        return ("literal", repr(typing.get_args(annotation)))
    if origin is not None:
        return (repr(origin), tuple(_validation_key(arg) for arg in typing.get_args(annotation)))
    try:
        hash(annotation)
    except TypeError:
        return repr(annotation)
    return annotation


_ISO: dict[Any, bool] = {}


def _iso(annotation: Any) -> bool:
    """Whether an annotation is (a list of / an optional / an annotated) date or date-time; remembered
    per annotation (a library of thousands of tools shares a few dozen)."""
    try:
        return _ISO[annotation]
    except (KeyError, TypeError):
        pass
    if isinstance(annotation, type):  # pydantic's AwareDatetime is a marker class, not a datetime subclass
        found = issubclass(annotation, dt.date) or annotation in (AwareDatetime, NaiveDatetime)
    else:
        found = any(_iso(arg) for arg in typing.get_args(annotation) if not isinstance(arg, FieldInfo))
    with contextlib.suppress(TypeError):  # an unhashable annotation is computed each time
        _ISO[annotation] = found
    return found


_OUTPUT_SCHEMAS: dict[int, dict[str, Any]] = {}


ReadOp = Literal["list", "get", "search", "aggregate", "lookup"]
WriteOp = Literal["create", "update", "transition", "delete", "adjust", "append", "remove", "send", "action"]
Op = ReadOp | WriteOp
READ_OPS: tuple[str, ...] = typing.get_args(ReadOp)
WRITE_OPS: tuple[str, ...] = typing.get_args(WriteOp)


@dataclass(frozen=True)
class ToolMeta:
    """What a tool does, declared by its service (not guessed from its name).

    ``op``: reads are ``list`` (a filtered listing of an entity), ``search`` (a text search),
    ``get`` (one record by id), ``aggregate`` (counts or sums per group) and ``lookup`` (anything
    else that reads: a computed answer, an outside-world query); writes are ``create``, ``update``
    (fields of one record), ``transition`` (a lifecycle move), ``delete``, ``adjust`` (add to a
    number), ``append``/``remove`` (an item of a list field), ``send`` (a message leaves the
    world: an email, a text, a webhook) and ``action`` (any other change). ``entity``: the kind of
    record the tool is about, singular (``deal``); ``collection``: the state field holding those
    records (``deals``); ``reads``: the record fields a read filters or searches by, or a write
    checks; ``sets``: the record fields a write sets from its arguments or by itself (a
    transition's status field, a ``sent_at`` stamp).
    """

    op: Op
    entity: str | None = None
    collection: str | None = None
    reads: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.op not in READ_OPS + WRITE_OPS:
            raise TypeError(f"unknown tool op {self.op!r}; one of {', '.join(READ_OPS + WRITE_OPS)}")
        for name in ("reads", "sets"):
            if isinstance(getattr(self, name), str):  # ("stage") is a string, not a tuple of one field
                raise TypeError(
                    f"ToolMeta.{name} must be a tuple of field names, not the string {getattr(self, name)!r}"
                )

    @property
    def kind(self) -> ToolKind:
        return "read" if self.op in READ_OPS else "write"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "entity": self.entity, "collection": self.collection, "kind": self.kind,
                "reads": list(self.reads), "sets": list(self.sets)}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolMeta:
        """The inverse of :meth:`to_json` (``kind`` follows from ``op``)."""
        return cls(data["op"], data.get("entity"), data.get("collection"), tuple(data.get("reads", ())),
                   tuple(data.get("sets", ())))  # fmt: skip


class Param:
    """One parameter of a tool: its annotation, whether it may be omitted, and its validator
    (built on first use: a library of 10,000 tools is ready long before each has been called)."""

    __slots__ = ("_adapter", "annotation", "default", "iso", "name", "required")

    def __init__(self, name: str, annotation: Any, required: bool, default: Any = None, iso: bool = False) -> None:
        self.name, self.annotation, self.required, self.default = name, annotation, required, default
        self.iso = iso  # a date or date-time: numbers are refused, not read as Unix timestamps
        self._adapter: TypeAdapter[Any] | None = None

    @property
    def adapter(self) -> TypeAdapter[Any]:
        if self._adapter is None:
            self._adapter = validator(self.annotation)
        return self._adapter


SchemaBuilder = Callable[[], tuple[dict[str, Any], dict[str, Any]]]


class Tool:
    """One tool of a service: its function, kind, parameters and schemas.

    The JSON schemas may be given, or built on first use by ``schemas`` (a library of a hundred
    services imports in a fraction of the time when pydantic's schema generation waits until a
    listing, a describe or the task generator asks for a tool's schema).
    """

    def __init__(
        self,
        service: str,
        name: str,
        kind: ToolKind,
        description: str,
        func: Callable[..., Any],
        params: tuple[Param, ...] | Deferred,
        result_adapter: TypeAdapter[Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        schemas: SchemaBuilder | None = None,
        meta: ToolMeta | None = None,
        cache_key: str | None = None,
        result: Any = Any,
    ) -> None:
        if (input_schema is None or output_schema is None) and schemas is None:
            raise TypeError(f"tool {name!r} needs its schemas or a builder of them")
        self.service, self.name, self.kind, self.description = service, name, kind, description
        self.func = func
        # a Deferred when the tool is listed before it is built (a spec-run service read from its
        # manifest: servers.engine); resolved by the first validation
        self._params = params
        self._result_adapter, self.result = result_adapter, result
        self._input_schema, self._output_schema, self._schemas = input_schema, output_schema, schemas
        self._names: frozenset[str] | None = None
        if meta is not None and meta.kind != kind:
            raise TypeError(f"tool {service}.{name} is a {kind} tool but its op {meta.op!r} is a {meta.kind}")
        self.meta = meta
        self.cache_key = cache_key

    def __repr__(self) -> str:
        return f"Tool({self.service}.{self.name}, {self.kind})"

    def _build_schemas(self) -> None:
        assert self._schemas is not None
        code = getattr(self.func, "__code__", None)
        covered = self.cache_key is not None or (code is not None and schema_cache.covered(code.co_filename))
        cache = schema_cache.shared() if covered else None
        if cache is None:
            self._input_schema, self._output_schema = self._schemas()
            return
        key = self.cache_key or f"tool:{self.func.__module__}:{self.func.__qualname__}:{self.service}.{self.name}"
        self._input_schema, self._output_schema = cache.get_or_make(key, self._schemas)

    @property
    def result_adapter(self) -> TypeAdapter[Any]:
        """The validator that dumps results (built on first use, from ``result`` when not given)."""
        if self._result_adapter is None:
            self._result_adapter = validator(resolved(self.result))
        return self._result_adapter

    @property
    def input_schema(self) -> dict[str, Any]:
        if self._input_schema is None:
            self._build_schemas()
        assert self._input_schema is not None
        return self._input_schema

    @property
    def output_schema(self) -> dict[str, Any]:
        if self._output_schema is None:
            self._build_schemas()
        assert self._output_schema is not None
        return self._output_schema

    @property
    def params(self) -> tuple[Param, ...]:
        params = self._params
        if isinstance(params, Deferred):
            params = self._params = params.get()
        return params

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        """The validated keyword arguments, or a message naming every bad argument."""
        names = self._names
        if names is None:
            names = self._names = frozenset(p.name for p in self.params)
        problems: list[str] = [f"unknown argument {k!r}" for k in arguments if k not in names]
        values: dict[str, Any] = {}
        for param in self.params:
            if param.name in arguments:
                if param.iso and _has_number(arguments[param.name]):
                    problems.append(f"argument {param.name!r}: expected ISO 8601 text, not a number")
                    continue
                try:
                    values[param.name] = param.adapter.validate_python(arguments[param.name])
                except ValidationError as exc:
                    problems.extend(_describe_errors(param.name, exc))
            elif param.required:
                problems.append(f"missing required argument {param.name!r}")
            else:
                default = param.default
                values[param.name] = copy.copy(default) if isinstance(default, list | dict | set) else default
        if problems:
            return f"invalid arguments for {self.name!r}: " + "; ".join(problems)
        return values

    def invoke(self, state: BaseModel, arguments: Any) -> Envelope:
        """Validate ``arguments``, run the tool on ``state`` and return the envelope. Never raises."""
        values = self.prepare(arguments)
        if isinstance(values, str):
            return error(400, values)
        return self.run(state, values)

    def prepare(self, arguments: Any) -> dict[str, Any] | str:
        """The validated keyword arguments, or the message of the 400 envelope :meth:`invoke` gives.

        It needs no state, so a caller can refuse bad input before it touches (or copies) one.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return f"arguments of {self.name!r} must be a JSON object, got {type(arguments).__name__}"
        return self.validate(arguments)

    def run(self, state: BaseModel, values: dict[str, Any]) -> Envelope:
        """Run the tool on ``state`` with arguments :meth:`prepare` validated. Never raises."""
        try:
            result = self.func(state, **values)
        except ServiceError as exc:
            return error(exc.code, exc.message)
        except Exception as exc:  # a bug in a tool must not escape the envelope boundary
            return error(500, f"internal error in {self.name!r}: {type(exc).__name__}: {exc}")
        if isinstance(result, BaseModel):
            return ok(result.model_dump(mode="json"))
        return ok(self.result_adapter.dump_python(result, mode="json"))


def _has_number(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_number(v) for v in value)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _describe_errors(name: str, exc: ValidationError) -> list[str]:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in (name, *err["loc"]))
        parts.append(f"argument {loc!r}: {err['msg']}")
    return parts


_HINTS: dict[tuple[int, str], Any] = {}


def _hint(func: Callable[..., Any], annotation: Any) -> Any:
    """One evaluated annotation; a string annotation is evaluated once per module and text."""
    if not isinstance(annotation, str):
        return annotation
    key = (id(func.__globals__), annotation)
    found = _HINTS.get(key)
    if found is None:
        found = _HINTS[key] = eval(annotation, func.__globals__)  # what get_type_hints does, cached
    return found


def _parameters(func: Callable[..., Any]) -> list[tuple[str, Any]]:
    """(name, default or inspect.Parameter.empty) of each parameter, read from the code object.

    Cheaper than ``inspect.signature`` for the plain functions tools are; wrapped callables
    still go through ``inspect``.
    """
    code = getattr(func, "__code__", None)
    if code is None or hasattr(func, "__wrapped__") or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return [(p.name, p.default) for p in inspect.signature(func).parameters.values()]
    positional = code.co_varnames[: code.co_argcount]
    defaults = func.__defaults__ or ()
    empty = inspect.Parameter.empty
    out = [(name, empty) for name in positional[: len(positional) - len(defaults)]]
    out += list(zip(positional[len(positional) - len(defaults) :], defaults, strict=True))
    kwdefaults = func.__kwdefaults__ or {}
    for name in code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]:
        out.append((name, kwdefaults.get(name, empty)))
    return out


class Deferred:
    """An annotation made on first use (a spec-run tool's result model: see :mod:`servers.engine`)."""

    __slots__ = ("_made", "make")

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self._made: Any = None

    def get(self) -> Any:
        if self._made is None:
            self._made = self.make()
        return self._made


def resolved(annotation: Any) -> Any:
    return annotation.get() if isinstance(annotation, Deferred) else annotation


@dataclass(frozen=True)
class Declared:
    """One parameter as declared: its annotation, whether it is required, its default and description."""

    name: str
    annotation: Any
    required: bool
    default: Any = None
    description: str | None = None


def build_tool(service: str, func: Callable[..., Any], kind: ToolKind, meta: ToolMeta | None = None) -> Tool:
    """The tool of a typed function ``(state, **typed_args) -> result`` with a Google docstring."""
    annotations = getattr(func, "__annotations__", {})
    hints = {name: _hint(func, value) for name, value in annotations.items()}
    description, param_docs = parse_docstring(func.__doc__)
    if not description:
        raise TypeError(f"tool {service}.{func.__name__} needs a docstring")
    params = _parameters(func)
    if not params:
        raise TypeError(f"tool {service}.{func.__name__} must take the state as its first parameter")
    declared: list[Declared] = []
    for name, default in params[1:]:
        if name not in hints:
            raise TypeError(f"parameter {name!r} of {service}.{func.__name__} needs a type annotation")
        required = default is inspect.Parameter.empty
        declared.append(Declared(name, hints[name], required, None if required else default, param_docs.get(name)))
    if "return" not in hints:
        raise TypeError(f"tool {service}.{func.__name__} needs a return annotation")
    return make_tool(service, func.__name__, kind, description, func, declared, hints["return"], meta)


def make_tool(
    service: str,
    name: str,
    kind: ToolKind,
    description: str,
    func: Callable[..., Any],
    declared: Sequence[Declared],
    result: Any,
    meta: ToolMeta | None = None,
    cache_key: str | None = None,
) -> Tool:
    """A tool from explicit parameters (what the spec engine builds; :func:`build_tool` reads them
    from a function). ``cache_key`` names the schemas in the disk cache when they are a function of
    something other than the package's code (a spec file's hash)."""
    specs = tuple(Param(d.name, d.annotation, d.required, d.default, _iso(d.annotation)) for d in declared)

    def schemas() -> tuple[dict[str, Any], dict[str, Any]]:
        properties: dict[str, Any] = {}
        defs: dict[str, Any] = {}
        for param in declared:
            prop = dict(adapter(param.annotation)[1])
            defs.update(prop.pop("$defs", {}))
            if param.description:
                prop["description"] = param.description
            if not param.required:
                prop["default"] = to_jsonable_python(param.default)
            properties[param.name] = prop
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": [p.name for p in declared if p.required],
            "additionalProperties": False,
        }
        if defs:
            input_schema["$defs"] = defs
        result_schema = adapter(resolved(result))[2]
        output_schema = _OUTPUT_SCHEMAS.get(id(result_schema))
        if output_schema is None:
            output_schema = _OUTPUT_SCHEMAS.setdefault(id(result_schema), envelope_schema(result_schema))
        return input_schema, output_schema

    return Tool(
        service=service,
        name=name,
        kind=kind,
        description=description,
        func=func,
        params=specs,
        result=result,
        schemas=schemas,
        meta=meta,
        cache_key=cache_key,
    )
