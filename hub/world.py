"""Worlds: the isolated states of every service mounted for one episode.

A world is addressed explicitly (by the ``World`` object in process, by its id and a bearer token
over HTTP) and never shares state with another world. Opening, forking and resetting worlds is
cheap because service states are **copy-on-write**: a world opened from a seed shares the hub's
cached seeded state of each service until its first write to that service, and a fork shares
every state with its parent until either side writes. Read tools never copy (the conformance
checker guarantees they do not mutate). The copy itself is made field by field as the write
touches them (:func:`servers.state.lazy_copy`), and a world takes a service's slot from the
hub's cache only when it first uses that service. Per-service snapshots and hashes are cached
until the next write, so hashing a fresh or barely touched world costs microseconds.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from hub.registry import Registry, ServiceEntry, ToolEntry
from hub.rubric import Rubric, ScoreResult
from hub.rubric import score as score_rubric
from servers.framework import Envelope, Service, ServiceState, error
from servers.state import Change, diff, peeking, snapshot, stable_hash


class ServiceSlot:
    """One service's state inside one world, copied on first write when shared."""

    __slots__ = ("_hash", "_snap", "_state", "owned", "service")

    def __init__(
        self,
        service: Service[Any],
        state: ServiceState | None = None,
        snap: dict[str, Any] | None = None,
        *,
        owned: bool,
        state_hash: str | None = None,
    ) -> None:
        self.service = service
        self._state = state
        self._snap = snap
        self.owned = owned
        self._hash = state_hash

    def read_state(self) -> ServiceState:
        if self._state is None:
            assert self._snap is not None
            self._state = self.service.restore(self._snap)
            self.owned = True
        return self._state

    def write_state(self) -> ServiceState:
        """The state, made private to this world first; cached snapshot and hash are dropped."""
        if self._state is None:
            assert self._snap is not None
            self._state = self.service.restore(self._snap)
            self.owned = True
        elif not self.owned:
            source = self._snap if self._snap is not None else snapshot(self._state)
            self._state = self.service.copy_state(self._state, source)
            self.owned = True
        self._snap = None
        self._hash = None
        return self._state

    def snapshot(self) -> dict[str, Any]:
        """The state as JSON (cached until the next write; treat it as read-only)."""
        if self._snap is None:
            self._snap = snapshot(self.read_state())
        return self._snap

    def hash(self) -> str:
        if self._hash is None:
            self._hash = stable_hash(self.snapshot())
        return self._hash

    def share(self) -> ServiceSlot:
        """A slot for another world over the same state; both copy before their next write."""
        self.owned = False
        return ServiceSlot(self.service, self._state, self._snap, owned=False, state_hash=self._hash)

    def detach(self) -> ServiceSlot:
        """A slot for another world that leaves a state this slot owns private to it.

        An owned state is handed over as its snapshot (restored only when the other world
        touches it), so this slot can keep writing in place; a shared state is shared.
        """
        if self.owned and self._state is not None:
            return ServiceSlot(self.service, None, self.snapshot(), owned=True, state_hash=self._hash)
        return self.share()


@dataclass
class CallContext:
    """What a middleware sees of one call."""

    world: World
    tool: str
    arguments: dict[str, Any]
    entry: ToolEntry | None
    meta: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[CallContext], Envelope]
Middleware = Callable[[CallContext, Handler], Envelope]
MiddlewareFactory = Callable[["World[Any]"], Middleware]


class WorldHost(Protocol):
    """What a world needs of the hub that opened it (:class:`hub.core.Hub` is the one host).

    A world looks its tools up in the host's current registry, takes seeded states from the host's
    cache, and tells the host about the worlds it spawns (forks, checkpoints) and about its closing,
    so that the host can find and close every open world.
    """

    @property
    def registry(self) -> Registry: ...

    @property
    def middleware(self) -> Sequence[MiddlewareFactory]: ...

    def seeded_slot(self, service: str, seed: int) -> ServiceSlot: ...

    def adopt(self, world: World[Any]) -> None: ...

    def forget(self, world_id: str) -> None: ...


HostT = TypeVar("HostT", bound=WorldHost)


def unknown_tool(tool: str, services: Iterable[str]) -> Envelope:
    return error(
        404,
        f"unknown tool {tool!r}. Tools are named '<service>__<tool>'; mounted services: "
        f"{', '.join(services)}. Call list_services, then list_tools(service) to find the right name.",
    )


class World(Generic[HostT]):
    """The states of the services mounted for one episode, with an explicit id.

    Generic in its host, so that ``world.hub`` has the host's own type (a :class:`hub.core.Hub` for
    every world a hub opens) while this module needs no more of it than :class:`WorldHost`.
    """

    def __init__(
        self,
        hub: HostT,
        world_id: str,
        services: list[str],
        seed: int | None,
        slots: dict[str, ServiceSlot],
        middleware: list[Middleware],
        stateful: Sequence[str] | None = None,
    ) -> None:
        self.hub = hub
        self.id = world_id
        self.services = services
        self.seed = seed
        # ``_slots`` holds the slots in use; a service of ``stateful`` that has none yet is in its
        # seeded state, and gets its slot from the hub's cache when first needed (a world over
        # every service touches a handful of them).
        self._slots = slots
        self._order = tuple(stateful) if stateful is not None else tuple(slots)
        self._stateful = frozenset(self._order)
        if seed is None and len(self._stateful) != len(slots):
            raise ValueError("a world without a seed needs a slot for every stateful service")
        # Only the entries' backends are read from here (a remount keeps the backend and changes the
        # tools); tools are looked up in the host's current registry.
        self._entries: dict[str, ServiceEntry] = {name: hub.registry.services[name] for name in services}
        self.middleware = middleware
        self._handler = self._build_pipeline()
        self._lock = threading.RLock()
        self.closed = False
        self.created_at = time.time()
        self.initial: Mapping[str, Any] | None = None  # the opening snapshot, for worlds without a seed

    def __repr__(self) -> str:
        return f"World({self.id!r}, services={self.services}, seed={self.seed})"

    # -- calling -----------------------------------------------------------------------------

    def _build_pipeline(self) -> Handler:
        # The handlers reach the world through ``ctx.world``, never through a closure over
        # ``self``: a world is then no reference cycle and its states are freed the moment it
        # is dropped, instead of piling up for the cyclic garbage collector.
        handler: Handler = World._run
        for mw in reversed(self.middleware):
            handler = (lambda m, nxt: lambda ctx: m(ctx, nxt))(mw, handler)
        return handler

    def use(self, middleware: Middleware) -> None:
        """Wrap one more middleware around this world's calls (outermost)."""
        self.middleware = [middleware, *self.middleware]
        self._handler = self._build_pipeline()

    @staticmethod
    def _run(ctx: CallContext) -> Envelope:
        """The innermost handler: the call itself, on the world of ``ctx``."""
        world, entry = ctx.world, ctx.entry
        if entry is None:
            return unknown_tool(ctx.tool, world.services)
        slot = world._slots.get(entry.service) or world._seeded(entry.service)
        tool = entry.native
        if slot is not None and tool is not None:
            if entry.kind != "write":
                with peeking():  # a read copies nothing out of a state its world still shares
                    return tool.invoke(slot.read_state(), ctx.arguments)
            # Arguments are checked before the state is made private: a call refused with a 400
            # copies nothing and keeps the cached snapshot and hash.
            values = tool.prepare(ctx.arguments)
            if isinstance(values, str):
                return error(400, values)
            return tool.run(slot.write_state(), values)
        backend = world._entries[entry.service].backend
        if backend is None:
            return error(500, f"service {entry.service!r} has no backend")
        result: Envelope = backend.call(world, entry.name, ctx.arguments)
        return result

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Envelope:
        """Call a tool by qualified name (``email__send_message``); always returns an envelope."""
        if self.closed:
            return error(410, f"world {self.id!r} is closed")
        entry = self.hub.registry.tools.get(tool)
        if entry is not None and entry.service not in self._entries:
            entry = None
        args = dict(arguments) if isinstance(arguments, Mapping) else arguments
        with self._lock:
            return self._handler(CallContext(self, tool, args, entry))  # type: ignore[arg-type]

    @property
    def stateful_services(self) -> frozenset[str]:
        """Mounted services whose state lives in this world (native ones; not external)."""
        return self._stateful

    def slot(self, service: str) -> ServiceSlot:
        found = self._slots.get(service) or self._seeded(service)
        if found is None:
            raise KeyError(service)
        return found

    def _seeded(self, service: str) -> ServiceSlot | None:
        """The slot of a stateful service still in its seeded state (None for other services)."""
        if service not in self._stateful:
            return None
        assert self.seed is not None
        with self._lock:
            found = self._slots.get(service)
            if found is None:
                found = self._slots[service] = self.hub.seeded_slot(service, self.seed)
            return found

    def _names(self, services: Iterable[str] | None) -> Sequence[str]:
        if services is None:
            return self._order
        wanted = set(services)
        return [name for name in self._order if name in wanted]

    def _all_slots(self) -> list[tuple[str, ServiceSlot]]:
        return [(name, self.slot(name)) for name in self._order]

    # -- state -------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole world as JSON: ``{"seed": …, "services": {name: state}}`` (a private copy)."""
        with self._lock:
            return {
                "seed": self.seed,
                "services": {name: copy.deepcopy(slot.snapshot()) for name, slot in self._all_slots()},
            }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace every mounted service's state by the one in ``data`` (a ``snapshot()``)."""
        states = data.get("services", {})
        missing = [name for name in self._order if name not in states]
        if missing:
            raise ValueError(f"snapshot has no state for mounted service(s) {missing}")
        fresh = {
            name: ServiceSlot(slot.service, slot.service.restore(states[name]), owned=True)
            for name, slot in self._all_slots()
        }
        with self._lock:
            self._slots = fresh

    def savepoint(self, service: str) -> ServiceSlot:
        """``service`` as it is now, to come back to with :meth:`rollback`. The next write copies
        the state (field by field) instead of changing it in place, and the snapshot that copy
        starts from is taken here, once, for both."""
        with self._lock:
            slot = self.slot(service)
            slot.snapshot()
            return slot.share()

    def rollback(self, service: str, saved: ServiceSlot) -> None:
        """Put ``service`` back exactly as it was at :meth:`savepoint` (the very same state)."""
        with self._lock:
            self._slots[service] = saved

    def reset(self) -> None:
        """Back to the seeded initial state (copy-on-write from the hub's cache)."""
        if self.seed is None:
            raise ValueError(f"world {self.id!r} was opened from a snapshot and has no seed to reset to")
        with self._lock:
            self._slots = {}  # every slot comes back from the hub's cache when next needed

    def fork(self, world_id: str | None = None) -> World[HostT]:
        """An independent copy of this world (registered with the hub), sharing states until writes.

        The fork keeps the parent's opening state (so it scores against the same start) and gets
        fresh instances of the hub's middleware (its own recorder, its own fault sequence).
        """
        with self._lock:
            slots = {name: slot.share() for name, slot in self._slots.items()}
        return self._spawn(slots, world_id)

    def _spawn(self, slots: dict[str, ServiceSlot], world_id: str | None) -> World[HostT]:
        # Services without a slot are still seeded here, and so they are in the child.
        child = World(
            self.hub, world_id or uuid.uuid4().hex[:12], list(self.services), self.seed, slots, [], self._order
        )
        child.initial = self.initial
        for factory in reversed(self.hub.middleware):
            child.use(factory(child))
        self.hub.adopt(child)
        return child

    def checkpoint(self, world_id: str | None = None) -> World[HostT]:
        """A fork for resuming from this point while this world runs on (like :meth:`fork`).

        States this world already owns stay private to it, so its next write does not copy them:
        the checkpoint holds their snapshots instead and restores one only when a call touches
        it (scoring reads the snapshot as it is). Shared states are shared, as by :meth:`fork`.
        """
        with self._lock:
            slots = {name: slot.detach() for name, slot in self._slots.items()}
        return self._spawn(slots, world_id)

    def service_hashes(self) -> dict[str, str]:
        with self._lock:
            return {name: slot.hash() for name, slot in self._all_slots()}

    def hash(self) -> str:
        """A stable hash of every mounted service's state."""
        return stable_hash(self.service_hashes())

    def initial_states(self, services: Iterable[str] | None = None) -> dict[str, Any]:
        """``{service: state JSON}`` of the world as it was opened (seeded, or the opening snapshot),
        for every stateful service or those of ``services``."""
        names = self._names(services)
        if self.initial is not None:
            states = self.initial.get("services", {})
            return dict(states) if services is None else {n: states[n] for n in names if n in states}
        if self.seed is None:
            raise ValueError(f"world {self.id!r} has neither a seed nor an opening snapshot")
        return {n: self.hub.seeded_slot(n, self.seed).snapshot() for n in names}

    def states(self, services: Iterable[str] | None = None) -> dict[str, Any]:
        """``{service: state JSON}`` now, for every stateful service or those of ``services``
        (cached per service; treat as read-only)."""
        names = self._names(services)
        with self._lock:
            return {name: self.slot(name).snapshot() for name in names}

    def score(
        self,
        rubric: Rubric | Mapping[str, Any],
        report: Mapping[str, Any] | None = None,
        services: Iterable[str] | None = None,
    ) -> ScoreResult:
        """Score this world's current state (and the agent's report) against a rubric (a model, or
        its JSON, validated first); with ``services``, only those are looked at (every service the
        rubric names must be one)."""
        parsed = rubric if isinstance(rubric, Rubric) else Rubric.model_validate(rubric)
        return score_rubric(parsed, self.initial_states(services), self.states(services), report)

    def diff(
        self, before: Mapping[str, Any] | None = None, after: Mapping[str, Any] | None = None
    ) -> dict[str, list[Change]]:
        """Changes per service between two snapshots (default: the opening state and now)."""
        if before is None:
            before = {"services": self.initial_states()}
        after_states = after["services"] if after is not None else {n: s.snapshot() for n, s in self._all_slots()}
        changes: dict[str, list[Change]] = {}
        for name in sorted(set(before["services"]) | set(after_states)):
            found = diff(before["services"].get(name), after_states.get(name))
            if found:
                changes[name] = found
        return changes

    def close(self) -> None:
        self.closed = True
        self.hub.forget(self.id)
