"""The simulated services of a spec directory, with their backend, ready to mount or serve.

A spec directory holds specs in the one catalog format (:mod:`servers.construction.spec`), read by
its loader: the world model's own, :data:`SPECS_DIR`, holds simulated ones (``"simulated": true``);
any other catalog spec found there is served by simulation too (:mod:`worldmodel.fromspec`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from servers.construction.spec import load_catalog
from servers.framework import Envelope, Service, ServiceState, error
from worldmodel.engine import Backend, SimState, build_service
from worldmodel.fromspec import routed_services, simulated_spec
from worldmodel.rules import RulesBackend
from worldmodel.spec import SimSpec

SPECS_DIR = Path(__file__).parent / "specs"

BackendKind = Literal["rules", "llm"]


def make_backend(
    kind: BackendKind = "rules",
    model: str | None = None,
    base_url: str | None = None,
    cache_path: str | Path | None = None,
    attempts: int = 3,
    timeout_s: float | None = None,
) -> Backend:
    """The ``rules`` backend, or the ``llm`` one for ``model`` at ``base_url`` (OpenAI-compatible).

    ``timeout_s`` bounds each request to the model endpoint (default ``$COMPOWORLD_WORLDMODEL_TIMEOUT``,
    else 60 s; see :mod:`worldmodel.llm`). An invalid value is a ``ValueError``, like a missing model.
    """
    if kind == "rules":
        return RulesBackend()
    if not model:
        raise ValueError("the llm backend needs a model name (--model)")
    # Imported here, not at module level, for start-up speed: the openai client takes ~0.5 s to
    # import and only this backend needs it.
    from worldmodel.llm import LLMBackend

    return LLMBackend(model, base_url=base_url, cache_path=cache_path, attempts=attempts, timeout_s=timeout_s)


def simulated_specs(specs: str | Path = SPECS_DIR) -> list[SimSpec]:
    """Every spec of the directory ``specs`` (the catalog loader's), compiled for the world model."""
    return [simulated_spec(spec) for spec in load_catalog(specs)]


def simulated_services(
    specs: str | Path = SPECS_DIR, backend: Backend | None = None, routed: bool = True
) -> list[Service[SimState]]:
    """One simulated service per spec file in ``specs``, all sharing ``backend``.

    With the default directory (and ``routed``), also the catalog services that are not mounted as
    verified native services (``worldmodel.fromspec``): every catalog service is offered one way
    or the other.
    """
    chosen = backend or RulesBackend()
    services = [build_service(spec, chosen) for spec in simulated_specs(specs)]
    if routed and Path(specs).resolve() == SPECS_DIR.resolve():
        services += routed_services(chosen)
    return sorted(services, key=lambda s: s.name)


class SimulatedWorld:
    """The states of several simulated services, with calls by qualified name ``<service>__<tool>``.

    What ``compoworld worldmodel serve`` runs; inside the hub, simulated services are ordinary
    services of a hub world instead.
    """

    def __init__(self, services: list[Service[Any]], seed: int = 0) -> None:
        self.services = {s.name: s for s in services}
        self.states: dict[str, ServiceState] = {s.name: s.seed_state(seed) for s in services}

    def call(self, tool: str, arguments: dict[str, Any]) -> Envelope:
        service, sep, name = tool.partition("__")
        if not sep or service not in self.services:
            return error(
                404,
                f"unknown tool {tool!r}; tools are named '<service>__<tool>' with services {', '.join(self.services)}",
            )
        return self.services[service].call(self.states[service], name, arguments)
