"""Generating verified tasks: walk, compose, gate — deterministic for a seed."""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hub.core import Hub
from hub.registry import native_entry
from taskgen.compose import compose
from taskgen.gates import check_gates
from taskgen.task import Task
from taskgen.walk import Walker, WalkError


def default_hub(services: Iterable[str] | None = None, worldmodel: bool = True) -> Hub:
    """Every native service, plus the world model's simulated ones (rules backend)."""
    from servers.registry import all_services

    natives = list(all_services().values())
    extra = []
    if worldmodel:
        from worldmodel.catalog import simulated_services

        extra = [native_entry(s) for s in simulated_services()]
    hub = Hub.native(natives, extra=extra)
    if services is not None:
        keep = set(services)
        unknown = keep - set(hub.registry.services)
        if unknown:
            raise KeyError(f"unknown service(s) {sorted(unknown)}")
        hub = Hub.native([s for s in natives if s.name in keep], extra=[e for e in extra if e.name in keep])
    return hub


@dataclass
class Generation:
    tasks: list[Task] = field(default_factory=list)
    rejections: Counter[str] = field(default_factory=Counter)
    attempts: int = 0


def attempt(
    hub: Hub,
    walker: Walker,
    seed: int,
    index: int,
    min_services: int = 2,
    min_length: int = 3,
    max_length: int = 8,
    policy_rate: float = 0.45,
) -> Task | list[str]:
    """Walk number ``index`` of the run: a verified task, or the reasons it was rejected."""
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
        task, oracle = compose(walk, f"t{seed}-{index:05d}", seed, rng, distractors, policy_rate)
    finally:
        walk.world.close()
    try:
        failed = check_gates(hub, task, oracle)
    finally:
        oracle.world.close()
    return [f"gate:{gate}" for gate in failed] or task


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
) -> Generation:
    """``n`` verified tasks; the same arguments give the same tasks, byte for byte."""
    hub = hub or default_hub()
    walker = Walker(hub, seed)
    out = Generation()
    limit = max_attempts or n * 30
    while len(out.tasks) < n and out.attempts < limit:
        result = attempt(hub, walker, seed, out.attempts, min_services, min_length, max_length, policy_rate)
        out.attempts += 1
        if isinstance(result, list):
            out.rejections.update(result)
            continue
        out.tasks.append(result)
        if on_task is not None:
            on_task(result)
    return out


_WORKER: dict[str, Any] = {}


def _init_worker(services: list[str] | None, worldmodel: bool, seed: int) -> None:
    hub = default_hub(services, worldmodel)
    _WORKER.update(hub=hub, walker=Walker(hub, seed), seed=seed)


def _work(indices: list[int], min_services: int) -> list[tuple[int, str | list[str]]]:
    out: list[tuple[int, str | list[str]]] = []
    for index in indices:
        result = attempt(_WORKER["hub"], _WORKER["walker"], _WORKER["seed"], index, min_services)
        out.append((index, result if isinstance(result, list) else result.model_dump_json()))
    return out


def generate_parallel(
    n: int,
    seed: int = 0,
    workers: int = 2,
    services: list[str] | None = None,
    worldmodel: bool = True,
    min_services: int = 2,
    chunk: int = 16,
    on_progress: Callable[[int], None] | None = None,
) -> Generation:
    """Like :func:`generate` on ``workers`` processes, with the same result: attempts are numbered,
    every number's outcome depends only on the seed, and tasks are kept in attempt order."""
    from concurrent.futures import ProcessPoolExecutor

    results: dict[int, str | list[str]] = {}
    out = Generation()
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(services, worldmodel, seed)) as pool:
        next_index = 0
        pending = set()

        def submit() -> None:
            nonlocal next_index
            pending.add(pool.submit(_work, list(range(next_index, next_index + chunk)), min_services))
            next_index += chunk

        for _ in range(workers * 2):
            submit()
        while pending:
            done = next(iter(pending))
            for future in list(pending):
                if future.done():
                    done = future
                    break
            pending.discard(done)
            results.update(done.result())
            verified = sum(1 for r in results.values() if isinstance(r, str))
            if on_progress is not None:
                on_progress(min(verified, n))
            if verified < n and next_index < n * 30:
                submit()
    for index in sorted(results):
        if len(out.tasks) >= n:
            break
        out.attempts = index + 1
        result = results[index]
        if isinstance(result, list):
            out.rejections.update(result)
        else:
            out.tasks.append(Task.model_validate_json(result))
    return out


def stats(tasks: list[Task], rejections: dict[str, int] | None = None) -> dict[str, Any]:
    """The figures ``compoworld tasks stats`` prints."""

    def median(values: Iterator[float] | list[float]) -> float:
        items = list(values)
        return float(statistics.median(items)) if items else 0.0

    return {
        "n_tasks": len(tasks),
        "median_services": median(len(t.services) for t in tasks),
        "median_transfers": median(len(t.transfers) for t in tasks),
        "median_length": median(len(t.plan) for t in tasks),
        "median_criteria": median(len(t.rubric.criteria) for t in tasks),
        "policy_share": round(sum(1 for t in tasks if t.policies) / len(tasks), 4) if tasks else 0.0,
        "report_share": round(sum(1 for t in tasks if t.expected_report) / len(tasks), 4) if tasks else 0.0,
        "distinct_service_combos": len({tuple(sorted(t.services)) for t in tasks}),
        "services_used": len({s for t in tasks for s in t.services}),
        "gate_rejections": dict(sorted((rejections or {}).items())),
    }
