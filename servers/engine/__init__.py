"""The spec engine: a catalog service is its JSON spec, run by this one interpreter.

``load(name)`` reads ``servers/catalog/<name>.json`` and returns a
:class:`~servers.framework.Service` like any hand-written one — typed records and state
(:mod:`servers.engine.models`), one tool per spec tool (:mod:`servers.engine.ops`) with guards
(:mod:`servers.engine.conditions`), the same envelopes, snapshots and diffs — and with each tool's
:class:`~servers.tooling.ToolMeta` taken from the spec. Nothing is generated on disk; a tool's JSON
schemas are cached under the spec file's hash (``servers.schema_cache``), so a changed spec never
serves stale schemas.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from pathlib import Path
from typing import Any

from servers.construction.spec import CATALOG_DIR, SYSTEM_FIELDS, ServiceSpec, load_spec
from servers.engine.models import Models, build_models, seed_function
from servers.engine.ops import operations
from servers.framework import Service, make_tool

_LOADED: dict[tuple[str, int, int], Service[Any]] = {}
_LOCK = threading.Lock()


def spec_path(name: str, directory: Path = CATALOG_DIR) -> Path:
    return directory / f"{name}.json"


def spec_names(directory: Path = CATALOG_DIR) -> list[str]:
    """The names of the catalog's specs (file stems), sorted; nothing is parsed."""
    return sorted(p.stem for p in directory.glob("*.json"))


def spec_digest(spec: ServiceSpec) -> str:
    """A short hash of a spec's content: what its tools' cached schemas and provenance are keyed by."""
    return hashlib.sha256(spec.model_dump_json(by_alias=True).encode()).hexdigest()[:16]


class SpecService(Service[Any]):
    """A service run from its spec: its spec and its models (built on first seed, restore or call)."""

    def __init__(self, spec: ServiceSpec, models: Models) -> None:
        self.spec, self.models = spec, models
        seed = functools.cache(lambda: seed_function(models))
        super().__init__(spec.name, version=spec.version, category=spec.category, description=spec.description,
                         state=lambda: models.state, seed=lambda rng, world: seed()(rng, world), source="spec",
                         system_fields=SYSTEM_FIELDS)  # fmt: skip


def build_service(spec: ServiceSpec, spec_hash: str | None = None) -> SpecService:
    """The service a spec describes (a new one on every call)."""
    digest = spec_hash or spec_digest(spec)
    service = SpecService(spec, build_models(spec))
    for op in operations(service.models):
        tool = op.tool
        service.add_tool(
            make_tool(
                spec.name,
                tool.name,
                tool.kind,
                tool.description,
                op,
                op.params,
                op.result,
                op.meta(),
                cache_key=f"spec:{spec.name}:{digest}:{tool.name}",
            )
        )
    return service


def load(name: str, directory: Path = CATALOG_DIR) -> Service[Any]:
    """The service of ``<directory>/<name>.json``, built once per process and version of the file
    (a lookup costs one ``stat``; an edited file is read and built again)."""
    path = spec_path(name, directory)
    info = path.stat()
    key = (str(path), info.st_mtime_ns, info.st_size)
    found = _LOADED.get(key)
    if found is None:
        with _LOCK:
            found = _LOADED.get(key)
            if found is None:
                found = _LOADED[key] = build_service(load_spec(path))
    return found
