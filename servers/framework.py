"""The service framework: typed state, read/write tools, seeds, the envelope boundary.

A service is a module that builds one :class:`Service` (conventionally named ``service``)::

    class Note(Record):
        id: NoteId
        title: Title

    class NotesState(ServiceState):
        notes: dict[str, Note] = {}

    service = Service("notes", version=1, category="productivity",
                      description="Personal notes.", state=NotesState, seed=seed)

    @service.write
    def create_note(state: NotesState, title: Title) -> Note:
        \"\"\"Create a note.

        Args:
            title: Title of the new note.
        \"\"\"
        note = Note(id=state.new_id("note"), title=title)
        state.notes[note.id] = note
        return note

Tools are plain functions ``(state, **typed_args) -> result``. Errors are exceptions inside the
service (:class:`NotFound`, :class:`BadRequest`, …) and envelopes at its boundary
(:meth:`Service.call`): ``{"success": true, "data": ...}`` or
``{"success": false, "error": {"code": 404, "message": ...}}``. In-process calls and MCP calls go
through the same boundary, so both behave identically. A write tool must validate everything
before its first mutation; the conformance checker verifies that it does.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import inspect
import random
import re
import sys
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, NaiveDatetime, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from servers import schema_cache
from servers.state import Change, diff, field_names, lazy_copy, snapshot, stable_hash
from servers.types import Count, Offset

if TYPE_CHECKING:
    from servers.population import Population

ToolKind = Literal["read", "write"]
Envelope = dict[str, Any]

WORLD_EPOCH = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
"""The default clock of every world: Monday 2 March 2026, 09:00 UTC."""


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


def ok(data: Any) -> Envelope:
    return {"success": True, "data": data}


def error(code: int, message: str) -> Envelope:
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
# Records and states


class Record(BaseModel):
    """Base of every stored entity and every structured result.

    Assignments are validated so that a stored value always has its declared type (an ``int``
    written into a ``float`` field would otherwise dump as ``0`` but restore as ``0.0`` and change
    the state hash across a snapshot round trip).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ServiceState(BaseModel):
    """Base of every service state: ``extra="forbid"``, an id sequence and a world clock."""

    model_config = ConfigDict(extra="forbid")

    seq: int = 0
    clock: dt.datetime = WORLD_EPOCH

    def new_id(self, prefix: str) -> str:
        """A fresh id such as ``msg_0042``, deterministic given the state."""
        self.seq += 1
        return f"{prefix}_{self.seq:04d}"

    def tick(self, minutes: int = 1) -> dt.datetime:
        """Advance the service clock and return the new time (writes stamp records with it)."""
        self.clock = self.clock + dt.timedelta(minutes=minutes)
        return self.clock

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's JSON schema of the state: built once per class and arguments, a fresh copy
        each call (building it walks every record model, tens of milliseconds for a large state,
        and the task generator and the conformance checker ask for it per service and run)."""
        try:
            key = (cls, args, tuple(sorted(kwargs.items())))
            found = _STATE_SCHEMAS.get(key)
        except TypeError:  # an unhashable argument: not cached
            return super().model_json_schema(*args, **kwargs)
        if found is None:
            found = _STATE_SCHEMAS[key] = cls._generated_schema(args, kwargs)
        return copy.deepcopy(found)

    @classmethod
    def _generated_schema(cls, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        module = sys.modules.get(cls.__module__)
        cache = None
        if not args and not kwargs and schema_cache.covered(getattr(module, "__file__", None)):
            cache = schema_cache.shared()
        if cache is None:
            return super().model_json_schema(*args, **kwargs)
        generate = super().model_json_schema
        return dict(cache.get_or_make(f"state:{cls.__module__}:{cls.__qualname__}", lambda: (generate(),))[0])


_STATE_SCHEMAS: dict[Any, dict[str, Any]] = {}


T = TypeVar("T")
S = TypeVar("S", bound=ServiceState)


class Page(BaseModel, Generic[T]):
    """One page of a listing."""

    model_config = ConfigDict(extra="forbid")

    items: list[T] = Field(description="Records on this page.")
    total: Count = Field(description="Number of records matching the filters.")
    next_offset: Offset | None = Field(description="Offset of the next page, or null on the last page.")


def paginate(records: Iterable[T], offset: int, limit: int) -> Page[T]:
    """Slice a filtered listing into one page."""
    rows = list(records)
    end = offset + limit
    # Unparameterised on purpose: items serialise by their runtime type, whatever T is.
    return Page(items=rows[offset:end], total=len(rows), next_offset=end if end < len(rows) else None)


def require(mapping: dict[str, T], key: str, kind: str) -> T:
    """``mapping[key]`` or a 404 that quotes the id."""
    try:
        return mapping[key]
    except KeyError:
        raise NotFound(f"{kind} {key!r} not found") from None


def contains(haystack: str | None, needle: str | None) -> bool:
    """Case-insensitive substring match; an absent needle matches everything."""
    return needle is None or (haystack is not None and needle.lower() in haystack.lower())


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
        made = validator(annotation)
        found = (made, made.json_schema(), made.json_schema(mode="serialization"))
        _ADAPTERS[key] = found
    return found


_VALIDATORS: dict[Any, TypeAdapter[Any]] = {}


def validator(annotation: Any) -> TypeAdapter[Any]:
    """The cached adapter of one annotation, without its JSON schemas (those cost most)."""
    try:
        key: Any = annotation
        hash(key)
    except TypeError:
        key = repr(annotation)
    found = _VALIDATORS.get(key)
    if found is None:
        found = _VALIDATORS.setdefault(key, TypeAdapter(annotation))
    return found


def _iso(annotation: Any) -> bool:
    """Whether an annotation is (a list of / an optional / an annotated) date or date-time."""
    if isinstance(annotation, type):  # pydantic's AwareDatetime is a marker class, not a datetime subclass
        return issubclass(annotation, dt.date) or annotation in (AwareDatetime, NaiveDatetime)
    return any(_iso(arg) for arg in typing.get_args(annotation) if not isinstance(arg, FieldInfo))


_OUTPUT_SCHEMAS: dict[int, dict[str, Any]] = {}


@dataclass(frozen=True)
class Param:
    """One parameter of a tool: its validator and whether it may be omitted."""

    name: str
    adapter: TypeAdapter[Any]
    required: bool
    default: Any = None
    iso: bool = False  # a date or date-time: numbers are refused, not read as Unix timestamps


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
        params: tuple[Param, ...],
        result_adapter: TypeAdapter[Any],
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        schemas: SchemaBuilder | None = None,
    ) -> None:
        if (input_schema is None or output_schema is None) and schemas is None:
            raise TypeError(f"tool {name!r} needs its schemas or a builder of them")
        self.service, self.name, self.kind, self.description = service, name, kind, description
        self.func, self.params, self.result_adapter = func, params, result_adapter
        self._input_schema, self._output_schema, self._schemas = input_schema, output_schema, schemas
        self._names = frozenset(p.name for p in params)

    def __repr__(self) -> str:
        return f"Tool({self.service}.{self.name}, {self.kind})"

    def _build_schemas(self) -> None:
        assert self._schemas is not None
        code = getattr(self.func, "__code__", None)
        cache = schema_cache.shared() if code is not None and schema_cache.covered(code.co_filename) else None
        if cache is None:
            self._input_schema, self._output_schema = self._schemas()
            return
        key = f"tool:{self.func.__module__}:{self.func.__qualname__}:{self.service}.{self.name}"
        self._input_schema, self._output_schema = cache.get_or_make(key, self._schemas)

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

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        """The validated keyword arguments, or a message naming every bad argument."""
        problems: list[str] = [f"unknown argument {k!r}" for k in arguments if k not in self._names]
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

    def invoke(self, state: ServiceState, arguments: Any) -> Envelope:
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

    def run(self, state: ServiceState, values: dict[str, Any]) -> Envelope:
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


def _build_tool(service: str, func: Callable[..., Any], kind: ToolKind) -> Tool:
    annotations = getattr(func, "__annotations__", {})
    hints = {name: _hint(func, value) for name, value in annotations.items()}
    description, param_docs = parse_docstring(func.__doc__)
    if not description:
        raise TypeError(f"tool {service}.{func.__name__} needs a docstring")
    params = _parameters(func)
    if not params:
        raise TypeError(f"tool {service}.{func.__name__} must take the state as its first parameter")
    specs: list[Param] = []
    for name, default in params[1:]:
        if name not in hints:
            raise TypeError(f"parameter {name!r} of {service}.{func.__name__} needs a type annotation")
        required = default is inspect.Parameter.empty
        specs.append(Param(name, validator(hints[name]), required, None if required else default, _iso(hints[name])))
    if "return" not in hints:
        raise TypeError(f"tool {service}.{func.__name__} needs a return annotation")
    result = hints["return"]

    def schemas() -> tuple[dict[str, Any], dict[str, Any]]:
        properties: dict[str, Any] = {}
        defs: dict[str, Any] = {}
        for param in specs:
            prop = dict(adapter(hints[param.name])[1])
            defs.update(prop.pop("$defs", {}))
            if param.name in param_docs:
                prop["description"] = param_docs[param.name]
            if not param.required:
                prop["default"] = to_jsonable_python(param.default)
            properties[param.name] = prop
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": [p.name for p in specs if p.required],
            "additionalProperties": False,
        }
        if defs:
            input_schema["$defs"] = defs
        result_schema = adapter(result)[2]
        output_schema = _OUTPUT_SCHEMAS.get(id(result_schema))
        if output_schema is None:
            output_schema = _OUTPUT_SCHEMAS.setdefault(id(result_schema), envelope_schema(result_schema))
        return input_schema, output_schema

    return Tool(
        service=service,
        name=func.__name__,
        kind=kind,
        description=description,
        func=func,
        params=tuple(specs),
        result_adapter=validator(result),
        schemas=schemas,
    )


# ---------------------------------------------------------------------------------------------
# Services


_BASE_FIELDS = frozenset(ServiceState.model_fields)  # seq and clock: every state has them
SeedFn = Callable[[random.Random, "Population"], Any]
Source = Literal["hand-written", "built", "simulated", "external"]


class Service(Generic[S]):
    """A named, versioned set of read/write tools over one typed state.

    ``system_fields`` declares the names of the fields the service maintains itself as a side
    effect of writes, never set from a tool argument as the business outcome of a call: creation
    and modification stamps (``created_at``, ``updated_at``, ``modified_at``), version numbers,
    counts and totals kept in sync with other records (a thread's ``reply_count``), numbers drawn
    from a sequence. A name covers record fields (in any collection of the state, nested records
    included, whichever model has a field of that name) and top-level state fields (a counter such
    as ``next_invoice_number``). A timestamp that *is* the outcome of an action (``sent_at``,
    ``closed_at``, ``paid_at``) is not a system field. :attr:`system_fields` always adds the
    fields every state has (``seq`` and ``clock``); a name that is no field of the state or of a
    record model inside it is a ``ValueError``. Comparisons of what a write changed against what
    a task asked for ignore these fields.
    """

    def __init__(
        self,
        name: str,
        *,
        version: int,
        category: str,
        description: str,
        state: type[S],
        seed: Callable[[random.Random, Population], S],
        source: Source = "hand-written",
        system_fields: Iterable[str] = (),
    ) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]{1,30}", name) or "__" in name:
            raise ValueError(f"service name {name!r} must be lower_snake_case without '__'")
        declared = frozenset([system_fields] if isinstance(system_fields, str) else system_fields)
        if declared:
            unknown = sorted(declared - field_names(state))
            if unknown:
                raise ValueError(
                    f"system_fields of service {name!r} name no field of {state.__name__} or its records: {unknown}"
                )
        self.system_fields: frozenset[str] = declared | _BASE_FIELDS
        """Fields the service maintains itself on writes, ``seq`` and ``clock`` included."""
        self.name = name
        self.version = version
        self.category = category
        self.description = description
        self.state_type = state
        self.seed_fn = seed
        self.source: Source = source
        self.tools: dict[str, Tool] = {}

    def __repr__(self) -> str:
        return f"Service({self.name!r}, version={self.version}, tools={len(self.tools)})"

    def _register(self, func: Callable[..., Any], kind: ToolKind) -> Callable[..., Any]:
        if func.__name__ in self.tools:
            raise ValueError(f"tool {func.__name__!r} is registered twice in service {self.name!r}")
        self.tools[func.__name__] = _build_tool(self.name, func, kind)
        return func

    def read(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Register a tool that only reads the state."""
        return self._register(func, "read")

    def write(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Register a tool that may change the state (it validates before it mutates)."""
        return self._register(func, "write")

    # -- state lifecycle ---------------------------------------------------------------------

    def seed_state(self, seed: int) -> S:
        """The initial state for world seed ``seed``: same seed, same state hash."""
        from servers.population import Population

        rng = random.Random(f"{self.name}:{seed}")
        state = self.seed_fn(rng, Population.generate(seed))
        if not isinstance(state, self.state_type):
            raise TypeError(f"seed of {self.name!r} returned {type(state).__name__}, not {self.state_type.__name__}")
        return state

    def empty_state(self) -> S:
        return self.state_type()

    def snapshot(self, state: S) -> dict[str, Any]:
        return snapshot(state)

    def restore(self, data: dict[str, Any]) -> S:
        return self.state_type.model_validate(data)

    def copy_state(self, state: S, data: dict[str, Any]) -> S:
        """A private copy of ``state``, whose snapshot is ``data``, for a world about to change it.

        Fields are copied on first use (:func:`servers.state.lazy_copy`) where the state's class
        allows it, so a write pays for the collections it touches, not for the whole state;
        ``restore(data)`` otherwise. ``state`` must stay unchanged while the copy lives.
        """
        if type(self).restore is Service.restore and type(state) is self.state_type:
            copied = lazy_copy(state, data)
            if copied is not None:
                return copied
        return self.restore(data)

    def state_hash(self, state: S) -> str:
        return stable_hash(snapshot(state))

    def diff(self, before: S | dict[str, Any], after: S | dict[str, Any]) -> list[Change]:
        a = before if isinstance(before, dict) else snapshot(before)
        b = after if isinstance(after, dict) else snapshot(after)
        return diff(a, b)

    # -- calling -----------------------------------------------------------------------------

    def call(self, state: S, tool: str, arguments: Any = None) -> Envelope:
        """Call ``tool`` on ``state``; always returns an envelope, never raises."""
        found = self.tools.get(tool)
        if found is None:
            return error(404, f"unknown tool {tool!r} in service {self.name!r}; known: {sorted(self.tools)}")
        return found.invoke(state, arguments)

    @property
    def read_tools(self) -> Sequence[Tool]:
        return [t for t in self.tools.values() if t.kind == "read"]

    @property
    def write_tools(self) -> Sequence[Tool]:
        return [t for t in self.tools.values() if t.kind == "write"]
