"""Worlds: the isolated states of every service mounted for one episode.

A world is addressed explicitly (by the ``World`` object in process, by its id and a bearer token
over HTTP) and never shares state with another world. Opening, forking and resetting worlds is
cheap because service states are **copy-on-write**: a world opened from a seed shares the hub's
cached seeded state of each service until its first write to that service, and a fork shares
every state with its parent until either side writes. Read tools never copy (the conformance
checker guarantees they do not mutate). Per-service snapshots and hashes are cached until the
next write, so hashing a fresh or barely touched world costs microseconds.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hub.registry import ServiceEntry, ToolEntry
from servers.framework import Envelope, Service, ServiceState, error
from servers.state import Change, diff, snapshot, stable_hash

if TYPE_CHECKING:
    from hub.core import Hub


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
        if self._state is None or not self.owned:
            source = self._snap if self._snap is not None else snapshot(self.read_state())
            self._state = self.service.restore(source)
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


def unknown_tool(tool: str, services: Iterable[str]) -> Envelope:
    return error(
        404,
        f"unknown tool {tool!r}. Tools are named '<service>__<tool>'; mounted services: "
        f"{', '.join(services)}. Call list_services, then list_tools(service) to find the right name.",
    )


class World:
    """The states of the services mounted for one episode, with an explicit id."""

    def __init__(
        self,
        hub: Hub,
        world_id: str,
        services: list[str],
        seed: int | None,
        slots: dict[str, ServiceSlot],
        middleware: list[Middleware],
    ) -> None:
        self.hub = hub
        self.id = world_id
        self.services = services
        self.seed = seed
        self._slots = slots
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
        handler: Handler = self._core
        for mw in reversed(self.middleware):
            handler = (lambda m, nxt: lambda ctx: m(ctx, nxt))(mw, handler)
        return handler

    def use(self, middleware: Middleware) -> None:
        """Wrap one more middleware around this world's calls (outermost)."""
        self.middleware = [middleware, *self.middleware]
        self._handler = self._build_pipeline()

    def _core(self, ctx: CallContext) -> Envelope:
        entry = ctx.entry
        if entry is None:
            return unknown_tool(ctx.tool, self.services)
        slot = self._slots.get(entry.service)
        if slot is not None and entry.native is not None:
            state = slot.write_state() if entry.kind == "write" else slot.read_state()
            return entry.native.invoke(state, ctx.arguments)
        backend = self._entries[entry.service].backend
        if backend is None:
            return error(500, f"service {entry.service!r} has no backend")
        result: Envelope = backend.call(self, entry.name, ctx.arguments)
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
        return frozenset(self._slots)

    def slot(self, service: str) -> ServiceSlot:
        return self._slots[service]

    def tool_entries(self) -> list[ToolEntry]:
        return [t for name in self.services for t in self._entries[name].tools]

    # -- state -------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole world as JSON: ``{"seed": …, "services": {name: state}}`` (a private copy)."""
        with self._lock:
            return {
                "seed": self.seed,
                "services": {name: copy.deepcopy(slot.snapshot()) for name, slot in self._slots.items()},
            }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace every mounted service's state by the one in ``data`` (a ``snapshot()``)."""
        states = data.get("services", {})
        missing = [name for name in self._slots if name not in states]
        if missing:
            raise ValueError(f"snapshot has no state for mounted service(s) {missing}")
        fresh = {
            name: ServiceSlot(slot.service, slot.service.restore(states[name]), owned=True)
            for name, slot in self._slots.items()
        }
        with self._lock:
            self._slots = fresh

    def restore_service(self, service: str, state: Mapping[str, Any]) -> None:
        """Put one service back to ``state`` (its snapshot), leaving the others as they are."""
        slot = self._slots[service]
        with self._lock:
            self._slots[service] = ServiceSlot(slot.service, None, dict(state), owned=True)

    def reset(self) -> None:
        """Back to the seeded initial state (copy-on-write from the hub's cache)."""
        if self.seed is None:
            raise ValueError(f"world {self.id!r} was opened from a snapshot and has no seed to reset to")
        with self._lock:
            self._slots = {name: self.hub.seeded_slot(name, self.seed) for name in self._slots}

    def fork(self, world_id: str | None = None) -> World:
        """An independent copy of this world (registered with the hub), sharing states until writes.

        The fork keeps the parent's opening state (so it scores against the same start) and gets
        fresh instances of the hub's middleware (its own recorder, its own fault sequence).
        """
        with self._lock:
            slots = {name: slot.share() for name, slot in self._slots.items()}
        child = World(self.hub, world_id or uuid.uuid4().hex[:12], list(self.services), self.seed, slots, [])
        child.initial = self.initial
        for factory in reversed(self.hub.middleware):
            child.use(factory(child))
        return self.hub._adopt(child)

    def service_hashes(self) -> dict[str, str]:
        with self._lock:
            return {name: slot.hash() for name, slot in self._slots.items()}

    def hash(self) -> str:
        """A stable hash of every mounted service's state."""
        return stable_hash(self.service_hashes())

    def initial_states(self) -> dict[str, Any]:
        """``{service: state JSON}`` of the world as it was opened (seeded, or the opening snapshot)."""
        if self.initial is not None:
            return dict(self.initial.get("services", {}))
        if self.seed is None:
            raise ValueError(f"world {self.id!r} has neither a seed nor an opening snapshot")
        return {n: self.hub.seeded_slot(n, self.seed).snapshot() for n in self._slots}

    def states(self) -> dict[str, Any]:
        """``{service: state JSON}`` now (cached per service; treat as read-only)."""
        with self._lock:
            return {name: slot.snapshot() for name, slot in self._slots.items()}

    def score(self, rubric: Any, report: Mapping[str, Any] | None = None) -> Any:
        """Score this world's current state (and the agent's report) against a rubric."""
        from hub.rubric import Rubric, score

        parsed = rubric if isinstance(rubric, Rubric) else Rubric.model_validate(rubric)
        return score(parsed, self.initial_states(), self.states(), report)

    def diff(
        self, before: Mapping[str, Any] | None = None, after: Mapping[str, Any] | None = None
    ) -> dict[str, list[Change]]:
        """Changes per service between two snapshots (default: the opening state and now)."""
        if before is None:
            before = {"services": self.initial_states()}
        after_states = after["services"] if after is not None else {n: s.snapshot() for n, s in self._slots.items()}
        changes: dict[str, list[Change]] = {}
        for name in sorted(set(before["services"]) | set(after_states)):
            found = diff(before["services"].get(name), after_states.get(name))
            if found:
                changes[name] = found
        return changes

    def close(self) -> None:
        self.closed = True
        self.hub._forget(self.id)
