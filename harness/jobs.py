"""The jobs of a run, whichever backend runs them: one episode each, a task run by one agent as one
rollout (agents by name, so that a job can travel to a Ray actor)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.agents import Agent
from taskgen.task import Task


@dataclass(frozen=True)
class Job:
    task: Task
    agent: str
    rollout: int


def plan_jobs(tasks: Sequence[Task], agents: Sequence[Agent], rollouts: int) -> list[Job]:
    return [Job(t, a.name, r) for t in tasks for a in agents for r in range(rollouts)]
