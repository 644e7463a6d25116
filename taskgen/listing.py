"""The ``patterns`` column of ``compoworld services list``: the workflow patterns each service can join.

``servers`` may not import ``taskgen``, so this module registers :func:`fill_patterns` in
``servers.cli.EXTRA_COLUMNS``; the root command imports it with the ``services`` sub-command
(``training.cli.ALSO_IMPORT``). The ids are :func:`taskgen.coverage.service_patterns` over the
default hub (:func:`taskgen.generate.default_hub`, simulated services included).

Building that hub costs a listing about 0.4 s more, so the answer is kept in the listing cache of
:mod:`servers.schema_cache` (whose file is already per version of the ``servers`` code, hand-written
services included) under a key made from the size and modification time of every other file the
answer is read from: the pattern files, the catalog and simulated specs, the code of ``hub``,
``worldmodel`` and ``taskgen``, and the installed ``compoworld.services`` entry points. A listing
after the first then pays a few milliseconds of ``stat`` calls; light imports here keep it so.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from servers import cli as services_cli

# Kept light on purpose: ``compoworld --help`` and every ``services`` sub-command import this module
# (``services serve`` too), so what the column needs is imported when a listing fills it.

ROOT = Path(__file__).resolve().parents[1]
PATTERNS_DIR = Path(__file__).parent / "workflows"
"""``taskgen.pattern.PATTERNS_DIR`` (a test checks they agree), spelled here so that a cached
listing need not import the pattern models."""


def _inputs() -> list[Path]:
    """Every file besides the ``servers`` code that the default hub's coverage is read from."""
    from servers.construction.spec import CATALOG_DIR

    found = [*PATTERNS_DIR.glob("*.json"), *CATALOG_DIR.glob("*.json")]
    for package in ("hub", "worldmodel", "taskgen"):
        found += [*(ROOT / package).rglob("*.py"), *(ROOT / package).rglob("*.json")]
    return sorted(set(found))


def inputs_key() -> str:
    """A hash of the path, size and modification time of every input, and of the entry points."""
    from importlib.metadata import entry_points

    from servers.registry import ENTRY_POINT_GROUP

    digest = hashlib.sha256()
    for path in _inputs():
        info = path.stat()
        digest.update(f"{path}|{info.st_size}|{info.st_mtime_ns}\n".encode())
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        digest.update(f"ep|{entry.name}|{entry.value}\n".encode())
    return digest.hexdigest()[:24]


def library_patterns() -> dict[str, list[str]]:
    """``{service: [pattern id, …]}`` for every service of the default hub, from the disk cache
    when no input changed since it was computed."""

    def make() -> tuple[dict[str, list[str]]]:
        from taskgen.coverage import service_patterns
        from taskgen.generate import default_hub

        return (service_patterns(default_hub().registry),)

    from servers import schema_cache

    cache = schema_cache.listing()
    key = f"service-patterns:{inputs_key()}"
    found = cache.get_or_make(key, make) if cache is not None else make()
    return {name: list(ids) for name, ids in found[0].items()}


def fill_patterns(rows: list[dict[str, Any]]) -> None:
    """Set each row's ``patterns``: the ids of the patterns its service can join ([] for none)."""
    joined = library_patterns()
    for row in rows:
        row["patterns"] = joined.get(row["name"], [])


services_cli.EXTRA_COLUMNS.append(fill_patterns)
