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
import random
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from servers import schema_cache
from servers.state import WORLD_EPOCH, Change, diff, field_names, lazy_copy, snapshot, stable_hash
from servers.tooling import (
    ENVELOPE_ERROR_SCHEMA,
    BadGateway,
    BadRequest,
    Conflict,
    Declared,
    Deferred,
    Envelope,
    Err,
    ErrorBody,
    Forbidden,
    NotFound,
    Ok,
    Op,
    Param,
    ServiceError,
    Tool,
    ToolKind,
    ToolMeta,
    Unavailable,
    adapter,
    build_tool,
    envelope_schema,
    error,
    make_tool,
    ok,
    parse_docstring,
    validator,
)
from servers.types import Count, Offset

# Re-exported: services import the whole boundary from here.
__all__ = [
    "ENVELOPE_ERROR_SCHEMA", "WORLD_EPOCH", "BadGateway", "BadRequest", "Conflict", "Declared", "Deferred", "Envelope",
    "Err", "ErrorBody", "Forbidden", "NotFound", "Ok", "Op", "Page", "Param", "Record", "Service", "ServiceError",
    "ServiceState", "Source", "Tool", "ToolKind", "ToolMeta", "Unavailable", "adapter", "build_tool", "contains",
    "envelope_schema", "error", "make_tool", "ok", "paginate", "parse_docstring", "require", "validator",
]  # fmt: skip

if TYPE_CHECKING:
    from servers.population import Population


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
# Services


_BASE_FIELDS = frozenset(ServiceState.model_fields)  # seq and clock: every state has them
Source = Literal["hand-written", "spec", "simulated", "external"]


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
        state: type[S] | Callable[[], type[S]],
        seed: Callable[[random.Random, Population], S],
        source: Source = "hand-written",
        system_fields: Iterable[str] = (),
        modelled_on: str = "",
    ) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]{1,30}", name) or "__" in name:
            raise ValueError(f"service name {name!r} must be lower_snake_case without '__'")
        declared = frozenset([system_fields] if isinstance(system_fields, str) else system_fields)
        self.system_fields: frozenset[str] = declared | _BASE_FIELDS
        """Fields the service maintains itself on writes, ``seq`` and ``clock`` included."""
        self.name = name
        self.version = version
        self.category = category
        self.description = description
        self.modelled_on = modelled_on
        """The real product(s) whose API the service follows ("" when none is named): what a tool's
        realism is judged against, shown by ``compoworld services list``."""
        # ``state`` is the state class, or a function making it on first use (the spec engine
        # builds a spec's pydantic models only when the service is first seeded or called).
        self._state: type[S] | None = state if isinstance(state, type) else None
        self._make_state: Callable[[], type[S]] | None = None if isinstance(state, type) else state
        self._declared = declared
        if self._state is not None:
            self._check_system_fields(self._state)
        self.seed_fn = seed
        self.source: Source = source
        self.tools: dict[str, Tool] = {}

    def __repr__(self) -> str:
        return f"Service({self.name!r}, version={self.version}, tools={len(self.tools)})"

    def _check_system_fields(self, state: type[S]) -> None:
        unknown = sorted(self._declared - field_names(state))
        if unknown:
            raise ValueError(
                f"system_fields of service {self.name!r} name no field of {state.__name__} or its records: {unknown}"
            )

    @property
    def state_type(self) -> type[S]:
        """The state class (made and checked on first use when the service was given a function)."""
        if self._state is None:
            assert self._make_state is not None
            made = self._make_state()
            self._check_system_fields(made)
            self._state = made
        return self._state

    def add_tool(self, tool: Tool) -> Tool:
        """Register a tool built elsewhere (the spec engine's); names are unique per service."""
        if tool.name in self.tools:
            raise ValueError(f"tool {tool.name!r} is registered twice in service {self.name!r}")
        self.tools[tool.name] = tool
        return tool

    def _register(self, func: Callable[..., Any], kind: ToolKind, meta: dict[str, Any]) -> Callable[..., Any]:
        declared = None
        if meta:
            try:
                fixed: dict[str, Any] = {
                    k: tuple(v) if k in ("reads", "sets") and not isinstance(v, str) else v for k, v in meta.items()
                }
                declared = ToolMeta(**fixed)
            except TypeError as exc:
                raise TypeError(f"tool {self.name}.{func.__name__}: bad metadata {meta}: {exc}") from None
        self.add_tool(build_tool(self.name, func, kind, declared))
        return func

    def read(self, func: Callable[..., Any] | None = None, /, **meta: Any) -> Any:
        """Register a tool that only reads the state: ``@service.read`` or, declaring what it does,
        ``@service.read(op="list", entity="deal", collection="deals", reads=("stage",))``
        (see :class:`~servers.tooling.ToolMeta`)."""
        if func is None:
            return lambda f: self._register(f, "read", meta)
        return self._register(func, "read", meta)

    def write(self, func: Callable[..., Any] | None = None, /, **meta: Any) -> Any:
        """Register a tool that may change the state (it validates before it mutates); metadata as
        for :meth:`read`, e.g. ``@service.write(op="create", entity="deal", sets=("title", "amount"))``."""
        if func is None:
            return lambda f: self._register(f, "write", meta)
        return self._register(func, "write", meta)

    # -- state lifecycle ---------------------------------------------------------------------

    def seed_state(self, seed: int) -> S:
        """The initial state for world seed ``seed``: same seed, same state hash."""
        # Imported here, not at module level, for start-up speed: the population needs faker
        # (~0.1 s to import), and listing or serving a service never seeds one.
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
