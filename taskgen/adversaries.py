"""Adversaries: built-in agents that try to collect a task's reward without doing the task.

Each one plays a strategy a policy under RL finds when the reward lets it, in a world of the
task's seed, and returns the report it would give:

- ``spam``: the oracle's plan, then every write of the plan once more and extra creates in every
  service the task writes;
- ``vandal``: the oracle's plan, then deletes, cancellations and closures of other records of the
  services the task writes;
- ``shotgun``: every write tool of the services the task names, with values harvested from the
  world and the instruction;
- ``create_everything``: every creating tool of the named services, once each;
- ``destroyer``: every destructive tool of the named services, on records harvested from the world;
- ``report_guesser``: no call at all; a report with, under every plausible key, the value that
  best matches the instruction among every value of that field in the world.

The sixth gate (:func:`taskgen.gates.check_gates`) runs them all and keeps a task only when each
earns a net score of at most :data:`MAX_NET`, and the two that start from the oracle's run end at
least :data:`MIN_DROP` below the oracle. Arguments come from a :class:`~taskgen.walk.Walker`'s
caches (tool signatures, seeded values by type), so a panel costs a few dozen in-process calls.
Tool roles (create, destroy) are the operations tools declare (:class:`servers.tooling.ToolMeta`).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hub.collateral import units
from hub.registry import ToolEntry
from hub.rubric import CollateralCriterion, ScoreResult, normal_key
from hub.world import World
from servers.framework import Envelope
from taskgen.task import Task, leaves, resolve
from taskgen.walk import FREE_TEXT, Walker, collection_entities, op_of

MAX_NET = 0.1
"""The most net score an adversary may earn on a kept task."""
MIN_DROP = 0.5
"""How far below the oracle's net score the oracle-plus adversaries must end."""

CREATE_OPS = frozenset({"create", "append", "send"})
"""Declared ops that make something new: a record, an item of a record's list, a message."""
DESTROY_OPS = frozenset({"delete", "remove", "transition"})
"""Declared ops that take something away or move a record along its lifecycle (a cancellation,
a closure, an archive, a rejection: the name says which, the op only that it is a move)."""
PANEL = ("spam", "vandal", "shotgun", "create_everything", "destroyer", "report_guesser")
FROM_ORACLE = frozenset({"spam", "vandal"})


@dataclass
class Attempt:
    """One adversary's run on one task; ``changed``: whether it changed the world it started from
    ``calls`` counts the calls that succeeded; ``changed`` is False for an oracle-plus adversary
    that left the oracle's world as it was (all its calls failed or changed nothing a rubric can
    see): it is the oracle, not an attack."""

    name: str
    result: ScoreResult
    calls: int
    changed: bool = True

    @property
    def score(self) -> float:
        return self.result.score

    @property
    def net_score(self) -> float:
        return self.result.net_score


class Panel:
    """The adversaries for one task: harvested values and the tools they may call."""

    def __init__(self, walker: Walker, task: Task, budget: int = 8) -> None:
        self.walker = walker
        self.hub = walker.hub
        self.task = task
        self.budget = budget
        self.rng = random.Random(f"adversaries:{task.id}:{task.seed}")
        self.values: dict[str, list[Any]] = {}
        for service in task.services:
            for kind, found in walker.seeded_values(service).items():
                self.values.setdefault(kind, []).extend(found)
        quoted = re.findall(r"'([^']{2,80})'", task.instruction)
        self.quoted = list(dict.fromkeys(quoted))
        services = self.hub.registry.services
        self.tools = {
            name: [e for e in services[name].tools if e.kind == "write"] for name in task.services if name in services
        }
        self.plan_values = {repr(v) for step in task.plan for v in leaves(step.arguments)}

    # -- arguments --------------------------------------------------------------------------

    def fill(self, entry: ToolEntry, avoid: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        """Required arguments from harvested values (ids in ``avoid`` are not picked), or None."""
        args: dict[str, Any] = {}
        for name, kind, is_list, prop in self.walker.required[entry.qualified]:
            item = prop.get("items", {}) if is_list else prop
            value: Any
            if "enum" in item:
                value = self.rng.choice(item["enum"])
            elif kind in FREE_TEXT:
                value = self.rng.choice(self.quoted) if self.quoted else "n/a"
            else:
                pool = self.values.get(kind)
                if not pool:
                    return None
                value = self.rng.choice(pool)
                for _ in range(4):  # a few draws to miss the records the task is about
                    if repr(value) not in avoid:
                        break
                    value = self.rng.choice(pool)
                else:
                    return None
            args[name] = [value] if is_list else value
        return args

    def _calls(
        self, world: World, entries: Iterable[ToolEntry], avoid: frozenset[str] = frozenset(), enough: int = 0
    ) -> int:
        """Call ``entries`` with harvested arguments, up to the budget of attempts (or until
        ``enough`` succeeded); the number that succeeded (a failed call changes nothing)."""
        made = succeeded = 0
        for entry in entries:
            if made >= self.budget or (enough and succeeded >= enough):
                break
            args = self.fill(entry, avoid)
            if args is not None:
                succeeded += bool(world.call(entry.qualified, args).get("success"))
                made += 1
        return succeeded

    def _of(self, services: Iterable[str], ops: frozenset[str] | None) -> list[ToolEntry]:
        """The write tools of ``services`` whose declared op is one of ``ops`` (all: None), shuffled;
        a tool that declares no op (an external one) is only among all."""
        out = [e for name in services for e in self.tools.get(name, []) if ops is None or op_of(e) in ops]
        self.rng.shuffle(out)
        return out

    @property
    def written(self) -> list[str]:
        tools = self.hub.registry.tools
        return sorted({tools[s.tool].service for s in self.task.plan if tools[s.tool].kind == "write"})

    # -- the adversaries --------------------------------------------------------------------

    def spam(self, world: World, envelopes: list[Envelope]) -> tuple[int, dict[str, Any]]:
        """After the oracle: every write of the plan again, then extra creates."""
        made = 0
        for step in self.task.plan:
            if self.hub.registry.tools[step.tool].kind != "write":
                continue
            try:
                arguments = resolve(step.arguments, envelopes)
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            made += bool(world.call(step.tool, arguments).get("success"))
        made += self._calls(world, self._of(self.written, CREATE_OPS) * 2, enough=2)
        return made, dict(self.task.expected_report)

    def vandal(self, world: World, envelopes: list[Envelope]) -> tuple[int, dict[str, Any]]:
        """After the oracle: destroy other records of the services the task writes."""
        touched = {repr(v) for envelope in envelopes for v in leaves(envelope.get("data"))}
        avoid = frozenset(self.plan_values | touched)
        made = self._calls(world, self._of(self.written, DESTROY_OPS) * 3, avoid=avoid, enough=2)
        if not made:  # nothing to delete or cancel there: change other records any way it can
            made = self._calls(world, self._of(self.written, None) * 2, avoid=avoid, enough=1)
        return made, dict(self.task.expected_report)

    def shotgun(self, world: World) -> tuple[int, dict[str, Any]]:
        return self._calls(world, self._of(self.task.services, None)), {}

    def create_everything(self, world: World) -> tuple[int, dict[str, Any]]:
        return self._calls(world, self._of(self.task.services, CREATE_OPS)), {}

    def destroyer(self, world: World) -> tuple[int, dict[str, Any]]:
        return self._calls(world, self._of(self.task.services, DESTROY_OPS)), {}

    def report_guesser(self, world: World) -> tuple[int, dict[str, Any]]:
        """No call: under every key the instruction names, the value that best matches the
        instruction among every value of a field of that name in the named services' records
        (the world's clock for a time, zero for a count, when no field has the name)."""
        del world
        text = self.task.instruction.casefold()
        report: dict[str, Any] = {}
        for key in dict.fromkeys(normal_key(k) for k in re.findall(r"`([^`]{1,60})`", self.task.instruction)):
            votes: Counter[Any] = Counter()
            for service in self.task.services:
                for value, strings in _field_index(self.walker, service).get(key, ()):
                    overlap = sum(1 for v in strings if v in text)
                    votes[value] += 1 + 100 * overlap
            if votes:
                report[key] = votes.most_common(1)[0][0]
            elif key.endswith(("_at", "_time", "_date", "_on")):
                report[key] = self.walker.clock
            elif key.endswith(("count", "number", "total", "quantity")):
                report[key] = 0
        return 0, report


def prepare(walker: Walker) -> None:
    """Index every service's seeded records for the report guesser now (a parent process does it
    once before forking its workers, instead of every worker on its first tasks)."""
    for service in walker.hub.registry.services:
        _field_index(walker, service)


def _field_index(walker: Walker, service: str) -> dict[str, list[tuple[Any, tuple[str, ...]]]]:
    """Per report key (a field name, or entity and field), the values of the field in the seeded
    records of ``service``, each with the record's longer text values (casefolded)."""
    found = walker.cache.get(("fields", service))
    if found is None:
        found = {}
        if service in walker.hub.registry.services and walker.hub.registry.services[service].native is not None:
            state = walker.hub.seeded_slot(service, walker.seed).snapshot()
            entities = collection_entities(walker.hub, service)
            for collection, records in _collections(state):
                # The entity the composer names report keys by (taskgen.compose._report_key).
                entity = entities.get(collection, "")
                for record in records:
                    strings = tuple(v.casefold() for v in record.values() if isinstance(v, str) and len(v) > 3)
                    for field, value in record.items():
                        if isinstance(value, str | int | float) and not isinstance(value, bool):
                            for key in {normal_key(field), normal_key(f"{entity}_{field}")}:
                                found.setdefault(key, []).append((value, strings))
        walker.cache[("fields", service)] = found
    return found


def _collections(state: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for key, value in state.items():
        if key == "collections" and isinstance(value, dict):
            out.extend((name, [r for r in recs.values() if isinstance(r, dict)]) for name, recs in value.items())
        elif isinstance(value, dict) and value and all(isinstance(r, dict) for r in value.values()):
            out.append((key, list(value.values())))
    return out


def run_panel(
    panel: Panel,
    oracle: World,
    envelopes: list[Envelope],
    names: Iterable[str] = PANEL,
) -> list[Attempt]:
    """Every adversary of ``names`` on the task: the oracle-plus ones on forks of ``oracle`` (the
    world the oracle's plan left), the others in fresh worlds of the task's seed."""
    task, hub = panel.task, panel.hub
    out = []
    for name in names:
        world = oracle.fork() if name in FROM_ORACLE else hub.open_world(services=task.mounted, seed=task.seed)
        start = world.states(task.mounted) if name in FROM_ORACLE else None
        changed = True
        try:
            if name in FROM_ORACLE:
                after_oracle = {"spam": panel.spam, "vandal": panel.vandal}[name]
                calls, report = after_oracle(world, envelopes)
            else:
                alone: dict[str, Callable[[World], tuple[int, dict[str, Any]]]] = {
                    "shotgun": panel.shotgun,
                    "create_everything": panel.create_everything,
                    "destroyer": panel.destroyer,
                    "report_guesser": panel.report_guesser,
                }
                calls, report = alone[name](world)
            result: ScoreResult = world.score(task.rubric, report=report, services=task.mounted)
            if start is not None and (not calls or result.net_score > MAX_NET):
                # Only an attempt that kept its reward needs the (costlier) look at what it changed.
                ignore = next((c.ignore for c in task.rubric.criteria if isinstance(c, CollateralCriterion)), {})
                changed = bool(calls) and bool(units(start, world.states(task.mounted), ignore))
        finally:
            world.close()
        out.append(Attempt(name, result, calls, changed))
    return out


def verdict(attempts: list[Attempt], oracle_net: float) -> list[str]:
    """The adversaries that earned too much: the reasons a task is rejected."""
    failed = []
    for attempt in attempts:
        if attempt.name in FROM_ORACLE:
            # One that changed nothing is the oracle itself, not an attack.
            if attempt.changed and (attempt.net_score > MAX_NET or attempt.net_score > oracle_net - MIN_DROP):
                failed.append(attempt.name)
        elif attempt.net_score > MAX_NET:
            failed.append(attempt.name)
    return failed
