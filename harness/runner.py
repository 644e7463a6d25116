"""Running many episodes: locally with anyio (``parallel`` workers) or on Ray actors.

A run is named; running it again resumes it: episodes already in the store are skipped, the
rest run and are stored one by one as they finish, so an interrupted run loses at most the
episodes in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread

from harness.agent_spec import AgentSpec
from harness.agents import Agent
from harness.config import RunConfig
from harness.episode import run_episode
from harness.jobs import Job, plan_jobs
from harness.ray_backend import run_on_ray
from harness.store import RunStore, episode_id
from harness.trajectory import Trajectory
from hub.core import Hub
from taskgen.task import Task


@dataclass
class RunSummary:
    run: str
    ran: int
    skipped: int
    seconds: float


def run(
    hub: Hub,
    tasks: Sequence[Task],
    agents: Sequence[Agent | AgentSpec],
    store: RunStore,
    run_id: str,
    config: RunConfig | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> RunSummary:
    """Run every (task, agent, rollout) not yet in the store; store each episode as it finishes.

    ``agents`` are agents or the specs that build them; the run stores ``config`` with their specs
    (``config.agents`` is filled in from ``agents``).
    """
    started = time.perf_counter()
    config = config or RunConfig()
    path = config.episode_path()
    built = [a.build() if isinstance(a, AgentSpec) else a for a in agents]
    specs = [a if isinstance(a, AgentSpec) else AgentSpec.of(a) for a in agents]
    config = config.model_copy(update={"agents": specs})
    store.start_run(run_id, config, tasks)
    done = store.done(run_id)
    by_name = {a.name: a for a in built}
    surface, seed, parallel = config.surface, config.seed, config.parallel
    todo = [
        j
        for j in plan_jobs(tasks, built, config.rollouts)
        if episode_id(run_id, j.task.id, j.agent, surface, j.rollout) not in done
    ]
    skipped = len(tasks) * len(built) * config.rollouts - len(todo)

    def finish(trajectory: Trajectory, task: Task) -> None:
        store.add(run_id, trajectory, task)
        if on_episode is not None:
            on_episode(trajectory)

    if config.backend == "ray":
        for trajectory, task in run_on_ray(hub, todo, {s.name: s for s in specs}, config):
            finish(trajectory, task)
    elif parallel <= 1:
        for job in todo:
            finish(run_episode(hub, job.task, by_name[job.agent], surface, path, job.rollout, seed), job.task)
    else:

        async def main() -> None:
            limiter = anyio.CapacityLimiter(parallel)

            async def one(job: Job) -> None:
                trajectory = await anyio.to_thread.run_sync(
                    run_episode,
                    hub,
                    job.task,
                    by_name[job.agent],
                    surface,
                    path,
                    job.rollout,
                    seed,
                    limiter=limiter,
                )
                finish(trajectory, job.task)

            async with anyio.create_task_group() as group:
                for job in todo:
                    group.start_soon(one, job)

        anyio.run(main)
    return RunSummary(run_id, len(todo), skipped, time.perf_counter() - started)
