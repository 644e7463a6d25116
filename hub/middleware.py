"""Cross-cutting behaviour around a world's calls, as wrappers (never edits inside the core).

- :class:`Recorder` records every call: service, tool, arguments, envelope, latency, and for
  writes the state diff of the service written. The harness builds trajectories on it.
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hub.world import CallContext, Handler, World
from servers.framework import Envelope, error
from servers.state import Change, diff


class CallRecord(BaseModel):
    """One recorded call."""

    model_config = ConfigDict(extra="forbid")

    index: int
    world_id: str
    tool: str
    service: str | None
    name: str | None
    kind: Literal["read", "write"] | None
    arguments: Any
    envelope: dict[str, Any]
    latency_ms: float
    diff: list[Change] | None = None
    fault: dict[str, Any] | None = None


class Recorder:
    """Records every call of one world (use one recorder per world)."""

    def __init__(self, diffs: bool = True) -> None:
        self.diffs = diffs
        self.records: list[CallRecord] = []

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
        self.records.append(
            CallRecord(
                index=len(self.records),
                world_id=world.id,
                tool=ctx.tool,
                service=entry.service if entry else None,
                name=entry.name if entry else None,
                kind=entry.kind if entry else None,
                arguments=ctx.arguments,
                envelope=envelope,
                latency_ms=round(latency, 4),
                diff=changes,
                fault=ctx.meta.get("fault"),
            )
        )
        return envelope


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
