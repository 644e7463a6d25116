"""CompoWorld tasks as a verifiers v1 environment: taskset, task, harness and group env.

- :class:`CompoWorldTaskset` loads the tasks the rollout server serves (instruction and system prompt only: the
  rubric and the oracle plan never leave the server).
- :class:`CompoWorldTask` opens a fresh world for each rollout in ``setup``, hands it to the taskset's shared
  :class:`~compoworld_verifiers.toolset.CompoWorldGateway` through the rollout state, and in ``finalize`` has the
  server score the world with the agent's report (the last JSON object of its final message) and store the
  episode in the run store. Its reward is the rubric's net score (``reward="rubric"``); its metrics are the
  score, net score, success and call count.
- :class:`CompoWorldGroupEnv` runs ``n`` rollouts of a task per episode; with ``reward="cfrr"`` its ``finalize``
  gives each the group-relative Completion-Focused Rubric Reward, computed by the server over the group's
  per-criterion results.
- :class:`CompoWorldHarness` is verifiers' own chat program (the null/bash harnesses' loop: model turns through
  the interception server, tools over MCP), run with this environment's interpreter instead of a ``uv``
  script environment, so a rollout needs no package download. It points the program straight at the world's
  MCP endpoint on the server; other harnesses reach the world through the shared gateway toolset.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

from compoworld_verifiers import client
from compoworld_verifiers.toolset import CompoWorldGateway, GatewayConfig, RolloutState

RewardKind = Literal["rubric", "cfrr"]
GATEWAY_SERVER = ""  # the gateway toolset's server name: its tools are advertised bare


class CompoWorldData(vf.TaskData):
    task_id: str
    services: list[str] = Field(default_factory=list)


class CompoWorldTaskConfig(vf.TaskConfig):
    server: str = Field(default_factory=client.default_server)
    """The rollout server's URL (default ``$COMPOWORLD_SERVER``, else http://127.0.0.1:8790)."""
    token: str = Field(default_factory=client.default_token)
    """Its admin token (default ``$COMPOWORLD_TOKEN``)."""
    reward: RewardKind = "rubric"
    """``rubric``: each rollout's net rubric score; ``cfrr``: the group's CFRR (set by the env)."""
    surface: Literal["gateway"] = "gateway"
    model: str = "policy"
    """Recorded as the episodes' agent, ``verifiers:<model>``."""


class CompoWorldTask(vf.Task[CompoWorldData, RolloutState, CompoWorldTaskConfig]):
    @property
    def key(self) -> str:
        return self.data.task_id

    async def setup(self, trace: vf.Trace) -> None:
        opened = await client.post(
            self.config.server,
            self.config.token,
            "/rollouts",
            {"task_id": self.data.task_id, "model": self.config.model},
        )
        trace.state.rollout_id = opened["rollout_id"]
        trace.state.token = opened["token"]
        trace.state.mcp_url = opened["mcp_url"]

    async def finalize(self, trace: vf.Trace) -> None:
        state = trace.state
        if not state.rollout_id or state.result:
            return
        messages = [m.model_dump(mode="json", exclude_none=True) for m in trace.messages]
        path = f"/rollouts/{state.rollout_id}/finish"
        state.result = await client.post(self.config.server, self.config.token, path, {"messages": messages})
        if self.config.reward == "rubric":  # nothing more needs it on the server (a group's CFRR does)
            await client.delete(self.config.server, self.config.token, f"/rollouts/{state.rollout_id}")

    @vf.metric
    async def compoworld(self, trace: vf.Trace) -> dict[str, float]:
        result = trace.state.result
        if not result:
            return {}
        return {
            "score": float(result["score"]),
            "net_score": float(result["net_score"]),
            "success": float(result["success"]),
            "calls": float(result["calls"]),
        }

    @vf.reward
    async def rubric(self, trace: vf.Trace) -> dict[str, float]:
        """The net rubric score; under CFRR the env's ``finalize`` gives the reward instead."""
        if self.config.reward != "rubric":
            return {}
        result = trace.state.result
        return {"rubric": float(result["net_score"]) if result else 0.0}


class CompoWorldTasksetConfig(vf.TasksetConfig):
    task: CompoWorldTaskConfig = CompoWorldTaskConfig()
    tasks: list[str] | None = None
    """Task ids to load, in this order (default: every task the server serves)."""


class CompoWorldTaskset(vf.Taskset[CompoWorldTask, CompoWorldTasksetConfig]):
    @classmethod
    def toolsets(cls, config: CompoWorldTasksetConfig) -> list[vf.Toolset]:
        """One gateway server for every rollout of the eval (verifiers passes each call its rollout's state):
        a server per rollout would start a Python process with verifiers imported, seconds a rollout."""
        return [CompoWorldGateway(GatewayConfig(server=config.task.server))]

    def load(self) -> list[CompoWorldTask]:
        served = client.tasks(self.config.task.server, self.config.task.token)
        by_id = {t["id"]: t for t in served}
        wanted = self.config.tasks if self.config.tasks is not None else list(by_id)
        unknown = [t for t in wanted if t not in by_id]
        if unknown:
            raise ValueError(f"tasks {unknown!r} are not served by {self.config.task.server}")
        return [
            CompoWorldTask(
                CompoWorldData(
                    id=t,
                    name=t,
                    task_id=t,
                    prompt=by_id[t]["instruction"],
                    system_prompt=by_id[t]["system_prompt"],
                    services=by_id[t]["services"],
                ),
                self.config.task,
            )
            for t in wanted
        ]


class CompoWorldGroupEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig()
    n: int = Field(1, ge=1)
    """Rollouts of the task per episode: the group CFRR is computed over."""


class CompoWorldGroupEnv(vf.Env[CompoWorldGroupEnvConfig]):
    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        async with asyncio.TaskGroup() as group:
            for _ in range(self.config.n):
                group.create_task(agents.agent.run(task))

    async def finalize(self, task: vf.Task, episode: vf.Episode) -> None:
        config = task.config
        if not isinstance(config, CompoWorldTaskConfig) or config.reward != "cfrr":
            return
        ids = [trace.state.rollout_id for trace in episode.traces]
        missing = [trace.id for trace, rollout in zip(episode.traces, ids, strict=True) if not rollout]
        if missing:
            raise RuntimeError(f"traces {missing!r} have no CompoWorld rollout: no CFRR for this group")
        body = {"rollouts": ids, "reward": "cfrr"}
        rewards = (await client.post(config.server, config.token, "/groups", body))["rewards"]
        for trace, value in zip(episode.traces, rewards, strict=True):
            trace.record_reward("cfrr", value)
        for rollout in ids:
            await client.delete(config.server, config.token, f"/rollouts/{rollout}")


class CompoWorldHarnessConfig(vf.HarnessConfig):
    direct_mcp: bool = True
    """Reach the world's MCP endpoint straight; else through the shared gateway toolset (as other harnesses do)."""


class CompoWorldHarness(vf.Harness[CompoWorldHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    SUPPORTS_RESUME = True
    SUPPORTS_TOOL_INTERCEPTION = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        import json

        system_prompt, prompt = self.resolve_prompt(data)
        program = f".vf-compoworld-chat-{hashlib.sha256(CHAT_PROGRAM_SOURCE.encode()).hexdigest()[:16]}.py"
        await runtime.write(program, CHAT_PROGRAM_SOURCE.encode())
        args = [sys.executable, program, f"--base-url={endpoint}", f"--api-key={secret}", f"--model={ctx.model}"]
        if tool_interception_url:
            args.append(f"--tool-interception-url={tool_interception_url}")
        if system_prompt:
            args.append(f"--system-prompt={system_prompt}")
        servers: dict[str, dict[str, Any]] = {
            name: {"url": url, "timeout": self.config.tool_timeout} for name, url in mcp_urls.items()
        }
        state = trace.state
        if self.config.direct_mcp and isinstance(state, RolloutState) and state.mcp_url and GATEWAY_SERVER in servers:
            # Straight to the world's MCP endpoint: one hop instead of three (the shared toolset, its state
            # pull, the server), the tools then listed with the gateway's own schemas.
            servers[GATEWAY_SERVER] |= {"url": state.mcp_url, "headers": {"Authorization": f"Bearer {state.token}"}}
        args.append("--mcp-config=" + json.dumps({"mcpServers": servers}))
        if not isinstance(prompt, str):
            raise TypeError(f"CompoWorld prompts are instructions (text), got {type(prompt).__name__}")
        args.append(f"--prompt={prompt}")
        return await runtime.run_program(args, {**self.config.resolved_env})
