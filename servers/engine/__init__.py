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

import hashlib
import random
import threading
from pathlib import Path
from typing import Any

from servers.construction.spec import CATALOG_DIR, SYSTEM_FIELDS, ServiceSpec, load_spec
from servers.engine.models import Models, build_models, seed_function
from servers.engine.ops import operations
from servers.framework import Service, ServiceState, make_tool
from servers.population import Population

_LOADED: dict[tuple[str, str], Service[Any]] = {}
_LOCK = threading.Lock()


def spec_path(name: str, directory: Path = CATALOG_DIR) -> Path:
    return directory / f"{name}.json"


def spec_names(directory: Path = CATALOG_DIR) -> list[str]:
    """The names of the catalog's specs (file stems), sorted; nothing is parsed."""
    return sorted(p.stem for p in directory.glob("*.json"))


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


class SpecService(Service[Any]):
    """A service run from its spec; its pydantic models are built on its first seed, restore or call.

    ``state_type`` is read from the spec's lazily built models, so listing, describing and
    mounting the service (its tools, their schemas from the disk cache) build no model class.
    """

    def __init__(self, spec: ServiceSpec, models: Models) -> None:
        self.models = models
        self.spec = spec
        self._seed: Any = None
        # The placeholder state class is replaced by the property below; system fields are the
        # engine's stamps, on every record of every spec (nothing to check against the models).
        super().__init__(spec.name, version=spec.version, category=spec.category, description=spec.description,
                         state=ServiceState, seed=self._run_seed, source="spec")  # fmt: skip
        self.system_fields = self.system_fields | frozenset(SYSTEM_FIELDS)

    @property
    def state_type(self) -> type[ServiceState]:
        return self.models.state

    @state_type.setter
    def state_type(self, _value: type[ServiceState]) -> None:
        pass  # Service.__init__ assigns the placeholder

    def _run_seed(self, rng: random.Random, world: Population) -> ServiceState:
        if self._seed is None:
            self._seed = seed_function(self.models)
        return self._seed(rng, world)


def build_service(spec: ServiceSpec, spec_hash: str | None = None) -> SpecService:
    """The service a spec describes (a new one on every call)."""
    digest = spec_hash or hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:16]
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
    """The service of ``<directory>/<name>.json``, built once per process and spec content."""
    path = spec_path(name, directory)
    digest = file_hash(path)
    key = (str(path), digest)
    found = _LOADED.get(key)
    if found is None:
        with _LOCK:
            found = _LOADED.get(key)
            if found is None:
                found = _LOADED[key] = build_service(load_spec(path), digest)
    return found
