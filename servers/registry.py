"""Discovery of every registered service.

A service is registered by existing: every module of ``servers.native`` (hand-written) and of
``servers.built`` (built from the catalog and verified) that defines a module-level
``service`` (a :class:`~servers.framework.Service`) is found, and so is every object named by an
entry point of the ``compoworld.services`` group (``name = "package.module:service"``), which is
how a separately installed package adds services without touching this repository.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from servers.framework import Service

ENTRY_POINT_GROUP = "compoworld.services"


class UnknownService(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _native_modules() -> list[str]:
    """Hand-written services (``servers.native``), then verified built ones (``servers.built``)."""
    import servers.built as built
    import servers.native as native

    return [
        f"{package.__name__}.{m.name}"
        for package in (native, built)
        for m in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
        if not m.name.startswith("_")
    ]


@lru_cache(maxsize=1)
def all_services() -> dict[str, Service[Any]]:
    """Every registered service by name, sorted by name (imported once, then cached)."""
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

    for module_name in _native_modules():
        module = importlib.import_module(module_name)
        if hasattr(module, "service"):
            add(module.service, module_name)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        add(entry.load(), f"entry point {entry.name!r} ({entry.value})")
    return dict(sorted(found.items()))


def load_services(names: Iterable[str]) -> dict[str, Service[Any]]:
    """The native services among ``names``, by name, importing no more modules than needed.

    A service's module is named like it (``services build`` writes them so), so a name is looked
    up as ``servers.native.<name>`` then ``servers.built.<name>``; only when some name is found
    neither way (an entry-point service, or no native service at all) is every service imported.
    Names that are no native service are left out.
    """
    wanted = list(dict.fromkeys(names))
    found: dict[str, Service[Any]] = {}
    for name in wanted:
        for package in ("servers.native", "servers.built"):
            if name.isidentifier() and importlib.util.find_spec(f"{package}.{name}") is not None:
                candidate = getattr(importlib.import_module(f"{package}.{name}"), "service", None)
                if isinstance(candidate, Service) and candidate.name == name:
                    found[name] = candidate
                    break
    if len(found) < len(wanted):
        every = all_services()
        found.update({n: every[n] for n in wanted if n in every and n not in found})
    return {n: found[n] for n in wanted if n in found}


def get_service(name: str) -> Service[Any]:
    """The service called ``name``; the error lists the known names."""
    services = all_services()
    if name not in services:
        raise UnknownService(f"unknown service {name!r}; known services: {', '.join(services)}")
    return services[name]
