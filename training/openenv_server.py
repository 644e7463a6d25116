"""CompoWorld as an OpenEnv environment: ``compoworld serve openenv`` (needs the ``openenv`` extra).

An OpenEnv server (``openenv-core``'s own :class:`~openenv.core.env_server.http_server.HTTPEnvServer`) whose
sessions are task episodes on the gateway surface, the one harness environment
(:class:`harness.env.InProcessEnv`, which records every call):

- ``reset(task_id=… | index=… | seed=…)`` opens a fresh world for a task of the task file (by id, by index, by
  ``seed`` modulo the number of tasks, else the next one in turn) and observes the task: its id, the
  instruction, the system prompt the harness gives agents, and the tools;
- ``step(CallToolAction(tool_name, arguments))`` makes one call: a gateway meta-tool (``list_services``,
  ``list_tools``, ``describe_tool``, ``call_tool``) answers with its envelope; ``submit_report(report, summary)``
  ends the episode; ``ListToolsAction`` lists the five tools;
- the reward is the rubric's net score of the final world with the submitted report, given only on the step that
  ends the episode (``submit_report``, or the ``max_steps``-th call); before that every reward is ``None`` and
  neither observations nor ``state`` carry a score;
- ``state`` is the episode: task id, instruction, step count, the last observation, the world's hash, and the
  score once it is over.

Every episode goes to the run store as RL rollouts do (:class:`training.grpo.RolloutRecording`, agent
``openenv:<model>``), scored as the harness scores an episode (``World.score`` on the task's rubric); an episode
whose session closes before it ends is recorded too, scored without a report (finish reason ``max_turns``).
Scoring and store writes run on one recorder thread (SQLite connections belong to the thread that opened them).

Sessions (OpenEnv's WebSocket ``/ws`` and MCP sessions) each hold their own world, so they are isolated;
``SUPPORTS_CONCURRENT_SESSIONS`` is declared and ``max_concurrent_envs`` is a server option. Gateway calls run on
the event loop, inline: they are in-process and take well under a millisecond, and a thread hop per call would
cost more than the call. The MCP endpoint (``POST /mcp``, ``WS /mcp``) serves the same five tools through the
session's environment; a session that calls a tool before any reset gets the next task.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import mcp_types as types
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
)
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from harness.agents import system_prompt, world_today
from harness.env import InProcessEnv
from harness.store import RunStore
from hub.core import Hub
from hub.rubric import ScoreResult
from hub.surfaces import GATEWAY_NAMES, GATEWAY_TOOLS
from hub.world import World
from servers.framework import Envelope, error
from taskgen.task import Task, read_jsonl
from training.grpo import RolloutRecording

SUBMIT = "submit_report"
SUBMIT_TOOL = types.Tool(
    name=SUBMIT,
    description=(
        "End the episode: hand in the values the user asked you to report, under the keys the user names "
        "({} when nothing is to be reported), and a short summary. No tool can be called afterwards."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "report": {"type": "object", "description": "The reported values, one per key the user names."},
            "summary": {"type": "string", "description": "A short summary of what was done."},
        },
        "required": ["report"],
        "additionalProperties": False,
    },
)
TOOLS = [*GATEWAY_TOOLS, SUBMIT_TOOL]
RESET_FIELDS = ("task_id", "index", "seed", "episode_id")


class ResetError(ValueError):
    """A reset asked for something the server does not have (the message names the field); nothing changed."""


class TaskObservation(Observation):
    """What ``reset`` observes: the task as the agent may see it (never its rubric, plan or expected report)."""

    task_id: str
    instruction: str
    system_prompt: str
    tools: list[Tool] = Field(description="The gateway's four meta-tools and submit_report (MCP tool specs).")


class EpisodeState(State):
    """The episode as it stands; ``score``/``net_score``/``success`` are ``None`` until it is over."""

    task_id: str | None = None
    instruction: str | None = None
    done: bool = False
    observation: dict[str, Any] = Field(default_factory=dict, description="The last observation.")
    world_hash: str | None = None
    score: float | None = None
    net_score: float | None = None
    success: bool | None = None
    stored_as: str | None = Field(default=None, description="The episode's id in the run store, once recorded.")


class EpisodeRecording(RolloutRecording):
    """GRPO's rollout recording, for episodes an OpenEnv client drives: agent ``openenv:<model>``."""

    @property
    def agent(self) -> str:
        return f"openenv:{self.model}"


class Episodes:
    """What every session of one server shares: the hub, the tasks, the turn counter and the run store."""

    def __init__(
        self,
        hub: Hub,
        tasks: Sequence[Task],
        store: str | Path,
        run: str = "openenv",
        model: str = "policy",
        max_steps: int = 100,
    ) -> None:
        if not tasks:
            raise ValueError("no tasks: the task file is empty")
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps!r}")
        self.hub = hub
        self.tasks = list(tasks)
        self.by_id = {t.id: t for t in self.tasks}
        self.store_path = Path(store)
        self.run = run
        self.model = model
        self.max_steps = max_steps
        self._turn = itertools.count()
        self._turn_lock = threading.Lock()
        # One thread owns the run store (SQLite) and numbers the rollouts, so recording needs no other lock.
        self.recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openenv-recorder")
        self._recording: EpisodeRecording | None = None

    def pick(self, task_id: str | None, index: int | None, seed: int | None) -> Task:
        """The task a reset asks for: by id, by index, by seed (modulo the task count), else the next in turn."""
        if task_id is not None:
            if task_id not in self.by_id:
                known = ", ".join(repr(t) for t in list(self.by_id)[:3])
                raise ResetError(f"unknown task_id {task_id!r}: the task file has {len(self.tasks)} tasks ({known}, …)")
            return self.by_id[task_id]
        if index is not None:
            if not 0 <= index < len(self.tasks):
                raise ResetError(f"index {index!r} is out of range: the task file has {len(self.tasks)} tasks")
            return self.tasks[index]
        if seed is not None:
            return self.tasks[seed % len(self.tasks)]
        with self._turn_lock:
            return self.tasks[next(self._turn) % len(self.tasks)]

    def recording(self) -> EpisodeRecording:
        """The recording, opened on the recorder thread (call it there only)."""
        if self._recording is None:
            # The recording's default run config (the gateway surface); the agent name says the episodes are OpenEnv's.
            self._recording = EpisodeRecording(RunStore(self.store_path), self.run, self.model)
        return self._recording

    def close(self) -> None:
        self.recorder.shutdown(wait=True)


class GatewayMCP:
    """The session's tools for OpenEnv's MCP endpoint (``tools/list``, ``tools/call``): it asks an environment's
    ``mcp_client`` for them. Calls go through the environment, so they are recorded and end episodes alike."""

    def __init__(self, env: CompoWorldEnvironment) -> None:
        self.env = env

    def is_connected(self) -> bool:
        return True  # in process: nothing to connect

    async def list_tools(self) -> list[types.Tool]:
        return TOOLS

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.env.task is None:
            await self.env.reset_async()
        observation = await self.env.step_async(CallToolAction(tool_name=name, arguments=arguments or {}))
        assert isinstance(observation, CallToolObservation)
        return dict(observation.result)


class CompoWorldEnvironment(Environment[Action, Observation, EpisodeState]):
    """One OpenEnv session: one task episode at a time, in its own world, on the gateway surface."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, episodes: Episodes) -> None:
        super().__init__()
        self.episodes = episodes
        self.task: Task | None = None
        self.world: World | None = None
        self.env: InProcessEnv | None = None
        self.messages: list[dict[str, Any]] = []
        self.started_at = 0.0
        self.recorded = False  # read by RolloutRecording
        self._state = EpisodeState()
        self.mcp_client = GatewayMCP(self)

    # -- OpenEnv's interface ---------------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> TaskObservation:
        unknown = sorted(set(kwargs) - set(RESET_FIELDS))
        if unknown:
            raise ResetError(f"unknown reset field(s) {unknown}: reset takes {list(RESET_FIELDS)}")
        index = kwargs.get("index")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise ResetError(f"index must be an integer, got {index!r}")
        task_id = kwargs.get("task_id")
        if task_id is not None and not isinstance(task_id, str):
            raise ResetError(f"task_id must be a string, got {task_id!r}")
        task = self.episodes.pick(task_id, index, seed)  # raises before the current episode is touched
        self._finish_abandoned()
        world = self.episodes.hub.open_world(services=task.mounted, seed=task.seed)
        self.task, self.world, self.env = task, world, InProcessEnv(world, "gateway")
        prompt = system_prompt("gateway", world_today(world, task.services))
        self.messages = [{"role": "system", "content": prompt}, {"role": "user", "content": task.instruction}]
        self.started_at = time.time()
        self.recorded = False
        observation = TaskObservation(
            task_id=task.id,
            instruction=task.instruction,
            system_prompt=prompt,
            tools=[Tool(name=t.name, description=t.description or "", input_schema=t.input_schema) for t in TOOLS],
        )
        self._state = EpisodeState(
            episode_id=episode_id,
            task_id=task.id,
            instruction=task.instruction,
            observation=observation.model_dump(exclude={"reward", "done", "metadata", "tools"}),
            world_hash=world.hash(),
        )
        return observation

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(
                tools=[Tool(name=t.name, description=t.description or "", input_schema=t.input_schema) for t in TOOLS]
            )
        if not isinstance(action, CallToolAction):
            return CallToolObservation(
                tool_name="",
                result=error(400, f"unknown action {type(action).__name__!r}: send call_tool or list_tools"),
            )
        ended = self._call(action)
        if ended is None:
            return self._observe(action.tool_name, self._state.observation["result"])
        result = self.episodes.recorder.submit(self._record, *ended).result()
        return self._end(action.tool_name, result)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """The gateway call inline; scoring and recording (at the end) on the recorder thread."""
        if not isinstance(action, CallToolAction):
            return self.step(action)
        ended = self._call(action)
        if ended is None:
            return self._observe(action.tool_name, self._state.observation["result"])
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self.episodes.recorder, self._record, *ended)
        return self._end(action.tool_name, result)

    @property
    def state(self) -> EpisodeState:
        if self.world is not None and not self._state.done:
            self._state.world_hash = self.world.hash()  # here, not per call: hashing costs more than a call
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="compoworld",
            description=(
                f"CompoWorld task episodes on the gateway surface ({len(self.episodes.tasks)} tasks): reset opens a "
                "task's world, step calls a gateway meta-tool or submit_report; the rubric's reward comes at the end."
            ),
            version="1",
        )

    def close(self) -> None:
        """End the session: an episode still open is recorded (scored without a report), then its world closes."""
        self._finish_abandoned()

    # -- the episode --------------------------------------------------------------------------------

    def _call(self, action: CallToolAction) -> tuple[dict[str, Any], str | None] | None:
        """Make the call; ``(report, summary)`` when it ends the episode, else None (the envelope is in state)."""
        name, arguments = action.tool_name, action.arguments
        envelope: Envelope
        if self.env is None or self.task is None:
            envelope = error(409, "no episode: call reset first")
        elif self._state.done:
            envelope = error(409, f"the episode of task {self.task.id!r} is over: call reset for the next one")
        elif name == SUBMIT:
            report = arguments.get("report")
            summary = arguments.get("summary")
            extra = sorted(set(arguments) - {"report", "summary"})
            if not isinstance(report, dict):
                envelope = error(400, f"argument 'report' must be a JSON object, got {report!r}")
            elif summary is not None and not isinstance(summary, str):
                envelope = error(400, f"argument 'summary' must be a string, got {summary!r}")
            elif extra:
                envelope = error(400, f"unknown argument(s) {extra} of {SUBMIT!r}: it takes 'report' and 'summary'")
            else:
                return report, summary
        elif name not in GATEWAY_NAMES:
            tools = sorted([*GATEWAY_NAMES, SUBMIT])
            envelope = error(404, f"unknown tool {name!r}; this environment's tools are {tools}")
        else:
            self._turn(name, arguments)
            envelope = self.env.call(name, arguments)
            self.messages.append(
                {
                    "role": "tool",
                    "tool_call_id": f"call_{len(self.env.calls)}",
                    "name": name,
                    "content": json.dumps(envelope),
                }
            )
            self._state.step_count += 1
            self._state.observation = {"tool_name": name, "result": envelope}
            if len(self.env.calls) >= self.episodes.max_steps:
                return {}, None
            return None
        self._state.observation = {"tool_name": name, "result": envelope}
        return None

    def _turn(self, name: str, arguments: dict[str, Any]) -> None:
        call_id = f"call_{len(self.env.calls) + 1 if self.env else 1}"
        self.messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                ],
            }
        )

    def _record(self, report: dict[str, Any], summary: str | None) -> ScoreResult:
        """Score the world with ``report`` as the harness does, and store the episode (on the recorder thread)."""
        assert self.world is not None and self.task is not None
        result = self.world.score(self.task.rubric, report=report)
        completion = self.messages[2:]
        if summary is not None:  # a submitted episode ends with the agent's final message, as the harness's do
            completion = [*completion, {"role": "assistant", "content": f"{summary}\n{json.dumps(report)}"}]
        recording = self.episodes.recording()
        key = recording.record(self, self.messages[:2], completion, report, result)
        self._state.done = True
        self._state.world_hash = self.world.hash()
        self._state.score, self._state.net_score, self._state.success = result.score, result.net_score, result.success
        self._state.stored_as = key
        return result

    def _end(self, name: str, result: ScoreResult) -> CallToolObservation:
        data = {
            "score": result.score,
            "net_score": result.net_score,
            "success": result.success,
            "episode": self._state.stored_as,
        }
        self._state.observation = {"tool_name": name, "result": {"success": True, "data": data}}
        return CallToolObservation(
            tool_name=name, result={"success": True, "data": data}, done=True, reward=result.net_score
        )

    def _observe(self, name: str, envelope: dict[str, Any]) -> CallToolObservation:
        return CallToolObservation(tool_name=name, result=envelope, done=False, reward=None)

    def _finish_abandoned(self) -> None:
        """An episode left before it ended (a new reset, a closed session) is recorded if it made any call, scored
        without a report; then its world closes. One with no call is not: OpenEnv's stateless ``POST /reset`` opens
        and closes an environment per request, and those are not episodes anyone played."""
        if self.world is not None and not self._state.done and self.calls:
            self.episodes.recorder.submit(self._record, {}, None).result()
        if self.world is not None:
            self.world.close()
            self.world = None

    # RolloutRecording reads these, as it does of GRPO's environment.
    @property
    def calls(self) -> list[Any]:
        return self.env.calls if self.env is not None else []


def create_app(episodes: Episodes, max_concurrent_envs: int = 256) -> FastAPI:
    """The OpenEnv FastAPI app (``/reset``, ``/step``, ``/state``, ``/health``, ``/schema``, ``/metadata``,
    ``/mcp``, ``/ws``) over ``episodes``, built by OpenEnv's own app factory."""
    from openenv.core.env_server.http_server import create_fastapi_app

    factory = functools.partial(CompoWorldEnvironment, episodes)
    app = create_fastapi_app(factory, CallToolAction, CallToolObservation, max_concurrent_envs=max_concurrent_envs)
    app.router.on_shutdown.append(_closer(episodes))
    # OpenEnv's stateless POST /reset lets an exception through as a bare 500; a bad reset is the client's error.
    app.add_exception_handler(ResetError, _bad_reset)
    return app


async def _bad_reset(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=400, content={"detail": str(exc)})


def _closer(episodes: Episodes) -> Any:
    async def close() -> None:
        episodes.close()

    return close


def load_episodes(
    tasks_file: str | Path,
    store: str | Path,
    run: str = "openenv",
    model: str = "policy",
    max_steps: int = 100,
    hub: Hub | None = None,
) -> Episodes:
    """:class:`Episodes` over a task file (the default hub unless ``hub`` is given)."""
    tasks = list(read_jsonl(tasks_file))
    if hub is None:
        from taskgen.generate import default_hub

        hub = default_hub()
    return Episodes(hub, tasks, store, run, model, max_steps)


__all__ = [
    "SUBMIT",
    "TOOLS",
    "CompoWorldEnvironment",
    "EpisodeRecording",
    "EpisodeState",
    "Episodes",
    "GatewayMCP",
    "ResetError",
    "TaskObservation",
    "create_app",
    "load_episodes",
]
