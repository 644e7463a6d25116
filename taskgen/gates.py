"""The five gates every generated task passes before it is kept.

1. ``oracle``: the oracle plan runs without an error and scores 1.0 (net 1.0 too).
2. ``null``: a do-nothing agent passes none of the positive criteria and scores 0 (negative
   criteria pass trivially for it: they act as penalties, not points).
3. ``necessary``: removing any single write step of the oracle plan fails at least one criterion.
4. ``leak``: no carried or reported value appears in the instruction.
5. ``ambiguous``: every record the instruction names (``meta["references"]``: the trigger, a
   project a task is filed under) is named by a value exactly one seeded record of its service
   holds, so a careful agent never has to guess which one is meant.
6. ``adversary:<name>``: no built-in adversary (:mod:`taskgen.adversaries`: spam or vandalism
   after the oracle, shotgun writes, creating or destroying everything, report guessing) earns
   reward. Run only when the other gates pass (it costs the most).

The ``necessary`` gate needs the final world of the plan without step ``i``. When no later step
writes the service ``i`` writes, that service ends the variant run exactly as it was just before
step ``i`` (reads never change a state, and every service keeps its own): a positive criterion on
it that fails there fails in the variant, and nothing has to be run. Only when that does not
decide it is the plan re-run from the world just before step ``i`` (the oracle run's checkpoint).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hub.core import Hub
from hub.rubric import RecordCriterion, ServiceUntouchedCriterion, UnchangedCriterion, check
from hub.world import World
from servers.framework import Envelope, error
from taskgen.adversaries import Panel, run_panel, verdict
from taskgen.compose import leaks
from taskgen.oracle import continue_plan, run_plan
from taskgen.task import Task, resolve
from taskgen.walk import Walker, walker_for

GATES = ("oracle", "null", "necessary", "leak", "ambiguous", "adversary")

STATE_CRITERIA = (RecordCriterion, UnchangedCriterion, ServiceUntouchedCriterion)
"""Criteria that read nothing but the initial and final state of their own ``service``."""


def check_gates(hub: Hub, task: Task, walker: Walker | None = None, adversaries: bool = True) -> list[str]:
    """The names of the gates ``task`` fails (empty: keep it).

    The plan is replayed in a fresh world from the task's seed (the ``oracle`` gate), keeping a
    checkpoint just before every write for the ``necessary`` gate to resume from; the adversaries
    that start from the oracle's run start from that world. ``walker`` (the hub's walker for the
    task's seed) supplies the adversaries' harvested values; one is built when not given.
    """
    failed: list[str] = []
    positives = [c for c in task.rubric.criteria if not c.negative]
    if not positives:
        return ["oracle"]
    writes = [i for i, step in enumerate(task.plan) if hub.registry.tools[step.tool].kind == "write"]
    oracle = run_plan(hub, task.plan, task.seed, task.mounted, record=False, checkpoints=writes)
    initial = oracle.world.initial_states(task.mounted)
    try:
        result = oracle.world.score(task.rubric, report=task.expected_report, services=task.mounted)
        if not all(e.get("success") for e in oracle.envelopes) or result.score < 1.0 or result.net_score < 1.0:
            failed.append("oracle")
        oracle_net = result.net_score
        final = oracle.world.fork()  # the adversaries that start from the oracle's run start here
    finally:
        oracle.world.close()
    null = hub.open_world(services=task.mounted, seed=task.seed)
    try:
        result = null.score(task.rubric, report={})
        if result.score != 0 or any(c.passed for c in result.criteria if not c.negative):
            failed.append("null")
    finally:
        null.close()
    total = sum(c.weight for c in positives)
    for index in writes:
        start = oracle.checkpoints.pop(index)
        try:
            if _fails_without(hub, task, index, _before(hub, task, index, start), initial, positives, total):
                continue
            if _fails_alone(hub, task, index, start, oracle.envelopes, initial, positives, total):
                continue
            # Resume from the world just before the step, so the steps before it are not re-run.
            dropped = continue_plan(start, task.plan, oracle.envelopes[:index], index, skip=[index], record=False)
            if dropped.world.score(task.rubric, report=task.expected_report).score >= 1.0:
                failed.append("necessary")
                break
        finally:
            start.close()
    for leftover in oracle.checkpoints.values():
        leftover.close()
    if leaks(task):
        failed.append("leak")
    if ambiguous(task, walker or walker_for(hub, task.seed)):
        failed.append("ambiguous")
    try:
        if adversaries and not failed:
            panel = Panel(walker or walker_for(hub, task.seed), task)
            attempts = run_panel(panel, final, oracle.envelopes)
            failed.extend(f"adversary:{name}" for name in verdict(attempts, oracle_net))
    finally:
        final.close()
    return failed


def ambiguous(task: Task, walker: Walker) -> list[str]:
    """The references of ``task`` that do not name exactly one seeded record of their service:
    by its name alone, or by its name and the qualifier the instruction gives with it."""
    out = []
    for ref in task.meta.get("references", []):
        service, value, qualifier = str(ref["service"]), str(ref["value"]), ref.get("qualifier")
        if not qualifier:
            if walker.anchor_counts(service)[value] != 1:
                out.append(value)
            continue
        named = [r for r in walker.seeded_records(service) if value in (v for v in r.values() if isinstance(v, str))]
        if sum(1 for r in named if r.get(qualifier["field"]) == qualifier["value"]) != 1:
            out.append(f"{value} ({qualifier['field']} {qualifier['value']})")
    return out


def _fails_alone(
    hub: Hub,
    task: Task,
    index: int,
    start: World,
    envelopes: list[Envelope],
    initial: Mapping[str, Any],
    positives: list[Any],
    total: float,
) -> bool:
    """Whether the plan without write ``index`` surely scores below 1.0, judged by re-running only
    the later steps of the service it writes (on a fork of ``start``, the world just before it).

    Another service's step cannot change this service's state, so its oracle envelope stands in for
    it, as long as its arguments resolve as they did in the oracle's run; when one does not (it
    used a result the variant changed), only the full re-run can tell, and this says False."""
    service = hub.registry.tools[task.plan[index].tool].service
    if service not in start.stateful_services:
        return False
    variant = start.fork()
    try:
        seen: list[Envelope] = [*envelopes[:index], error(499, "step skipped")]
        for step in task.plan[index + 1 :]:
            try:
                arguments: Any = resolve(step.arguments, seen)
            except (KeyError, IndexError, TypeError, ValueError):
                arguments = None
            if hub.registry.tools[step.tool].service == service:
                seen.append(error(424, "missing") if arguments is None else variant.call(step.tool, arguments))
                continue
            if arguments != resolve(step.arguments, envelopes):
                return False
            seen.append(envelopes[len(seen)])
        final = variant.slot(service).snapshot()
    finally:
        variant.close()
    return _fails_on(task, service, final, initial, positives, total)


def _before(hub: Hub, task: Task, index: int, start: World) -> Any:
    """The state of the service write ``index`` changes, just before it (None for a service whose
    state is not in the world, such as an external one)."""
    service = hub.registry.tools[task.plan[index].tool].service
    return start.slot(service).snapshot() if service in start.stateful_services else None


def _fails_without(
    hub: Hub, task: Task, index: int, before: Any, initial: Mapping[str, Any], positives: list[Any], total: float
) -> bool:
    """Whether the plan without write ``index`` surely scores below 1.0, judged from ``before`` (the
    state of the service it writes just before it) alone; False when only a re-run can tell."""
    service = hub.registry.tools[task.plan[index].tool].service
    if before is None:
        return False
    for step in task.plan[index + 1 :]:
        entry = hub.registry.tools[step.tool]
        if entry.service == service and entry.kind == "write":
            return False  # the service may change again after the dropped step
    return _fails_on(task, service, before, initial, positives, total)


def _fails_on(
    task: Task, service: str, state: Any, initial: Mapping[str, Any], positives: list[Any], total: float
) -> bool:
    """Whether, with ``service`` ending in ``state``, some positive criterion on it fails and so the
    score surely stays below 1.0 (the other services' criteria cannot make up its weight)."""
    final = {service: state}
    for criterion in positives:
        if not isinstance(criterion, STATE_CRITERIA) or criterion.service != service:
            continue
        if not check(criterion, initial, final, task.expected_report).passed:
            # The variant's score is at most the weight of the other positives over all of them.
            return round((total - criterion.weight) / total, 6) < 1.0
    return False
