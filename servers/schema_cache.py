"""A disk cache of the JSON schemas pydantic generates for tools and service states.

Generating the schemas of ~3,000 tools is most of the time it takes to build a hub (about five
seconds of pydantic's JSON-schema generation, paid again by every process: each CLI command,
each hub server, each worker). The schemas depend only on the code, so they are kept in one file
per version of the code: the cache key hashes every ``.py`` file of the ``servers`` package with
the pydantic and Python versions, and any edit there starts a new file (a schema is never served
for code other than the code that made it). Only tools and states defined inside the package are
cached; a service installed from elsewhere (an entry point) always has its schemas generated.

The file (``marshal``, written atomically when a process that added schemas exits) keeps each
distinct schema once: tools that return the same record type share their output schema, as they
do in memory. ``COMPOWORLD_CACHE_DIR`` moves it (default ``~/.cache/compoworld``);
``COMPOWORLD_NO_SCHEMA_CACHE=1`` turns it off.
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import json
import marshal
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import pydantic

PACKAGE_DIR = Path(__file__).resolve().parent
FORMAT = 1


def code_key(package_dir: Path = PACKAGE_DIR) -> str:
    """A hash of every ``.py`` file below ``package_dir`` (path and content), pydantic and Python."""
    digest = hashlib.sha256(f"{FORMAT}|{pydantic.VERSION}|{sys.version}".encode())
    for path in sorted(package_dir.rglob("*.py")):
        digest.update(str(path.relative_to(package_dir)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def cache_dir() -> Path:
    return Path(os.environ.get("COMPOWORLD_CACHE_DIR") or Path.home() / ".cache" / "compoworld")


class SchemaCache:
    """Schemas by name (``tool:<service>.<tool>``, ``state:<module>.<class>``) for one code key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._found: dict[str, Any] = {}
        self._added: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._found = self._read()

    def _read(self) -> dict[str, Any]:
        try:
            with long_lived():
                table, names = marshal.loads(self.path.read_bytes())
            return {name: tuple(table[i] for i in index) for name, index in names.items()}
        except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError):
            return {}  # no file yet, or an unreadable one: rebuilt from what processes generate

    def get(self, name: str) -> Any:
        return self._found.get(name)

    def get_or_make(self, name: str, make: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
        """The schemas kept under ``name``, or those ``make`` generates now (then kept)."""
        found = self.get(name)
        if found is None:
            found = make()
            self.put(name, found)
        return tuple(found)

    def put(self, name: str, schemas: tuple[Any, ...]) -> None:
        with self._lock:
            self._found[name] = self._added[name] = schemas

    def save(self) -> None:
        """Write every known schema (read or added) if this process added any; atomic."""
        with self._lock:
            if not self._added:
                return
            # What other processes saved meanwhile is kept too (a process that generated a few
            # schemas must not replace a fuller file with its smaller set).
            items = {**self._read(), **self._found}
            self._added = {}
        table: list[Any] = []
        seen: dict[str, int] = {}
        names: dict[str, list[int]] = {}
        for name, schemas in sorted(items.items()):
            index = []
            for schema in schemas:
                text = json.dumps(schema, sort_keys=True)
                if text not in seen:
                    seen[text] = len(table)
                    table.append(schema)
                index.append(seen[text])
            names[name] = index
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".schemas-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(marshal.dumps((table, names)))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only home: the cache is an optimisation, never a requirement


@contextmanager
def long_lived() -> Iterator[None]:
    """Build what lives as long as the process (the schema table, the registered services) with
    the cyclic garbage collector paused, then move it out of the collector's sight.

    Start-up allocates millions of objects that are never garbage; each full collection during it
    walks all of them again (about half the time it took to build the default hub at 453
    services). ``gc.freeze`` after the build keeps later collections from walking them too. Use
    it only for things built once per process: frozen objects are never collected.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
            gc.freeze()


_CACHES: dict[str, SchemaCache] = {}


def _opened(kind: str) -> SchemaCache | None:
    if os.environ.get("COMPOWORLD_NO_SCHEMA_CACHE"):
        return None
    cache = _CACHES.get(kind)
    if cache is None:
        cache = _CACHES[kind] = SchemaCache(cache_dir() / f"{kind}-{_code_key()}.marshal")
        atexit.register(cache.save)
    return cache


def shared() -> SchemaCache | None:
    """The process's cache (None when turned off), loaded on first use and saved at exit."""
    return _opened("schemas")


def listing() -> SchemaCache | None:
    """A second, small cache for what ``compoworld services list`` shows (each service's row, the
    patterns it joins), kept apart so that a listing reads kilobytes instead of the schema table
    (megabytes at 450 services: a quarter of a second to load). Same key, same switch."""
    return _opened("listing")


@lru_cache(maxsize=1)
def _code_key() -> str:
    return code_key()


def covered(filename: str | None) -> bool:
    """Whether code from ``filename`` is covered by the cache key (a file of the package on disk;
    code compiled from a string or loaded from elsewhere is not)."""
    if not filename:
        return False
    try:
        return Path(filename).resolve().is_relative_to(PACKAGE_DIR) and Path(filename).is_file()
    except (OSError, ValueError):
        return False
