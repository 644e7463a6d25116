"""Snapshots, stable hashes and structured diffs of JSON-serialisable states.

A snapshot is the ``model_dump(mode="json")`` of a state: plain JSON, stable across processes,
restorable with ``model_validate``. The hash is SHA-256 over canonical JSON (sorted keys, no
whitespace), so equal states hash equally whatever their insertion order. A diff is a flat list
of path-level changes, the unit that rubrics and write recordings talk about.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


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
    """A JSON-serialisable copy of ``state``."""
    return state.model_dump(mode="json")
