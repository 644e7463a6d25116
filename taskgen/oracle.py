"""Running an oracle plan in a fresh world: references resolve against the plan's own results."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hub.core import Hub
from hub.middleware import Recorder, ToolCall
from hub.world import World
from servers.framework import Envelope, error
from taskgen.task import PlanStep, resolve


@dataclass
class OracleRun:
    """A plan run from its seed: the world it leaves, the step envelopes, the recorded calls (when
    asked for) and checkpoints of the world just before the steps asked for."""

    world: World
    envelopes: list[Envelope]
    records: list[ToolCall]
    checkpoints: dict[int, World]


def run_plan(
    hub: Hub,
    plan: list[PlanStep],
    seed: int,
    services: Iterable[str],
    skip: Iterable[int] = (),
    record: bool = True,
    checkpoints: Iterable[int] = (),
) -> OracleRun:
    """Execute ``plan`` (minus the steps in ``skip``) in a fresh world; failed refs give error envelopes.

    With ``record`` every call is recorded with its write diff; gates that only score the final
    world skip that cost. ``checkpoints`` keeps a (copy-on-write)
    fork of the world before each of those steps, so a variant of the plan can resume there.
    """
    world = hub.open_world(services=sorted(set(services)), seed=seed)
    return continue_plan(world, plan, [], 0, skip, record, checkpoints)


def continue_plan(
    world: World,
    plan: list[PlanStep],
    envelopes: list[Envelope],
    start: int,
    skip: Iterable[int] = (),
    record: bool = True,
    checkpoints: Iterable[int] = (),
) -> OracleRun:
    """Run ``plan[start:]`` in ``world``, whose earlier steps gave ``envelopes``."""
    # Gates only need the envelopes: without ``record`` no recorder is wrapped around the world.
    recorder = Recorder() if record else None
    if recorder is not None:
        world.use(recorder)
    skipped = set(skip)
    wanted = set(checkpoints)
    forks: dict[int, World] = {}
    envelopes = list(envelopes)
    records: list[ToolCall] = []
    for index, step in enumerate(plan[start:], start):
        if index in wanted:
            forks[index] = world.checkpoint()
        if index in skipped:
            envelopes.append(error(499, "step skipped"))
            continue
        try:
            arguments = resolve(step.arguments, envelopes)
        except (KeyError, IndexError, TypeError, ValueError):
            envelopes.append(error(424, f"step {index + 1} depends on a result that is missing"))
            continue
        envelopes.append(world.call(step.tool, arguments))
        if recorder is not None:
            records.append(recorder.records[-1])
    return OracleRun(world, envelopes, records, forks)
