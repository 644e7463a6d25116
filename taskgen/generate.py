"""Generating verified tasks: walk, compose, gate — deterministic for a seed."""

from __future__ import annotations

import gc
import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hub.core import Hub
from hub.registry import native_entry
from taskgen.adversaries import prepare as prepare_panel
from taskgen.compose import compose
from taskgen.flowmodel import Flow
from taskgen.gates import check_gates
from taskgen.instantiate import instantiate
from taskgen.pattern import load_patterns
from taskgen.story import compose_flow
from taskgen.task import Task
from taskgen.walk import Walker, WalkError, walker_for
from taskgen.workflow import Workflows


def default_hub(services: Iterable[str] | None = None, worldmodel: bool = True) -> Hub:
    """Every native service, plus the world model's simulated ones (rules backend); with
    ``services``, just those (only their modules are imported when all of them are native)."""
    from servers.registry import all_services, load_services

    if services is None:
        natives = list(all_services().values())
        missing: set[str] = set()
    else:
        wanted = list(dict.fromkeys(services))
        natives = sorted(load_services(wanted).values(), key=lambda s: s.name)  # as a full hub orders them
        missing = set(wanted) - {s.name for s in natives}
    extra = []
    if worldmodel and (services is None or missing):
        from worldmodel.catalog import simulated_services

        extra = [native_entry(s) for s in simulated_services() if services is None or s.name in missing]
    unknown = missing - {e.name for e in extra}
    if unknown:
        raise KeyError(f"unknown service(s) {sorted(unknown)}")
    return Hub.native(natives, extra=extra)


@dataclass
class Generation:
    tasks: list[Task] = field(default_factory=list)
    rejections: Counter[str] = field(default_factory=Counter)
    attempts: int = 0


Source = Literal["walks", "patterns"]
SOURCES: tuple[str, ...] = ("patterns", "walks")


class GenerationConfig(BaseModel):
    """What ``compoworld tasks generate`` generates, shared by the CLI and the Python API (:func:`generate_tasks`);
    the CLI keeps it in the output's ``.stats.json``. Every field here means the same in one process and on
    ``workers`` processes, so the same config gives the same tasks either way."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(100, description="verified tasks wanted")
    seed: int = Field(0, description="seed of the run: the world seed and the walks")
    services: list[str] | None = Field(None, description="the services to build tasks over (None: all)")
    worldmodel: bool = Field(True, description="mount the world model's simulated services")
    min_services: int = Field(2, description="services a task must involve at least")
    source: Source = Field("patterns", description="business workflow patterns, or random walks over the tool graph")
    workers: int = Field(1, ge=1, description="processes (1: in this process)")


TRIGGER_TRIES = 3
DISTRACTORS = 10
"""Services mounted beside a pattern task's own, none of which it needs (as in the published tasks)."""


def attempt(
    hub: Hub,
    walker: Walker,
    seed: int,
    index: int,
    min_services: int = 2,
    min_length: int = 3,
    max_length: int = 8,
    policy_rate: float = 0.45,
    source: Source = "walks",
    kept: set[tuple[str, ...]] | None = None,
) -> Task | list[str]:
    """Attempt number ``index`` of the run: a verified task, or the reasons it was rejected.
    ``kept``: the signatures of tasks earlier attempts kept (a repeat of one is rejected early).

    ``patterns``: a business workflow pattern instantiated over the hub (:mod:`taskgen.workflow`);
    ``walks``: a random walk over the typed dependency graph (:mod:`taskgen.walk`)."""
    if source == "patterns":
        return attempt_pattern(hub, walker, seed, index, min_services, kept)
    rng = random.Random(f"taskgen:{seed}:{index}")
    try:
        walk = walker.walk(rng, rng.randint(min_length, max_length))
    except WalkError as exc:
        return [exc.reason]
    try:
        if len(walk.services) < min_services:
            return ["too_few_services"]
        others = sorted(set(hub.registry.services) - set(walk.services))
        distractors = sorted(rng.sample(others, min(len(others), rng.randint(2, 3))))
        task, _ = compose(walk, f"t{seed}-{index:05d}", seed, rng, distractors, policy_rate)
    finally:
        walk.world.close()
    # The gates replay the plan in a fresh world from the seed, so a task is kept only when its
    # plan, as written (arguments referencing earlier results), reproduces what the walk did.
    return [f"gate:{gate}" for gate in check_gates(hub, task, walker)] or task


def distractor_pool(workflows: Workflows, flow: Flow) -> list[str]:
    """The services a pattern task may mount beside its own: every other one except the *rivals*
    of its writes, services with a write of the same op on the same entity kind ("create a task":
    a second tracker). The request names what to do, not the application (a person would say "add a
    task for it", knowing their team has one tracker), so a mounted rival would make it ambiguous:
    an agent that files the task in the other tracker did what was asked and is scored 0. Nor the
    services a hop was resolved without (``Flow.unmounted``: another application naming another
    account owner)."""
    rivals = rival_services(workflows, flow)
    return sorted(set(workflows.hub.registry.services) - set(flow.services) - rivals - flow.unmounted)


def rival_services(workflows: Workflows, flow: Flow) -> set[str]:
    """Services with a write of the same op on the same entity kind as a write of the task."""
    done = {(e.meta.op, e.meta.entity or "") for e in (s.entry for s in flow.steps) if e.kind == "write" and e.meta}
    return {entry.service for key in done for entry in workflows.writes.get(key, [])}


def rule_services(workflows: Workflows, flow: Flow) -> list[str]:
    """Services a task's house rules need mounted besides its own: where a rule held, the service of
    the step it forbade (the request still asks for it); where it did not, one that can do the rule's
    alternative. A missing one would give the branch away, or make the rule impossible to follow had
    the agent read the threshold otherwise. A hand-written service is preferred (the core
    applications: calendar, tracker, helpdesk …), then the first by name."""
    out: list[str] = []
    rivals = rival_services(workflows, flow)
    for stage in flow.stages:
        branch = stage.branch
        if branch is None:
            continue
        if stage.skipped is not None and stage.skipped.service not in {*flow.services, *out}:
            out.append(stage.skipped.service)
        alternative = branch.rule.instead
        if alternative is None or any(d.reaction is alternative for d in stage.done):
            continue
        offering = sorted(
            {e.service for e in workflows.index.writers(alternative)} - flow.unmounted, key=workflows.index.core_first
        )
        if offering and not set(offering) & {*flow.services, *out}:
            # not a rival of the task's own writes (a helpdesk, which also takes comments, beside
            # the tracker the task comments in) where another application offers the alternative
            out.append(next((name for name in offering if name not in rivals), offering[0]))
    return out


def pattern_distractors(workflows: Workflows, flow: Flow, rng: random.Random) -> list[str]:
    """The services mounted beside a pattern task's own: what its rules need, then random ones from
    :func:`distractor_pool` up to :data:`DISTRACTORS` in all (both read the pattern engine's index
    of writes, built once per hub, not the hub's every tool per attempt)."""
    needed = rule_services(workflows, flow)
    pool = [name for name in distractor_pool(workflows, flow) if name not in needed]
    return sorted([*needed, *rng.sample(pool, max(0, min(len(pool), DISTRACTORS - len(needed))))])


def workflows_for(hub: Hub, walker: Walker) -> Workflows:
    """The pattern engine of ``hub`` for the walker's seed, built once (kept with the hub)."""
    found = hub.derived.get(("workflows", walker.seed))
    if found is None:
        found = hub.derived[("workflows", walker.seed)] = Workflows(hub, walker)
    assert isinstance(found, Workflows)
    return found


def attempt_pattern(
    hub: Hub, walker: Walker, seed: int, index: int, min_services: int = 2, kept: set[tuple[str, ...]] | None = None
) -> Task | list[str]:
    """A task from a workflow pattern (chosen by the attempt's own random stream)."""
    rng = random.Random(f"taskgen:patterns:{seed}:{index}")
    # a follow-on ("once the new task exists") starts from a record the task made, never from a
    # seeded one: told of an old record, "the task just created" would not be true
    patterns = [p for p in load_patterns() if not p.trigger.chainable]
    pattern = rng.choice(patterns)
    workflows = workflows_for(hub, walker)
    flow = None
    for _ in range(TRIGGER_TRIES):  # another record in the trigger's state may suit the reactions
        try:
            flow = instantiate(workflows, pattern, rng)
            break
        except WalkError as exc:
            reason = exc.reason.split(":")[0]
    if flow is None:
        return [reason]
    try:
        if len(flow.services) < min_services:
            return ["too_few_services"]
        task = compose_flow(flow, f"p{seed}-{index:05d}", seed, rng, pattern_distractors(workflows, flow, rng))
    finally:
        flow.close()
    if kept is not None and signature(task) in kept:
        # an earlier attempt kept this very request: this one would be dropped as its repeat, so the
        # gates (most of an attempt's cost) are not run for it
        return ["duplicate"]
    return [f"gate:{gate}" for gate in check_gates(hub, task, walker)] or task


def generate(
    n: int,
    seed: int = 0,
    hub: Hub | None = None,
    min_services: int = 2,
    min_length: int = 3,
    max_length: int = 8,
    policy_rate: float = 0.45,
    on_task: Callable[[Task], None] | None = None,
    max_attempts: int | None = None,
    source: Source = "walks",
) -> Generation:
    """``n`` verified tasks; the same arguments give the same tasks, byte for byte."""
    hub = hub or default_hub()
    walker = walker_for(hub, seed)
    out = Generation()
    limit = max_attempts or n * 30
    seen: set[tuple[str, ...]] = set()
    with _frozen_heap():
        while len(out.tasks) < n and out.attempts < limit:
            result = attempt(
                hub, walker, seed, out.attempts, min_services, min_length, max_length, policy_rate, source, seen
            )
            out.attempts += 1
            result = _unseen(result, seen)
            if isinstance(result, list):
                out.rejections.update(result)
                continue
            out.tasks.append(result)
            if on_task is not None:
                on_task(result)
    return out


def generate_tasks(
    config: GenerationConfig, hub: Hub | None = None, on_progress: Callable[[int], None] | None = None
) -> Generation:
    """The tasks ``config`` describes, in this process or on ``config.workers`` processes; ``hub`` (default: one over
    ``config.services``) is the hub to generate over, ``on_progress`` is told how many tasks are found so far."""
    if config.workers > 1:
        return generate_parallel(
            config.n,
            config.seed,
            config.workers,
            config.services,
            config.worldmodel,
            config.min_services,
            on_progress=on_progress,
            hub=hub,
            source=config.source,
        )
    found: list[Task] = []

    def advance(task: Task) -> None:
        found.append(task)
        if on_progress is not None:
            on_progress(len(found))

    hub = hub or default_hub(config.services, worldmodel=config.worldmodel)
    return generate(config.n, config.seed, hub, min_services=config.min_services, on_task=advance, source=config.source)


def _unseen(result: Task | list[str], seen: set[tuple[str, ...]]) -> Task | list[str]:
    """``result``, or a rejection when an earlier task of the run is the same request: the same
    pattern on the same records (a batch of 20 asked twice for one deployment's release)."""
    if isinstance(result, list) or not result.meta.get("patterns"):
        return result
    found = signature(result)
    if found in seen:
        return ["duplicate"]
    seen.add(found)
    return result


def signature(task: Task) -> tuple[str, ...]:
    """What makes two pattern tasks the same request: the patterns and the records named."""
    return (*task.meta.get("patterns", []), *sorted(str(r["value"]) for r in task.meta.get("references", [])))


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """Keep the garbage collector out of the way of a generation run.

    Every attempt allocates and frees whole service states. With the default thresholds that
    keeps triggering collections, and each full one walks the hub's large, long-lived heap (its
    seeded states and caches) again (a third of the run time, once). The heap alive now is
    frozen (skipped until the run ends; a heap someone else froze is left as it is) and young
    collections wait for many more allocations (the states are freed by reference counting).
    """
    thresholds = gc.get_threshold()
    freeze = not gc.get_freeze_count()
    if freeze:
        gc.freeze()
    gc.set_threshold(max(thresholds[0], GC_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if freeze:
            gc.unfreeze()


GC_THRESHOLD = 50_000
"""Allocations between young collections while generating (the default is 700)."""


_WORKER: dict[str, Any] = {}


def prepared(hub: Hub, seed: int) -> Walker:
    """The walker of ``hub`` for ``seed`` with every per-seed cache filled: the seeded values the
    walks use and the seeded records the adversary gate's report guesser indexes."""
    walker = walker_for(hub, seed).prepare()
    prepare_panel(walker)
    workflows_for(hub, walker)  # the pattern engine's indexes, built once before workers fork
    return walker


def _init_worker(hub: Hub | None, services: list[str] | None, worldmodel: bool, seed: int) -> None:
    hub = hub or default_hub(services, worldmodel)  # a forked worker shares its parent's hub
    _WORKER.update(hub=hub, walker=walker_for(hub, seed), seed=seed)
    # A worker process only generates: keep its hub out of the collector's way for good.
    gc.freeze()
    gc.set_threshold(max(gc.get_threshold()[0], GC_THRESHOLD), *gc.get_threshold()[1:])


def _work(indices: list[int], min_services: int, source: Source = "walks") -> list[tuple[int, str | list[str]]]:
    out: list[tuple[int, str | list[str]]] = []
    for index in indices:
        # this worker's own kept tasks, all of earlier attempts: a repeat of one is a repeat for the run
        kept: set[tuple[str, ...]] = _WORKER.setdefault("kept", set())
        result = attempt(
            _WORKER["hub"], _WORKER["walker"], _WORKER["seed"], index, min_services, source=source, kept=kept
        )
        if isinstance(result, Task) and result.meta.get("patterns"):
            kept.add(signature(result))
        out.append((index, result if isinstance(result, list) else result.model_dump_json()))
    return out


def generate_parallel(
    n: int,
    seed: int = 0,
    workers: int = 2,
    services: list[str] | None = None,
    worldmodel: bool = True,
    min_services: int = 2,
    chunk: int = 8,
    on_progress: Callable[[int], None] | None = None,
    hub: Hub | None = None,
    source: Source = "walks",
) -> Generation:
    """Like :func:`generate` on ``workers`` processes, with the same result: attempts are numbered,
    every number's outcome depends only on the seed, and tasks are kept in attempt order.

    Where processes can be forked, the hub (``hub``, or one built here over ``services``) is built
    once and every worker inherits it with its caches, instead of building its own; elsewhere each
    worker builds one over ``services`` (``hub`` is then not used).
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from multiprocessing.context import BaseContext

    context: BaseContext = multiprocessing.get_context()
    if "fork" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("fork")
        hub = hub or default_hub(services, worldmodel)
        prepared(hub, seed)  # built and filled once, inherited
    else:
        hub = None
    results: dict[int, Task | list[str]] = {}
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init_worker, initargs=(hub, services, worldmodel, seed)
    )
    try:
        next_index = 0
        pending: set[Future[list[tuple[int, str | list[str]]]]] = set()
        found = 0  # tasks among all results
        seen: set[tuple[str, ...]] = set()
        dropped = 0  # tasks found that repeat an earlier one
        complete = verified = 0  # attempts 0..complete-1 are all in, and hold this many tasks

        def submit() -> None:
            nonlocal next_index
            pending.add(pool.submit(_work, list(range(next_index, next_index + chunk)), min_services, source))
            next_index += chunk

        for _ in range(workers * 2):
            submit()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                pending.discard(future)
                for index, sent in future.result():
                    # Parsed while the workers keep going, not all at the end.
                    results[index] = Task.model_validate_json(sent) if isinstance(sent, str) else sent
                    found += isinstance(sent, str)
            while complete in results and verified < n:
                kept = _unseen(results[complete], seen)
                dropped += isinstance(results[complete], Task) and isinstance(kept, list)
                results[complete] = kept
                verified += isinstance(results[complete], Task)
                complete += 1
            if on_progress is not None:
                on_progress(min(found, n))
            if verified >= n:
                break  # the first n tasks are settled: what is still running cannot change them
            if found - dropped < n and next_index < n * 30:  # a repeat found later is no task
                submit()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    out = Generation()
    for index in sorted(results):
        if len(out.tasks) >= n:
            break
        out.attempts = index + 1
        outcome = results[index] if index < complete else _unseen(results[index], seen)
        if isinstance(outcome, list):
            out.rejections.update(outcome)
        else:
            out.tasks.append(outcome)
    return out


def stats(tasks: list[Task], rejections: dict[str, int] | None = None) -> dict[str, Any]:
    """The figures ``compoworld tasks stats`` prints."""

    def median(values: Iterator[float] | list[float]) -> float:
        items = list(values)
        return float(statistics.median(items)) if items else 0.0

    share = _share(tasks)
    rules: list[dict[str, Any]] = [t.meta["rule"] for t in tasks if t.meta.get("rule")]
    return {
        "n_tasks": len(tasks),
        "median_services": median(len(t.services) for t in tasks),
        "median_written_services": median(len(_written(t)) for t in tasks),
        "median_distractors": median(len(t.distractor_services) for t in tasks),
        "median_oracle_calls": median(len(t.plan) for t in tasks),
        "rule_share": share(lambda t: bool(t.meta.get("rule"))),
        # a rule that held for any record of a batch sent that record down the other branch
        "rule_branch_share": share(
            lambda t: any(r.get("held") for r in t.meta.get("rules") or [t.meta.get("rule") or {}])
        ),
        "rule_branch_share_of_rules": round(sum(bool(r.get("held")) for r in rules) / len(rules), 4) if rules else 0.0,
        "trap_share": share(lambda t: bool(t.meta.get("traps"))),
        "batch_share": share(lambda t: int(t.meta.get("records", 1)) > 1),
        "report_kinds": dict(sorted(Counter(_report_kind(t) for t in tasks if t.expected_report).items())),
        "patterns_used": len({p for t in tasks for p in t.meta.get("patterns") or [t.meta.get("pattern")] if p}),
        "median_transfers": median(len(t.transfers) for t in tasks),
        "median_length": median(len(t.plan) for t in tasks),
        "median_criteria": median(len(t.rubric.criteria) for t in tasks),
        "policy_share": round(sum(1 for t in tasks if t.policies) / len(tasks), 4) if tasks else 0.0,
        "report_share": round(sum(1 for t in tasks if t.expected_report) / len(tasks), 4) if tasks else 0.0,
        "distinct_service_combos": len({tuple(sorted(t.services)) for t in tasks}),
        "services_used": len({s for t in tasks for s in t.services}),
        "gate_rejections": dict(sorted((rejections or {}).items())),
    }


def _share(tasks: list[Task]) -> Callable[[Callable[[Task], bool]], float]:
    def share(test: Callable[[Task], bool]) -> float:
        return round(sum(1 for t in tasks if test(t)) / len(tasks), 4) if tasks else 0.0

    return share


def _written(task: Task) -> set[str]:
    known = task.meta.get("written_services")
    if known is not None:
        return set(known)
    return {
        s
        for s in task.services
        if any(c.service == s for c in task.rubric.criteria if not c.negative and hasattr(c, "service"))
    }


def _report_kind(task: Task) -> str:
    key = next(iter(task.expected_report)).rstrip("0123456789").rstrip("_")  # a batch's task_key_1
    return key.rsplit("_", 1)[-1]
