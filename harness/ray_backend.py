"""Episodes on Ray: actors each hold a hub and run episodes; results stream back as they finish.

The driver keeps the run store: every finished episode is stored as soon as ``ray.wait`` returns
it, so resuming works exactly as with the local backend. Episodes are deterministic, so the Ray
backend gives the same scores as the local one for the same seeds. ``ray.init`` is called only
when no Ray instance is connected (``ray.init(address=...)`` beforehand targets a cluster).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.agent_spec import AgentSpec
from harness.config import RunConfig
from harness.episode import run_episode
from harness.jobs import Job
from harness.trajectory import Trajectory
from hub.core import Hub
from taskgen.task import Task


def hub_spec(hub: Hub) -> dict[str, Any]:
    """The service set of a hub, for actors to rebuild the same hub (externals cannot travel)."""
    sources = {name: entry.source for name, entry in hub.registry.services.items()}
    if "external" in sources.values():
        raise ValueError("the Ray backend cannot ship external MCP servers to actors; mount them locally")
    return {"services": sorted(sources), "worldmodel": "simulated" in sources.values()}


class EpisodeActor:
    """Holds one hub and runs episodes on it (wrapped with ``ray.remote`` at run time)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        # Imported here, not at module level, for start-up speed: only actors build a hub (the
        # task generator's default one, ~0.3 s to import), never the driver that imports this module.
        from taskgen.generate import default_hub

        self.hub = default_hub(spec["services"], worldmodel=spec["worldmodel"])

    def run(self, task_json: str, agent_json: str, config_json: str, rollout: int) -> str:
        """One episode; everything travels as JSON of the driver's models, the trajectory comes back so."""
        task = Task.model_validate_json(task_json)
        agent = AgentSpec.model_validate_json(agent_json).build()
        config = RunConfig.model_validate_json(config_json)
        trajectory = run_episode(self.hub, task, agent, config.surface, config.episode_path(), rollout, config.seed)
        return trajectory.model_dump_json()


def run_on_ray(
    hub: Hub, jobs: list[Job], agents: Mapping[str, AgentSpec], config: RunConfig
) -> Iterator[tuple[Trajectory, Task]]:
    """Run ``jobs`` on ``config.parallel`` actors, yielding each scored episode as it finishes."""
    import ray

    actors = max(1, config.parallel)
    if not ray.is_initialized():
        ray.init(num_cpus=actors, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    remote: Any = ray.remote(EpisodeActor)  # Ray's actor typing does not follow the wrapped class
    spec = hub_spec(hub)
    pool: list[Any] = [remote.remote(spec) for _ in range(actors)]
    specs = {name: agent.model_dump_json() for name, agent in agents.items()}
    config_json = config.model_dump_json()
    pending: dict[Any, Task] = {}
    for number, job in enumerate(jobs):
        actor = pool[number % len(pool)]
        ref = actor.run.remote(job.task.model_dump_json(), specs[job.agent], config_json, job.rollout)
        pending[ref] = job.task
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            task = pending.pop(ref)
            yield Trajectory.model_validate_json(ray.get(ref)), task
    for actor in pool:
        ray.kill(actor)
