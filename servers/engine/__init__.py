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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from servers import schema_cache
from servers.construction.spec import CATALOG_DIR, SYSTEM_FIELDS, ServiceSpec, load_spec
from servers.engine.models import Models, build_models, seed_function
from servers.engine.ops import operations
from servers.framework import Service, make_tool
from servers.tooling import Deferred, Tool, ToolKind, ToolMeta, resolved

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


Entry = tuple[str, ToolKind, str, dict[str, Any]]
"""A tool of a manifest: name, kind, description and metadata (:meth:`ToolMeta.to_json`)."""


class SpecService(Service[Any]):
    """A service run from its spec. The spec is parsed, and its models and tools' operations
    built, on first need (a call, a seed, a restore, a schema not in the disk cache): a service
    read from its manifest (:func:`load`) lists its tools without any of that."""

    def __init__(self, header: dict[str, Any], make: Callable[[], ServiceSpec]) -> None:
        self._make, self._lock = make, threading.Lock()
        self._parts: tuple[ServiceSpec, Models, dict[str, Tool]] | None = None
        seed = functools.cache(lambda: seed_function(self.models))
        super().__init__(header["name"], version=header["version"], category=header["category"],
                         description=header["description"], state=lambda: self.models.state,
                         seed=lambda rng, world: seed()(rng, world), source="spec",
                         system_fields=SYSTEM_FIELDS, modelled_on=header["modelled_on"])  # fmt: skip

    def _built(self) -> tuple[ServiceSpec, Models, dict[str, Tool]]:
        parts = self._parts
        if parts is None:
            with self._lock:
                parts = self._parts
                if parts is None:
                    spec = self._make()
                    models = build_models(spec)
                    made = {
                        op.tool.name: make_tool(
                            spec.name,
                            op.tool.name,
                            op.tool.kind,
                            op.tool.description,
                            op,
                            op.params,
                            op.result,
                            op.meta(),
                        )
                        for op in operations(models)
                    }
                    parts = self._parts = (spec, models, made)
        return parts

    @property
    def spec(self) -> ServiceSpec:
        return self._built()[0]

    @property
    def models(self) -> Models:
        return self._built()[1]

    def made_tool(self, name: str) -> Tool:
        """Tool ``name`` as made from its operation (what a listed tool delegates to)."""
        return self._built()[2][name]

    @property
    def built(self) -> bool:
        """Whether the spec has been parsed and its operations made (False for a manifest's service
        nobody has called, seeded or asked an uncached schema of)."""
        return self._parts is not None

    def entries(self) -> list[Entry]:
        return [(t.name, t.kind, t.description, t.meta.to_json() if t.meta else {}) for t in self._built()[2].values()]

    def list_tools(self, entries: list[Entry], digest: str) -> None:
        """Add one tool per manifest entry, its schemas cached under the spec's ``digest``; its
        parameters, result and function are those of the made tool, taken when first needed."""
        for name, kind, description, meta in entries:
            self.add_tool(self._listed(name, kind, description, ToolMeta.from_json(meta), digest))

    def _listed(self, name: str, kind: ToolKind, description: str, meta: ToolMeta, digest: str) -> Tool:
        def made() -> Tool:
            return self.made_tool(name)

        def schemas() -> tuple[dict[str, Any], dict[str, Any]]:
            return made().input_schema, made().output_schema

        params = Deferred(lambda: made().params)
        result = Deferred(lambda: resolved(made().result))
        return Tool(self.name, name, kind, description, _first_call(self, name), params, schemas=schemas, meta=meta,
                    cache_key=f"spec:{self.name}:{digest}:{name}", result=result)  # fmt: skip


def _first_call(service: SpecService, name: str) -> Callable[..., Any]:
    """A listed tool's function that, on its first call, puts the made tool's function in its
    place (later calls then cost what they cost in a service built from the spec directly)."""

    def first(state: Any, **values: Any) -> Any:
        func = service.made_tool(name).func
        service.tools[name].func = func
        return func(state, **values)

    return first


def _header(spec: ServiceSpec) -> dict[str, Any]:
    return {"name": spec.name, "version": spec.version, "category": spec.category, "description": spec.description,
            "modelled_on": spec.modelled_on}  # fmt: skip


def build_service(spec: ServiceSpec, spec_hash: str | None = None) -> SpecService:
    """The service a spec describes (a new one on every call)."""
    service = SpecService(_header(spec), lambda: spec)
    service.list_tools(service.entries(), spec_hash or spec_digest(spec))
    return service


def load(name: str, directory: Path = CATALOG_DIR) -> Service[Any]:
    """The service of ``<directory>/<name>.json``, built once per process and version of the file
    (a lookup costs one ``stat``; an edited file is read and built again).

    Its manifest (header, and each tool's name, kind, description and metadata) is kept in the disk
    cache under the hash of the file's bytes, beside the tools' schemas: a hub of a hundred spec
    services is listed from the cache, and a service parses its spec on its first call.
    """
    path = spec_path(name, directory)
    info = path.stat()
    key = (str(path), info.st_mtime_ns, info.st_size)
    found = _LOADED.get(key)
    if found is None:
        with _LOCK:
            found = _LOADED.get(key)
            if found is None:
                found = _LOADED[key] = _from_file(path)
    return found


def _from_file(path: Path) -> SpecService:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    parse = functools.cache(lambda: load_spec(path))
    made: list[SpecService] = []

    def manifest() -> tuple[dict[str, Any], list[Entry]]:
        service = SpecService(_header(parse()), parse)
        made.append(service)
        return _header(parse()), service.entries()

    cache = schema_cache.shared()
    header, entries = cache.get_or_make(f"spec-manifest:{digest}", manifest) if cache is not None else manifest()
    service = made[0] if made else SpecService(header, parse)
    service.list_tools([(n, k, d, m) for n, k, d, m in entries], digest)
    return service
