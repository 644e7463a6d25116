"""verl multi-turn tools over CompoWorld: one ``BaseTool`` per gateway meta-tool, one task world per instance.

verl (``pip install verl``; it needs its own environment, see the README) runs tool RL through ``BaseTool``
subclasses listed in a tool-config YAML (``actor_rollout_ref.rollout.multi_turn.tool_config_path``); it has no
MCP tool type. :class:`ListServicesTool`, :class:`ListToolsTool`, :class:`DescribeToolTool` and
:class:`CallToolTool` are the gateway's four meta-tools (``hub.surfaces.GATEWAY_TOOLS``, whose schemas they
offer when the YAML gives none); ``training/configs/verl_tools.yaml`` lists them.

The lifecycle, per rollout (``instance_id``), shared by the four tools:

- ``create(instance_id, create_kwargs={"task": <task JSON>})`` (or ``{"task_id": ...}`` with ``tasks`` in the
  tool config) opens the task's world, with the harness's recording environment on its gateway
  (:class:`training.grpo.CompoWorldEnv`); the other tools' ``create`` with the same id join that world.
- ``execute(instance_id, parameters)`` calls the meta-tool; the response text is the gateway's JSON envelope,
  the step reward is always 0 (the rubric is never visible before the end).
- ``calc_reward(instance_id, report=... | final_text=..., messages=...)`` scores the world against the task's
  rubric with the report, records the rollout into the run store (as :class:`training.grpo.RolloutRecording`
  does for GRPO: calls, messages, per-criterion results) and returns the configured reward (``net_score`` by
  default; ``score`` or ``success``). The first ``calc_reward`` ends the episode: later ones answer the same
  reward and later calls an error envelope. CFRR needs the group: compute it from the stored criteria.
- ``release(instance_id)``: when the last tool holding the instance releases it, the world closes (a rollout
  never scored is scored without a report and recorded first, so every rollout is in the store).

verl 0.9's stock ``tool_agent`` loop (``ToolAgentLoop``) does not follow that lifecycle: around every single call
it runs ``create(create_kwargs=...)`` without an instance id, ``execute(id, parameters, agent_data=...)`` and
``release(id)``, and it never calls ``calc_reward``. A ``create`` without an id is therefore a per-call handle;
its call runs in the world of its trajectory, keyed by verl's ``AgentData`` (one per trajectory: the key is put in
its ``extra_fields`` as ``compoworld_instance``), opened on the trajectory's first call and, when verl drops the
``AgentData`` at the trajectory's end, scored with the report in the last assistant message, recorded and closed.
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from harness.agents import parse_report
from harness.store import RunStore
from hub.rubric import ScoreResult
from hub.surfaces import GATEWAY_TOOLS
from taskgen.task import Task, read_jsonl
from training.grpo import CompoWorldEnv, RolloutRecording

Reward = Literal["net_score", "score", "success"]
REWARDS: tuple[Reward, ...] = ("net_score", "score", "success")


def gateway_tool_schema(name: str) -> dict[str, Any]:
    """The OpenAI function schema of the gateway meta-tool ``name`` (what the YAML's ``tool_schema`` holds)."""
    spec = next((t for t in GATEWAY_TOOLS if t.name == name), None)
    if spec is None:
        raise ValueError(f"unknown gateway meta-tool {name!r}; known: {sorted(t.name for t in GATEWAY_TOOLS)}")
    parameters = {k: v for k, v in spec.input_schema.items() if k in ("type", "properties", "required")}
    parameters.setdefault("required", [])
    return {
        "type": "function",
        "function": {"name": name, "description": spec.description or name, "parameters": parameters},
    }


class VerlRecording(RolloutRecording):
    """GRPO's rollout recording, with the rollouts' agent named ``verl:<model>``."""

    @property
    def agent(self) -> str:
        return f"verl:{Path(self.model).name or self.model}"


@dataclass
class Episode:
    """One rollout's world, held by the tools that created it."""

    env: CompoWorldEnv
    recording: VerlRecording | None
    reward: Reward
    holders: set[str] = field(default_factory=set)
    result: ScoreResult | None = None
    episode_id: str | None = None

    def value(self) -> float:
        if self.result is None:
            raise RuntimeError("the episode is not scored")
        return float(self.result.success) if self.reward == "success" else getattr(self.result, self.reward)


class Episodes:
    """The open episodes of this process, by instance id, shared by the four tools (verl builds one object per
    tool from the YAML, and a rollout uses them all on one world); recordings are shared per (store, run)."""

    def __init__(self) -> None:
        self.open: dict[str, Episode] = {}
        self.lock = threading.RLock()  # re-entrant: a trajectory's finalizer may run wherever the GC does
        self.recordings: dict[tuple[str, str, str], VerlRecording] = {}
        self.tasks: dict[str, dict[str, Task]] = {}
        # Per-call handles (a ``create`` without an instance id, as verl's ToolAgentLoop makes around every call):
        # the config and create arguments, and the tool that made it; the world opens on the call.
        self.pending: dict[str, tuple[Mapping[str, Any], dict[str, Any], str]] = {}

    def start(self, config: Mapping[str, Any], arguments: Mapping[str, Any]) -> Episode:
        """A new episode: the named task's world, opened (raises, opening nothing, when the task is bad)."""
        task = self.task(config, arguments)
        env = CompoWorldEnv()
        env.reset(task=task.model_dump_json())
        return Episode(env, self.recording(config), config.get("reward", "net_score"))

    def of_call(self, handle: str, agent_data: Any) -> Episode:
        """The episode a per-call handle's call runs in: with verl's ``agent_data`` (one per trajectory), the
        trajectory's, opened on its first call and finished when verl lets go of the trajectory (scored with the
        report in its last assistant message, recorded, closed); without, the handle's own."""
        config, arguments, tool = self.pending.pop(handle)
        if agent_data is None:
            episode = self.open[handle] = self.start(config, arguments)
            episode.holders.add(tool)
            return episode
        fields = agent_data.extra_fields
        key = fields.get(TRAJECTORY_FIELD)
        if key not in self.open:
            key = f"trajectory-{uuid4().hex}"
            episode = self.start(config, arguments)
            episode.holders.add(TRAJECTORY_FIELD)
            self.open[key] = episode
            fields[TRAJECTORY_FIELD] = key  # also tells verl's reward side which episode this was
            # verl calls no tool at a trajectory's end; its AgentData lives exactly as long as the trajectory.
            weakref.finalize(agent_data, self.end_trajectory, key, agent_data.messages)
        return self.open[key]

    def end_trajectory(self, key: str, messages: list[Any]) -> None:
        with self.lock:
            episode = self.open.pop(key, None)
        if episode is None:
            return
        try:
            if episode.result is None:
                final = next(
                    (
                        m["content"]
                        for m in reversed(messages)
                        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), str)
                    ),
                    "",
                )
                _finish(episode, {"final_text": final, "messages": messages})
        finally:
            if episode.env.world is not None:
                episode.env.world.close()

    def recording(self, config: Mapping[str, Any]) -> VerlRecording | None:
        if not config.get("record", True):
            return None
        store, run, model = (
            str(config.get("store", "runs/runs.db")),
            str(config.get("run", "verl")),
            str(config.get("model", "policy")),
        )
        key = (store, run, model)
        if key not in self.recordings:
            # The run's stored config stays the recording's default: the agent label says verl made the rollouts.
            self.recordings[key] = VerlRecording(RunStore(store), run, model)
        return self.recordings[key]

    def task(self, config: Mapping[str, Any], arguments: Mapping[str, Any]) -> Task:
        """The task a ``create`` names: ``task`` (a Task, its JSON or its dict) or ``task_id`` in the config's file."""
        raw = arguments.get("task")
        if raw is not None:
            if isinstance(raw, Task):
                return raw
            try:
                return _parse_task(raw) if isinstance(raw, str) else Task.model_validate(raw)
            except ValueError as exc:
                raise ValueError(f"create_kwargs 'task' is not a task: {exc}") from exc
        task_id = arguments.get("task_id")
        if task_id is None:
            raise ValueError("create_kwargs needs 'task' (the task's JSON) or 'task_id' (with 'tasks' in the config)")
        path = config.get("tasks")
        if not path:
            raise ValueError(f"create_kwargs names task_id {task_id!r} but the tool config has no 'tasks' file")
        if path not in self.tasks:
            self.tasks[path] = {t.id: t for t in read_jsonl(path)}
        found = self.tasks[path].get(str(task_id))
        if found is None:
            raise ValueError(f"unknown task_id {task_id!r} in {path!r}")
        return found


@functools.lru_cache(maxsize=256)
def _parse_task(raw: str) -> Task:
    """A task from its JSON, parsed once: verl's loop passes the same create_kwargs on every call of a rollout."""
    return Task.model_validate_json(raw)


TRAJECTORY_FIELD = "compoworld_instance"  # the key of a trajectory's episode in verl's AgentData.extra_fields
EPISODES = Episodes()


def _error(code: int, message: str) -> str:
    return json.dumps({"success": False, "error": {"code": code, "message": message}})


class GatewayTool(BaseTool):
    """A gateway meta-tool as a verl tool (subclasses name the meta-tool)."""

    meta: ClassVar[str] = ""
    episodes: ClassVar[Episodes] = EPISODES

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        reward = config.get("reward", "net_score")
        if reward not in REWARDS:
            raise ValueError(f"tool config 'reward' is {reward!r}; expected one of {list(REWARDS)}")
        schema = tool_schema or OpenAIFunctionToolSchema.model_validate(gateway_tool_schema(self.meta))
        if schema.function.name != self.meta:
            raise ValueError(
                f"{type(self).__name__} serves {self.meta!r} but its tool_schema names {schema.function.name!r}"
            )
        super().__init__(config, schema)

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        """Open the world of the task in ``create_kwargs`` (verl's agent loop passes them under that name; older
        rollouts spread them as keyword arguments), or join the one already open under ``instance_id``."""
        arguments = {**(kwargs.pop("create_kwargs", None) or {}), **kwargs}
        if instance_id is None:
            # verl's ToolAgentLoop creates and releases an instance around every call: a handle only, whose call
            # runs in its trajectory's world (see Episodes.of_call).
            self.episodes.task(self.config, arguments)  # a bad task is refused here, as for an explicit instance
            handle = uuid4().hex
            with self.episodes.lock:
                self.episodes.pending[handle] = (self.config, arguments, self.name)
            return handle, ToolResponse()
        with self.episodes.lock:
            episode = self.episodes.open.get(instance_id)
            if episode is None:
                episode = self.episodes.start(self.config, arguments)  # raises before anything is opened
                self.episodes.open[instance_id] = episode
            elif "task" in arguments or "task_id" in arguments:
                named = self.episodes.task(self.config, arguments).id
                held = episode.env.task.id if episode.env.task else None
                if named != held:  # one instance is one world: a second task cannot join it
                    raise ValueError(f"instance {instance_id!r} holds task {held!r}, not {named!r}")
            episode.holders.add(self.name)
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """Call the meta-tool in the instance's world: the gateway's envelope, step reward 0."""
        with self.episodes.lock:
            episode = self.episodes.open.get(instance_id)
            if episode is None and instance_id in self.episodes.pending:
                episode = self.episodes.of_call(instance_id, kwargs.get("agent_data"))
        if episode is None or episode.env.env is None:
            return ToolResponse(text=_error(404, f"unknown instance {instance_id!r}: call create first")), 0.0, {}
        if episode.result is not None:
            text = _error(409, f"instance {instance_id!r} is already scored: the episode is over")
            return ToolResponse(text=text), 0.0, {}
        envelope = episode.env.env.call(self.meta, parameters)
        return ToolResponse(text=json.dumps(envelope)), 0.0, {"success": bool(envelope.get("success"))}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """Score the instance's world with the rollout's report (``report`` as a dict, or ``final_text`` /
        ``solution_str`` with the report's JSON in it), record it and return the configured reward."""
        with self.episodes.lock:
            episode = self.episodes.open.get(instance_id)
            if episode is None:
                raise KeyError(f"unknown instance {instance_id!r}: call create first")
            if episode.result is None:
                _finish(episode, kwargs)
            return episode.value()

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Let go of the instance; the last holder closes its world (recording it first if it was never scored)."""
        with self.episodes.lock:
            self.episodes.pending.pop(instance_id, None)  # a per-call handle; its trajectory's world stays open
            episode = self.episodes.open.get(instance_id)
            if episode is None:
                return
            episode.holders.discard(self.name)
            if episode.holders:
                return
            del self.episodes.open[instance_id]
        try:
            if episode.result is None:
                _finish(episode, {})
        finally:
            if episode.env.world is not None:
                episode.env.world.close()


def _finish(episode: Episode, kwargs: Mapping[str, Any]) -> None:
    """Score the episode with the report its kwargs carry and record it (once)."""
    report = kwargs.get("report")
    text = kwargs.get("final_text") or kwargs.get("solution_str") or ""
    if not isinstance(report, dict):
        report = parse_report(str(text))
    messages = kwargs.get("messages")
    if world := episode.env.world:
        task = episode.env.task
        assert task is not None  # reset() set both
        episode.result = world.score(task.rubric, report=report)
    if episode.recording is not None and episode.result is not None:
        completion: Any = messages if isinstance(messages, list) else str(text)
        episode.episode_id = episode.recording.record(episode.env, None, completion, report, episode.result)


class ListServicesTool(GatewayTool):
    meta = "list_services"


class ListToolsTool(GatewayTool):
    meta = "list_tools"


class DescribeToolTool(GatewayTool):
    meta = "describe_tool"


class CallToolTool(GatewayTool):
    meta = "call_tool"
