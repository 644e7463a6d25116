"""The hub: a registry of every tool plus the worlds opened over it.

```python
hub = Hub.native()                                   # every registered native service
world = hub.open_world(services=["crm", "email"], seed=7)
world.call("crm__list_deals", {"stage": "negotiation"})
branch = world.fork()                                # independent copy, for many rollouts
world.close()
```
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hub.registry import Registry, ServiceEntry
from hub.world import MiddlewareFactory, ServiceSlot, World
from servers.framework import Service
from servers.registry import all_services


class Hub:
    """Owns the registry, the cache of seeded states, and every open world (the host of its worlds:
    :class:`hub.world.WorldHost`)."""

    def __init__(self, registry: Registry, middleware: Sequence[MiddlewareFactory] = ()) -> None:
        self.registry = registry
        self.middleware = list(middleware)
        self._seeded: dict[tuple[str, int], ServiceSlot] = {}
        self._worlds: dict[str, World[Hub]] = {}
        self._lock = threading.Lock()
        # What clients derive from the registry alone (a task walker per seed, …), kept as long as the hub.
        self.derived: dict[Any, Any] = {}

    @classmethod
    def native(
        cls,
        services: Iterable[Service[Any]] | None = None,
        extra: Iterable[ServiceEntry] = (),
        middleware: Sequence[MiddlewareFactory] = (),
    ) -> Hub:
        """A hub over native services (default: every registered one) plus ``extra`` sources."""
        chosen = list(all_services().values()) if services is None else list(services)
        return cls(Registry.from_services(chosen, extra), middleware)

    # -- worlds ------------------------------------------------------------------------------

    def seeded_slot(self, service: str, seed: int) -> ServiceSlot:
        """A copy-on-write slot over the cached seeded state of ``service`` for ``seed``."""
        key = (service, seed)
        base = self._seeded.get(key)
        if base is None:
            native = self.registry.services[service].native
            assert native is not None
            state = native.seed_state(seed)
            base = ServiceSlot(native, state, owned=False)
            base.hash()  # computed once here, inherited by every world that shares this state
            # Whether copies of this state can be made field by field is decided by a probe of its
            # class; made here, it is made once (and inherited by forked workers), not per process.
            native.copy_state(state, base.snapshot())
            with self._lock:
                base = self._seeded.setdefault(key, base)
        return base.share()

    def open_world(
        self,
        services: Iterable[str] | None = None,
        seed: int | None = 0,
        snapshot: Mapping[str, Any] | None = None,
        world_id: str | None = None,
    ) -> World[Hub]:
        """Open an isolated world over ``services`` (default: all), from a seed or a snapshot."""
        names = self.registry.require_services(services if services is not None else self.registry.services)
        world_id = world_id or uuid.uuid4().hex[:12]
        if world_id in self._worlds:
            raise ValueError(f"world id {world_id!r} is already open")
        stateful = [n for n in names if self.registry.services[n].stateful]
        if snapshot is not None:
            seed = snapshot.get("seed") if seed is None else seed
            states = snapshot.get("services", {})
            missing = [n for n in stateful if n not in states]
            if missing:
                raise ValueError(f"snapshot has no state for service(s) {missing}")
            slots = {}
            for name in stateful:
                native = self.registry.services[name].native
                assert native is not None
                slots[name] = ServiceSlot(native, native.restore(states[name]), owned=True)
        else:
            if seed is None:
                raise ValueError("open_world needs a seed or a snapshot")
            slots = {}  # each comes from the seeded cache on first use (see World)
        world = World(self, world_id, names, seed, slots, [], stateful)
        if snapshot is not None:
            world.initial = snapshot
        for factory in reversed(self.middleware):
            world.use(factory(world))
        self.adopt(world)
        return world

    def adopt(self, world: World[Hub]) -> None:
        """Count ``world`` among this hub's open worlds (a world opened here, or forked from one)."""
        with self._lock:
            if world.id in self._worlds:
                raise ValueError(f"world id {world.id!r} is already open")
            self._worlds[world.id] = world

    def forget(self, world_id: str) -> None:
        """No longer count the world ``world_id`` as open (its :meth:`~hub.world.World.close` calls this)."""
        with self._lock:
            self._worlds.pop(world_id, None)

    def world(self, world_id: str) -> World[Hub]:
        try:
            return self._worlds[world_id]
        except KeyError:
            raise KeyError(f"world {world_id!r} is not open") from None

    @property
    def worlds(self) -> Mapping[str, World[Hub]]:
        return dict(self._worlds)

    def close(self) -> None:
        for world in list(self._worlds.values()):
            world.close()

    def info(self) -> dict[str, Any]:
        services = [entry.summary() for entry in self.registry.services.values()]
        return {
            "services": services,
            "total_services": len(services),
            "total_tools": len(self.registry.tools),
            "sources": sorted({s["source"] for s in services}),
        }
