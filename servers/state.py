"""Snapshots, stable hashes and structured diffs of JSON-serialisable states.

A snapshot is the ``model_dump(mode="json")`` of a state: plain JSON, stable across processes,
restorable with ``model_validate``. The hash is SHA-256 over canonical JSON (sorted keys, no
whitespace), so equal states hash equally whatever their insertion order. A diff is a flat list
of path-level changes, the unit that rubrics and write recordings talk about.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import json
import typing
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from enum import Enum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

M = TypeVar("M", bound=BaseModel)

# Here rather than in `servers.framework` (which re-exports it) so that the population, which
# stamps its people with the world's "now", need not import the framework that seeds from it.
WORLD_EPOCH = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
"""The default clock of every world: Monday 2 March 2026, 09:00 UTC."""


class Change(BaseModel):
    """One path-level difference between two JSON values."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Literal["add", "remove", "change"]
    path: str
    before: Any = None
    after: Any = None


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: the input of every hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def stable_hash(value: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def _escape(key: str) -> str:
    # JSON-pointer escaping keeps a key containing "/" from reading as two path segments.
    return key.replace("~", "~0").replace("/", "~1")


def diff(before: Any, after: Any, path: str = "") -> list[Change]:
    """Path-level changes that turn ``before`` into ``after`` (JSON-pointer-like paths).

    Objects are compared key by key; lists of equal length element by element; anything else
    (scalars, lists whose length changed) as a whole value.
    """
    if before is after:  # copy-on-write states share unchanged snapshots: nothing to compare
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[Change] = []
        for key in sorted(before.keys() | after.keys()):
            if key not in after:
                changes.append(Change(op="remove", path=f"{path}/{_escape(str(key))}", before=before[key]))
            elif key not in before:
                changes.append(Change(op="add", path=f"{path}/{_escape(str(key))}", after=after[key]))
            else:
                old, new = before[key], after[key]
                # Equal subtrees are skipped with one C-level comparison instead of a Python walk.
                if old is new or (type(old) is type(new) and isinstance(old, dict | list) and old == new):
                    continue
                changes.extend(diff(old, new, f"{path}/{_escape(str(key))}"))
        return changes
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        changes = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            changes.extend(diff(old, new, f"{path}/{index}"))
        return changes
    if before == after and type(before) is type(after):
        return []
    return [Change(op="change", path=path or "/", before=before, after=after)]


def snapshot(state: BaseModel) -> dict[str, Any]:
    """A JSON-serialisable copy of ``state``.

    For a :func:`lazy_copy`, only the fields it no longer shares with its source are dumped; the
    others are the source's snapshot's own (read-only) values.
    """
    lazy = _LAZY.get(id(state)) if _LAZY else None
    if lazy is None:
        return state.model_dump(mode="json")
    values = state.__dict__
    shared = {name for name, value in lazy.values.items() if values.get(name) is value}
    records = {name for name, value in values.items() if type(value) is RecordDict and name not in shared}
    if not shared and not records:
        return state.model_dump(mode="json")
    dumped = state.model_dump(mode="json", exclude=shared | records)
    out: dict[str, Any] = {}
    for key in lazy.snap:
        if key in shared:
            out[key] = lazy.snap[key]
        elif key in records:
            out[key] = values[key].dump()
        else:
            out[key] = dumped[key]
    return out


# ---------------------------------------------------------------------------------------------
# Lazy copies: copy-on-write per field


class _Lazy:
    """What a lazy copy shares: its source's field values and the source's snapshot."""

    __slots__ = ("ref", "snap", "values")

    def __init__(self, values: dict[str, Any], snap: dict[str, Any]) -> None:
        self.values = values
        self.snap = snap
        self.ref: Any = None


_LAZY: dict[int, _Lazy] = {}  # id of a live lazy copy -> what it shares (dropped when it dies)
_IMMUTABLE = (str, int, float, bool, type(None), bytes, dt.date, dt.time, dt.timedelta, Decimal, Enum)
_ELIGIBLE: dict[type[BaseModel], bool] = {}


_PEEKING: contextvars.ContextVar[bool] = contextvars.ContextVar("peeking", default=False)


@contextmanager
def peeking() -> Iterator[None]:
    """Run a read tool: fields a lazy copy still shares are read in place, not copied first.

    Only for code that changes nothing (conformance checks every read tool for it: ``read-only``);
    a change made while peeking would reach the source state and every copy sharing it."""
    token = _PEEKING.set(True)
    try:
        yield
    finally:
        _PEEKING.reset(token)


class _SharedField:
    """Data descriptor of one field of a model class that has lazy copies: reading the field of a
    lazy copy that still shares its value with the source first replaces it by a private copy."""

    __slots__ = ("name", "records")

    def __init__(self, name: str, records: bool = False) -> None:
        self.name = name
        self.records = records  # a ``dict[str, Model]`` field: shared record by record (RecordDict)

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:  # pydantic keeps no field attributes on a model class: neither do we
            raise AttributeError(self.name)
        try:
            value = obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        lazy = _LAZY.get(id(obj)) if _LAZY else None
        if lazy is not None and value is lazy.values.get(self.name) and not isinstance(value, _IMMUTABLE):
            if _PEEKING.get():
                return value  # a read tool only looks: the shared value serves it as it is
            if self.records:
                # A collection of records: copied record by record, as the tool reaches them.
                value = obj.__dict__[self.name] = RecordDict.over(value, lazy.snap[self.name])
                return value
            # Validated again from the source's snapshot, as a whole-state restore would.
            type(obj).__pydantic_validator__.validate_assignment(obj, self.name, lazy.snap[self.name])
            value = obj.__dict__[self.name]
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value  # what pydantic's own assignment does (it never calls this)


class RecordDict(dict[str, Any]):
    """A record collection (``dict[str, Model]``) of a lazy copy, copied record by record.

    It starts out holding its source's record objects. Whatever hands a record out to code that
    may change it (``d[key]``, ``get``, ``values``, ``items``, ``pop``, ``setdefault``, ``copy``,
    and ``dict(d)``/``{**d}``, which go through the keys and ``d[key]`` because ``__iter__`` is
    overridden) first replaces it by a private copy validated from the source's snapshot, so a
    write tool that changes one record of a hundred copies one. While peeking (a read tool),
    records are handed out as they are. Iterating the keys, ``len`` and ``in`` copy nothing.
    """

    __slots__ = ("_snap", "_source")

    _source: dict[str, Any]
    _snap: dict[str, Any]

    @classmethod
    def over(cls, source: dict[str, Any], snap: dict[str, Any]) -> RecordDict:
        """A collection sharing every record of ``source`` (whose snapshot is ``snap``)."""
        out = cls(dict.items(source))  # dict.items: never the overrides of a source RecordDict
        out._source = source
        out._snap = snap
        return out

    def _own(self, key: str) -> Any:
        record: Any = dict.__getitem__(self, key)
        if record is dict.get(self._source, key) and not _PEEKING.get():
            model = typing.cast(type[BaseModel], type(record))
            record = model.model_validate(self._snap[key])
            dict.__setitem__(self, key, record)
        return record

    def _own_all(self) -> None:
        if not _PEEKING.get():
            for key in list(dict.keys(self)):
                self._own(key)

    def __getitem__(self, key: str) -> Any:
        return self._own(key)

    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def get(self, key: str, default: Any = None) -> Any:
        return self._own(key) if dict.__contains__(self, key) else default

    def values(self) -> Any:
        self._own_all()
        return dict.values(self)

    def items(self) -> Any:
        self._own_all()
        return dict.items(self)

    def pop(self, key: str, *default: Any) -> Any:
        if dict.__contains__(self, key):
            self._own(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        if dict.__len__(self):
            self._own(next(reversed(dict.keys(self))))
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        return self._own(key) if dict.__contains__(self, key) else dict.setdefault(self, key, default)

    def copy(self) -> dict[str, Any]:
        self._own_all()
        return dict(dict.items(self))

    def __or__(self, other: Any) -> dict[str, Any]:  # type: ignore[override]
        return self.copy() | other

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickled and deep-copied as the plain dict it stands for (its records made private first).
        return (dict, (self.copy(),))

    def dump(self) -> dict[str, Any]:
        """The collection as JSON: the source's snapshot of every record still shared."""
        source, snap = self._source, self._snap
        return {
            key: snap[key] if record is dict.get(source, key) else record.model_dump(mode="json")
            for key, record in dict.items(self)
        }


def peek_values(records: dict[str, Any]) -> Any:
    """The values of a record collection for code that only reads them: shared records are not
    copied (``dict.values`` skips :class:`RecordDict`'s copying)."""
    return dict.values(records)


def _is_records(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not dict:
        return False
    args = typing.get_args(annotation)
    return len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], BaseModel)


def lazy_copy(model: M, snap: dict[str, Any]) -> M | None:
    """A private copy of ``model`` (whose snapshot is ``snap``) made field by field, on first use.

    The copy starts out sharing every field value with ``model``; reading a field through the
    copy gives it its own value first, validated from ``snap`` like a whole-state restore. A
    write tool that touches two collections of a state thus copies those two, and the copy's
    snapshot re-dumps only them. ``model`` must not change while the copy lives (copy-on-write
    states never do once shared). None when the model's class does not allow it (validators
    over the whole model, private attributes, extra fields, a custom serializer, …): restore
    from ``snap`` then.
    """
    cls = type(model)
    if not _eligible(cls, model, snap):
        return None
    return _make_lazy(cls, model, snap)


def _make_lazy(cls: type[M], model: M, snap: dict[str, Any]) -> M:
    values = dict(model.__dict__)
    copy = cls.__new__(cls)
    object.__setattr__(copy, "__dict__", dict(values))
    object.__setattr__(copy, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    object.__setattr__(copy, "__pydantic_extra__", None)
    object.__setattr__(copy, "__pydantic_private__", None)
    key = id(copy)
    lazy = _Lazy(values, snap)
    lazy.ref = weakref.ref(copy, lambda _ref: _LAZY.pop(key, None))
    _LAZY[key] = lazy
    return copy


def _probe(cls: type[M], model: M, snap: dict[str, Any]) -> bool:
    """Whether a copy snapshots like its source, before and after it takes every field."""
    try:
        probe = _make_lazy(cls, model, snap)
        if snapshot(probe) != snap:
            return False
        for name in cls.model_fields:
            value = getattr(probe, name)
            if type(value) is RecordDict and value:
                value[next(iter(value))]  # one record copied: it must dump as it was
                if snapshot(probe) != snap:
                    return False
                value.values()
        return probe.model_dump(mode="json") == snap and snapshot(probe) == snap
    except Exception:  # a state that does not round-trip field by field: copied whole instead
        return False


def _eligible(cls: type[BaseModel], model: BaseModel, snap: dict[str, Any]) -> bool:
    found = _ELIGIBLE.get(cls)
    if found is None:
        decorators = cls.__pydantic_decorators__
        found = not (
            decorators.model_validators
            or decorators.root_validators
            or decorators.model_serializers
            or cls.__private_attributes__
            or cls.__pydantic_post_init__
            or cls.model_config.get("extra") == "allow"
            or cls.model_config.get("frozen")
            or getattr(cls, "__pydantic_root_model__", False)
            or any(f.frozen for f in cls.model_fields.values())
        )
        found = found and cls.__pydantic_complete__ and set(cls.model_fields) <= set(snap)
        if found:
            for name, info in cls.model_fields.items():
                if not isinstance(cls.__dict__.get(name), _SharedField):
                    setattr(cls, name, _SharedField(name, _is_records(info.annotation)))
            found = _probe(cls, model, snap)
        _ELIGIBLE[cls] = found
    return found


_FIELD_NAMES: dict[type[BaseModel], frozenset[str]] = {}


def field_names(model: type[BaseModel]) -> frozenset[str]:
    """Names of the fields of ``model`` and of every model reachable from its annotations.

    It walks ``model_fields`` (records in ``dict[str, Record]`` collections, lists, optionals and
    nested records), never a JSON schema: cheap enough for every service to check its
    ``system_fields`` when it is imported.
    """
    found = _FIELD_NAMES.get(model)
    if found is None:
        names: set[str] = set()
        seen: set[type[BaseModel]] = set()
        pending: list[Any] = [model]
        while pending:
            annotation = pending.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                if annotation not in seen:
                    seen.add(annotation)
                    for field_name, info in annotation.model_fields.items():
                        names.add(field_name)
                        pending.append(info.annotation)
            else:
                pending.extend(typing.get_args(annotation))
        found = _FIELD_NAMES[model] = frozenset(names)
    return found
