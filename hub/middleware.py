"""Cross-cutting behaviour around a world's calls, as wrappers (never edits inside the core).

- :class:`Recorder` records every call once, as a :class:`ToolCall`: service, tool, arguments,
  envelope, latency, and for writes the state diff of the service written. An agent's environment
  owns one and calls through it; its records are the trajectory's tool calls.
- :class:`FaultInjector` injects seeded faults — latency, transient 503 errors, 429 rate limits
  and schema drift (a renamed result field) — decided per call from ``(seed, call index, tool)``
  so the same calls see the same faults, and replayable from a recorded fault list.

A middleware is ``(ctx, next) -> envelope``; ``world.use(m)`` wraps one around a world, and
``Hub(middleware=[factory, …])`` wraps every world it opens (the first factory is outermost,
so put the recorder first to record injected faults).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hub.registry import ToolEntry
from hub.world import CallContext, Handler, World
from servers.framework import Envelope, error
from servers.state import Change, diff


class ToolCall(BaseModel):
    """One recorded call: the one record of a call, from the world up to the run store.

    ``name`` is what the caller called: a qualified tool (a direct call), or a gateway meta-tool
    when the call came through a surface; ``service``, ``tool`` and ``kind`` are those of the tool
    behind it (None for discovery calls; ``kind`` is ``"meta"`` for them).
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    name: str
    service: str | None
    tool: str | None
    kind: Literal["read", "write", "meta"] | None
    arguments: Any
    # Stored as it came (a model field of the envelope type would validate, and drop keys, per call).
    envelope: dict[str, Any]
    latency_ms: float
    diff: list[Change] | None = None
    # The injected fault, if any. Not part of the stored trajectory format (runs stored before
    # faults were recorded must load, and the injector's seed replays them): kept in memory only.
    fault: dict[str, Any] | None = Field(default=None, exclude=True)

    @property
    def ok(self) -> bool:
        return bool(self.envelope.get("success"))


@dataclass
class _Inner:
    """What the world saw of the call a surface call led to (a gateway ``call_tool``, a direct call)."""

    tool: str
    entry: ToolEntry | None
    diff: list[Change] | None
    fault: dict[str, Any] | None


class Recorder:
    """Records every call of one world, once each (use one recorder per world).

    As a world middleware it records each call the world makes. A caller that reaches the world
    through a surface (an agent's environment) calls through :meth:`record` instead, so that the
    one record names what the caller called, times the whole call, and takes service, tool and diff
    from the world call the surface made (if it made one). ``first_index`` numbers the records of
    a recording that continues an earlier one. One caller at a time: a world's calls are in order.
    """

    def __init__(self, diffs: bool = True, first_index: int = 0) -> None:
        self.diffs = diffs
        self.first_index = first_index
        self.records: list[ToolCall] = []
        self._open = False  # inside record(): the world call belongs to that surface call
        self._inner: _Inner | None = None

    def __call__(self, ctx: CallContext, call_next: Handler) -> Envelope:
        entry = ctx.entry
        world = ctx.world
        before = None
        stateful = entry is not None and entry.kind == "write" and entry.service in world.stateful_services
        if self.diffs and stateful and entry is not None:
            before = world.slot(entry.service).snapshot()
        started = time.perf_counter()
        envelope = call_next(ctx)
        latency = (time.perf_counter() - started) * 1000
        changes = None
        if before is not None and entry is not None:
            changes = diff(before, world.slot(entry.service).snapshot())
        # A tool of a service this world does not mount still names its tool (the envelope says 404).
        named = entry or world.hub.registry.tools.get(ctx.tool)
        inner = _Inner(ctx.tool, named, changes, ctx.meta.get("fault"))
        if self._open:
            if self._inner is None:  # the first world call is the one the surface call made
                self._inner = inner
        else:
            self._append(ctx.tool, ctx.arguments, envelope, latency, inner, meta=False)
        return envelope

    def record(self, name: str, arguments: Any, send: Callable[[], Envelope], meta: bool = False) -> ToolCall:
        """Make one surface call (``send``) named ``name`` and record it; ``meta`` marks a discovery
        meta-tool (its record has kind ``"meta"`` unless it reached a tool)."""
        self._open, self._inner = True, None
        started = time.perf_counter()
        try:
            envelope = send()
        finally:
            inner, self._open, self._inner = self._inner, False, None
        latency = (time.perf_counter() - started) * 1000
        return self._append(name, arguments, envelope, latency, inner, meta)

    def _append(
        self, name: str, arguments: Any, envelope: Envelope, latency: float, inner: _Inner | None, meta: bool
    ) -> ToolCall:
        entry = inner.entry if inner is not None else None
        record = ToolCall(
            index=self.first_index + len(self.records),
            name=name,
            service=entry.service if entry else None,
            tool=entry.qualified if entry else None,
            kind=entry.kind if entry else ("meta" if meta else None),
            arguments=arguments,
            envelope=envelope,
            latency_ms=round(latency, 4),
            diff=inner.diff if inner is not None else None,
            fault=inner.fault if inner is not None else None,
        )
        self.records.append(record)
        return record


@dataclass
class FaultConfig:
    """Probabilities of each injected fault per call (they are exclusive; the rest pass through)."""

    seed: int = 0
    latency: float = 0.0
    latency_ms: tuple[float, float] = (50.0, 300.0)
    error: float = 0.0
    rate_limit: float = 0.0
    drift: float = 0.0


@dataclass
class FaultInjector:
    """Injects seeded faults; with ``replay`` it applies exactly the faults of a recorded run."""

    config: FaultConfig = field(default_factory=FaultConfig)
    replay: Sequence[dict[str, Any] | None] | None = None
    injected: list[dict[str, Any] | None] = field(default_factory=list)
    sleep: Any = time.sleep

    def draw(self, index: int, tool: str) -> dict[str, Any] | None:
        """The fault (or None) for call number ``index`` of ``tool`` — a pure function of the seed."""
        if self.replay is not None:
            return self.replay[index] if index < len(self.replay) else None
        cfg = self.config
        rng = random.Random(f"faults:{cfg.seed}:{index}:{tool}")
        roll = rng.random()
        for kind, rate in (
            ("latency", cfg.latency),
            ("error", cfg.error),
            ("rate_limit", cfg.rate_limit),
            ("drift", cfg.drift),
        ):
            if roll < rate:
                fault: dict[str, Any] = {"kind": kind}
                if kind == "latency":
                    fault["ms"] = round(rng.uniform(*cfg.latency_ms), 1)
                if kind == "drift":
                    fault["salt"] = rng.randrange(1 << 30)
                return fault
            roll -= rate
        return None

    def __call__(self, ctx: CallContext, call_next: Handler) -> Envelope:
        fault = self.draw(len(self.injected), ctx.tool)
        self.injected.append(fault)
        if fault is None:
            return call_next(ctx)
        ctx.meta["fault"] = fault
        kind = fault["kind"]
        if kind == "error":
            return error(503, f"service temporarily unavailable while calling {ctx.tool!r}; retry the call")
        if kind == "rate_limit":
            return error(429, f"rate limit exceeded for {ctx.tool!r}; wait a moment and retry")
        if kind == "latency":
            self.sleep(fault["ms"] / 1000)
            return call_next(ctx)
        return _drift(call_next(ctx), fault)


def _drift(envelope: Envelope, fault: dict[str, Any]) -> Envelope:
    """Schema drift: one field of the result is renamed (``name`` → ``name_v2``)."""
    data = envelope.get("data")
    target = data["items"][0] if isinstance(data, dict) and data.get("items") else data
    if not envelope.get("success") or not isinstance(target, dict) or not target:
        return envelope
    keys = sorted(target)
    key = keys[fault.get("salt", 0) % len(keys)]
    fault["renamed"] = [key, f"{key}_v2"]
    target[f"{key}_v2"] = target.pop(key)
    return envelope


def find(world: World, kind: type[Any]) -> Any:
    """The middleware of type ``kind`` wrapped around ``world`` (e.g. its :class:`Recorder`)."""
    for mw in world.middleware:
        if isinstance(mw, kind):
            return mw
    raise LookupError(f"world {world.id!r} has no {kind.__name__} middleware")
