"""Discovery of every registered service.

A service is registered by existing: every module of ``servers.native`` (hand-written) and of
``servers.contrib`` (Python written by the ``llm`` construction backend and verified against its
spec) that defines a module-level ``service`` (a :class:`~servers.framework.Service`), every spec
of ``servers/catalog/`` (run by the spec engine, :mod:`servers.engine`; a contrib package of the
same name replaces it), and every object named by an entry point of the ``compoworld.services``
group (``name = "package.module:service"``), which is how a separately installed package adds
services without touching this repository.

Lookups by name build only what they name: :func:`load_services` imports one native module or
runs one spec per name, so serving or mounting N services costs N, not the whole library.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from servers import engine, schema_cache
from servers.construction.spec import load_spec
from servers.framework import Service

ENTRY_POINT_GROUP = "compoworld.services"
PACKAGES = ("servers.native", "servers.contrib")


class UnknownService(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _modules(package_name: str) -> list[str]:
    package = importlib.import_module(package_name)
    found = sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
    return [f"{package_name}.{m.name}" for m in found if not m.name.startswith("_")]


def python_names() -> list[str]:
    """Names of the hand-written and contrib service modules (nothing imported but the packages)."""
    return [m.rsplit(".", 1)[1] for p in PACKAGES for m in _modules(p)]


@lru_cache(maxsize=1)
def all_services() -> dict[str, Service[Any]]:
    """Every registered service by name, sorted by name (built once, then cached)."""
    found: dict[str, Service[Any]] = {}
    origins: dict[str, str] = {}

    def add(candidate: object, origin: str) -> None:
        if not isinstance(candidate, Service):
            raise TypeError(f"{origin} does not define a Service (got {type(candidate).__name__})")
        if candidate.name in found:
            raise ValueError(
                f"service name {candidate.name!r} is defined twice: {origins[candidate.name]} and {origin}"
            )
        found[candidate.name] = candidate
        origins[candidate.name] = origin

    with schema_cache.long_lived():  # built once per process (the lru_cache), kept to its end
        for package in PACKAGES:
            for module_name in _modules(package):
                module = importlib.import_module(module_name)
                if hasattr(module, "service"):
                    add(module.service, module_name)
        for name in engine.spec_names():
            if name not in found:  # a contrib package of the same name replaces the spec-run service
                add(engine.load(name), f"servers/catalog/{name}.json")
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            add(entry.load(), f"entry point {entry.name!r} ({entry.value})")
    return dict(sorted(found.items()))


def summary(service: Service[Any]) -> dict[str, Any]:
    """One service's row in ``compoworld services list``."""
    return {
        "name": service.name,
        "category": service.category,
        "source": service.source,
        "version": service.version,
        "tools": len(service.tools),
        "read": len(service.read_tools),
        "write": len(service.write_tools),
        "description": service.description,
        "modelled_on": service.modelled_on,
    }


def spec_summary(path: Path, source: str = "spec") -> dict[str, Any]:
    """A spec file's row (``source``: ``spec`` for the catalog, ``simulated`` for the world model's),
    read from the spec alone (no service is built) and remembered in the listing cache per version
    of the file (a listing of hundreds of specs then reads one small cache file)."""
    info = path.stat()

    def make() -> tuple[dict[str, Any]]:
        spec = load_spec(path)
        kinds = [t.kind for t in spec.tools]
        return ({"name": spec.name, "category": spec.category, "source": source, "version": spec.version,
                 "tools": len(kinds), "read": kinds.count("read"), "write": kinds.count("write"),
                 "description": spec.description, "modelled_on": spec.modelled_on},)  # fmt: skip

    cache = schema_cache.listing()
    key = f"spec-summary:{source}:{path}:{info.st_mtime_ns}:{info.st_size}"
    return dict((cache.get_or_make(key, make) if cache is not None else make())[0])


def _python_summary(name: str) -> dict[str, Any] | None:
    """A hand-written or contrib service's row; remembered in the listing cache, whose file is per
    version of the ``servers`` code (these services' code included), so it is imported only once."""

    def make() -> tuple[dict[str, Any] | None]:
        service = _python_service(name)
        return (None if service is None else summary(service),)

    cache = schema_cache.listing()
    found = (cache.get_or_make(f"python-summary:{name}", make) if cache is not None else make())[0]
    return None if found is None else dict(found)


def names() -> list[str]:
    """Every registered service name, building nothing (entry points by their entry name)."""
    found = {*python_names(), *engine.spec_names(), *(e.name for e in entry_points(group=ENTRY_POINT_GROUP))}
    return sorted(found)


def summaries() -> list[dict[str, Any]]:
    """``services list`` rows of every registered service, sorted by name; catalog specs are
    summarised from their files without being built (the Python services are imported)."""
    rows = {n: row for n in python_names() if (row := _python_summary(n)) is not None}
    rows |= {n: spec_summary(engine.spec_path(n)) for n in engine.spec_names() if n not in rows}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in rows:
            service = entry.load()
            rows[service.name] = summary(service)
    return [rows[n] for n in sorted(rows)]


def _python_service(name: str) -> Service[Any] | None:
    for package in PACKAGES:
        if name.isidentifier() and importlib.util.find_spec(f"{package}.{name}") is not None:
            candidate = getattr(importlib.import_module(f"{package}.{name}"), "service", None)
            if isinstance(candidate, Service) and candidate.name == name:
                return candidate
    return None


def load_services(names: Iterable[str]) -> dict[str, Service[Any]]:
    """The services among ``names``, by name, building no more than needed.

    A name is looked up as ``servers.native.<name>``, ``servers.contrib.<name>``, then
    ``servers/catalog/<name>.json``; only when some name is found none of these ways (an
    entry-point service) is every service built. Names that are no service are left out.
    """
    wanted = list(dict.fromkeys(names))
    found: dict[str, Service[Any]] = {}
    for name in wanted:
        service = _python_service(name)
        if service is None and name.isidentifier() and engine.spec_path(name).exists():
            service = engine.load(name)
        if service is not None:
            found[name] = service
    if len(found) < len(wanted):
        every = all_services()
        found.update({n: every[n] for n in wanted if n in every and n not in found})
    return {n: found[n] for n in wanted if n in found}


def get_service(name: str) -> Service[Any]:
    """The service called ``name``; the error lists the known names."""
    found = load_services([name])
    if name in found:
        return found[name]
    services = all_services()
    raise UnknownService(f"unknown service {name!r}; known services: {', '.join(services)}")
