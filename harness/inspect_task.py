"""CompoWorld as an Inspect evaluation (``inspect-ai``, the ``inspect`` extra).

``inspect eval harness/inspect_task.py@compoworld -T tasks=tasks.jsonl --model openai/<model>`` runs every
task of a task file (from ``compoworld tasks generate``) as one Inspect sample:

- *setup* (:func:`open_world`) opens the sample's own world, wraps it in the one harness environment,
  :class:`harness.env.InProcessEnv` on the gateway surface (which records every call), and gives the model
  the gateway's four meta-tools (``hub.surfaces.GATEWAY_TOOLS``, schemas as the gateway lists them) and the
  harness's system prompt; every call goes through that environment, so it is recorded exactly as a harness
  episode's call is;
- the solver is Inspect's tool loop (``generate(tool_calls="loop")``; ``--solver`` replaces it, setup stays);
- the scorer (:func:`rubric`) reads the report from the final message as the harness does
  (:func:`harness.agents.parse_report`), scores the world against the task's rubric (``World.score``), and
  stores the episode as a :class:`harness.trajectory.Trajectory` in the run store — agent ``inspect:<model>``,
  rollout ``epoch - 1`` — so ``compoworld report`` and ``compoworld export sft`` read it like any run.

A call the model makes with arguments that do not match the meta-tool's schema is refused by Inspect itself
(a tool error in its transcript) and never reaches the world, so it is not among the stored calls.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Task as InspectTask
from inspect_ai import task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageTool
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver
from inspect_ai.tool import Tool, ToolDef, ToolParams

from harness.agents import parse_report, system_prompt, world_today
from harness.config import RunConfig
from harness.env import InProcessEnv
from harness.store import RunStore
from harness.trajectory import FinishReason, Trajectory
from hub.core import Hub
from hub.surfaces import GATEWAY_TOOLS
from hub.world import World
from taskgen.task import Task, read_jsonl

DEFAULT_STORE = "runs/runs.db"  # the harness CLI's default run store


class Episode:
    """One sample's world, its environment and when it started.

    A plain class, not a dataclass: ``inspect eval <file>`` executes this file as a module it does not put in
    ``sys.modules``, where ``dataclasses`` cannot resolve string annotations."""

    def __init__(self, task: Task, world: World, env: InProcessEnv) -> None:
        self.task = task
        self.world = world
        self.env = env
        self.started_at = time.time()
        self.recorded = False  # stored in the run store (by the scorer, or by cleanup when scoring never ran)


class Episodes:
    """The worlds of an evaluation's running samples, by sample uuid (one per sample and epoch): setup opens
    them, the scorer scores and records them, cleanup closes whatever scoring did not reach."""

    def __init__(self, hub: Hub, tasks: dict[str, Task], store: Path, run: str) -> None:
        self.hub = hub
        self.tasks = tasks
        self.store_path = store
        self.run = run
        self.open: dict[str, Episode] = {}
        self._store: RunStore | None = None

    @property
    def store(self) -> RunStore:
        """The run store, opened on first use: by the thread of Inspect's event loop, which scores and cleans up
        (a SQLite connection serves only the thread that opened it, and that need not be the task's)."""
        if self._store is None:
            self._store = RunStore(self.store_path)
        return self._store

    def start(self, uuid: str, task_id: str) -> Episode:
        if task_id not in self.tasks:
            raise KeyError(f"sample id {task_id!r} is not a task of this evaluation")
        task = self.tasks[task_id]
        world = self.hub.open_world(services=task.mounted, seed=task.seed)
        episode = Episode(task, world, InProcessEnv(world, "gateway"))
        self.open[uuid] = episode
        return episode

    def get(self, uuid: str) -> Episode:
        if uuid not in self.open:
            raise KeyError(f"sample {uuid!r} has no open world (did the compoworld setup run?)")
        return self.open[uuid]

    def record(
        self,
        state: TaskState,
        report: dict[str, Any],
        messages: list[dict[str, Any]],
        finish: FinishReason,
        error: str | None = None,
    ) -> tuple[str, Trajectory]:
        """Score the sample's world with ``report`` and store the episode, as the harness scores and stores one;
        its episode id and trajectory."""
        episode = self.get(state.uuid)
        result = episode.world.score(episode.task.rubric, report=report)
        trajectory = Trajectory(
            task_id=episode.task.id,
            agent=f"inspect:{state.model}",
            model=str(state.model),
            surface="gateway",
            path="inprocess",
            rollout=state.epoch - 1,
            messages=messages,
            tools=episode.env.tools(),
            tool_calls=list(episode.env.calls),
            report=report,
            final_hash=episode.world.hash(),
            criteria=result.criteria,
            score=result.score,
            net_score=result.net_score,
            success=result.success,
            finish_reason=finish,
            error=error,
            started_at=episode.started_at,
            duration_s=round(time.time() - episode.started_at, 4),
            services=episode.task.services,
        )
        episode.recorded = True
        return self.store.add(self.run, trajectory, episode.task), trajectory

    def close(self, state: TaskState) -> None:
        """Close the sample's world; an episode that was never scored (Inspect skips scoring a sample whose
        solver failed or was cancelled) is stored first as ``error`` with an empty report, as the harness stores
        an episode whose agent failed."""
        episode = self.open.get(state.uuid)
        if episode is None:
            return
        try:
            if not episode.recorded:
                message = "the sample ended without being scored (an error or a cancellation in Inspect)"
                self.record(state, {}, openai_messages(state.messages), "error", message)
        finally:
            del self.open[state.uuid]
            episode.world.close()


def gateway_tools(env: InProcessEnv) -> list[Tool]:
    """The gateway's four meta-tools as Inspect tools over ``env`` (names, descriptions and schemas as the
    gateway lists them); each answers with the envelope as JSON, as the harness's agents see it."""

    def bind(name: str) -> Tool:
        async def execute(**kwargs: Any) -> str:
            # On the event loop, not a worker thread: an in-process call is CPU-bound Python (a fraction of a
            # millisecond; a thread would not overlap it with anything under the GIL), and a thread handoff cost
            # 0.3-2.5 ms a call on 2 busy cores, more than the call itself.
            return json.dumps(env.call(name, kwargs))

        return execute

    return [
        ToolDef(
            bind(spec.name),
            name=spec.name,
            description=spec.description or spec.name,
            parameters=ToolParams.model_validate(spec.input_schema),
        ).as_tool()
        for spec in GATEWAY_TOOLS
    ]


@solver
def open_world(episodes: Episodes) -> Solver:
    """Open the sample's world; offer the gateway's tools and the harness's system prompt."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = episodes.start(state.uuid, str(state.sample_id))
        today = world_today(episode.world, episode.task.services)
        state.messages.insert(0, ChatMessageSystem(content=system_prompt("gateway", today)))
        state.tools = list(gateway_tools(episode.env))
        return state

    return solve


@scorer(metrics={"score": [mean(), stderr()], "net_score": [mean()], "success": [mean()]})
def rubric(episodes: Episodes) -> Scorer:
    """Score the sample's world against its task's rubric and store the episode in the run store."""

    async def score(state: TaskState, target: Target) -> Score:
        episode = episodes.get(state.uuid)
        report = parse_report(state.output.completion if state.output else None)
        messages = openai_messages(state.messages)
        # On the event loop, as the tool calls are: the run store's SQLite connection belongs to this thread.
        key, trajectory = episodes.record(state, report, messages, finish_reason(messages, episode))
        failed = [c.id for c in trajectory.criteria if not c.passed]
        return Score(
            value={"score": trajectory.score, "net_score": trajectory.net_score, "success": float(trajectory.success)},
            answer=json.dumps(report),
            explanation=f"failed criteria: {', '.join(failed)}" if failed else "every criterion passed",
            metadata={"episode_id": key, "run": episodes.run, "final_hash": trajectory.final_hash},
        )

    return score


def finish_reason(messages: list[dict[str, Any]], episode: Episode) -> FinishReason:
    """As the harness's OpenAI agent ends: a final answer without tool calls completes the episode (a do-nothing
    one is ``no_action``); a loop cut off with tool calls pending ran out of turns."""
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant" and not last.get("tool_calls"):
        return "completed" if episode.env.calls else "no_action"
    return "max_turns"


def openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Inspect's chat messages in the OpenAI format the harness stores (and SFT export reads)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ChatMessageAssistant):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.function, "arguments": json.dumps(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            out.append(entry)
        elif isinstance(message, ChatMessageTool):
            content = message.error.message if message.error else message.text
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.function, "content": content}
            )
        else:
            out.append({"role": message.role, "content": message.text})
    return out


def samples(tasks: Sequence[Task]) -> MemoryDataset:
    """One sample per task: the instruction as the user's message, the task id as the sample id."""
    return MemoryDataset(
        [
            Sample(
                input=t.instruction,
                id=t.id,
                metadata={"services": t.services, "seed": t.seed, "capabilities": t.meta.get("capabilities", [])},
            )
            for t in tasks
        ],
        name="compoworld",
    )


@task
def compoworld(
    tasks: str,
    store: str = DEFAULT_STORE,
    run: str | None = None,
    limit: int | None = None,
    max_messages: int = 80,
) -> InspectTask:
    """CompoWorld tasks through the gateway, scored by their rubrics, each episode stored in the run store.

    Args:
        tasks: a tasks JSONL file (``compoworld tasks generate``).
        store: the run store (SQLite) the episodes go to.
        run: the run's name in the store (default ``inspect-<date-time>``); an episode already stored under the
            same id (run, task, agent, epoch) is kept as it was.
        limit: only the first ``limit`` tasks.
        max_messages: Inspect's message limit per sample (turns times messages per turn).
    """
    from taskgen.generate import default_hub  # here, not at import: the hub takes seconds to build

    loaded = list(read_jsonl(tasks))[:limit]
    if not loaded:
        raise ValueError(f"tasks: {tasks!r} holds no task")
    by_id = {t.id: t for t in loaded}
    if len(by_id) != len(loaded):
        raise ValueError(f"tasks: {tasks!r} repeats a task id")
    name = run or f"inspect-{time.strftime('%Y%m%d-%H%M%S')}"
    RunStore(Path(store)).start_run(name, RunConfig(surface="gateway", path="inprocess"), loaded)
    hub = default_hub(services=sorted({s for t in loaded for s in t.mounted}))
    episodes = Episodes(hub, by_id, Path(store), name)

    async def close_world(state: TaskState) -> None:
        episodes.close(state)

    return InspectTask(
        dataset=samples(loaded),
        setup=open_world(episodes),
        solver=generate(tool_calls="loop"),
        cleanup=close_world,
        scorer=rubric(episodes),
        message_limit=max_messages,
    )
