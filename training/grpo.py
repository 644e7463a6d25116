"""GRPO on CompoWorld with TRL: an ``environment_factory`` class and rubric reward functions.

:class:`CompoWorldEnv` serves every task and every service through the gateway's four meta-tools:
``reset(**row)`` opens the row's task world (the dataset carries the task as JSON in a ``task``
column, plus ``task_id``), and its public methods ``list_services``, ``list_tools``,
``describe_tool`` and ``call_tool`` are the tools TRL offers the policy. The reward functions
read each rollout's environment and final message (the report), score the world against the
task's rubric, record each rollout into the run store as a trajectory (:class:`RolloutRecording`), and turn a
group's criterion-pass matrix into rewards: :func:`cfrr_reward` (the
Completion-Focused Rubric Reward), :func:`rubric_reward` and :func:`success_reward`. Rollouts of
the same ``task_id`` form the group, as TRL generates ``num_generations`` completions per prompt.
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.agent_spec import AgentSpec
from harness.agents import parse_report, system_prompt
from harness.config import RunConfig
from harness.env import InProcessEnv
from harness.store import RunStore
from harness.trajectory import FinishReason, ToolCall, Trajectory
from hub.core import Hub
from hub.rubric import ScoreResult
from hub.surfaces import GATEWAY_TOOLS
from hub.world import World
from taskgen.task import Task, read_jsonl
from training.config import GRPOTraining
from training.rewards import binary_success, cfrr, rubric_fraction
from training.sft import sft_rows
from training.tiny import SEED, TINY, rendered_texts, tiny_model, tiny_tokenizer


@dataclass
class RolloutRecording:
    """Where GRPO's rollouts go: each rollout a reward function scores becomes a trajectory of run ``run``.

    The agent is ``grpo:<model name>``; a task's rollouts are numbered in the order they are scored (a group of G
    rollouts takes G consecutive numbers, and a later step's group of the same task the next ones; a resumed run
    continues after the stored ones), so no two rollouts of a run share an episode id.
    """

    store: RunStore
    run: str
    model: str
    config: RunConfig = field(default_factory=lambda: RunConfig(surface="gateway"))
    next_rollout: dict[str, int] = field(default_factory=dict)

    @property
    def agent(self) -> str:
        return f"grpo:{Path(self.model).name or self.model}"

    def record(
        self, env: CompoWorldEnv, prompt: Any, completion: Any, report: dict[str, Any], result: ScoreResult
    ) -> str:
        """Store one scored rollout (its calls, messages, report and per-criterion results); its episode id."""
        if env.task is None or env.world is None or env.env is None:
            raise RuntimeError("reset() was not called")
        task = env.task
        if task.id not in self.next_rollout:
            self.store.start_run(self.run, self.config, [task])
            query = "select max(rollout) as last from episodes where run_id = ? and task_id = ? and agent = ?"
            last = next(iter(self.store.db.query(query, [self.run, task.id, self.agent])))["last"]
            self.next_rollout[task.id] = 0 if last is None else int(last) + 1
        rollout = self.next_rollout[task.id]
        self.next_rollout[task.id] += 1
        messages = _messages(prompt) + _messages(completion)
        finish: FinishReason = "completed" if final_text(completion) else "max_turns" if env.calls else "no_action"
        trajectory = Trajectory(
            task_id=task.id,
            agent=self.agent,
            model=self.model,
            surface="gateway",
            path="inprocess",
            rollout=rollout,
            messages=messages,
            tools=env.env.tools(),
            tool_calls=list(env.calls),
            report=report,
            final_hash=env.world.hash(),
            criteria=result.criteria,
            score=result.score,
            net_score=result.net_score,
            success=result.success,
            finish_reason=finish,
            started_at=env.started_at,
            duration_s=round(time.time() - env.started_at, 4),
            services=task.services,
        )
        env.recorded = True
        return self.store.add(self.run, trajectory, task)


def _messages(turns: Any) -> list[dict[str, Any]]:
    """Chat messages as JSON data: a list of messages as it is, a plain string as one assistant message."""
    if isinstance(turns, str):
        return [{"role": "assistant", "content": turns}] if turns else []
    if not isinstance(turns, list | tuple):
        return []
    return [json.loads(json.dumps(m, default=str)) for m in turns if isinstance(m, dict)]


def _gateway_docstring(name: str) -> str:
    """A Google-style docstring for the gateway meta-tool ``name``, from the gateway's own spec (``GATEWAY_TOOLS``):
    TRL renders the environment's tools from its methods' docstrings, so they describe what the gateway lists."""
    spec = next(t for t in GATEWAY_TOOLS if t.name == name)
    lines = [spec.description or name, ""]
    properties = spec.input_schema.get("properties", {})
    if properties:
        lines.append("Args:")
        lines += [f"    {param}: {schema.get('description', param)}" for param, schema in properties.items()]
        lines.append("")
    lines += ["Returns:", "    The gateway's JSON envelope."]
    return "\n".join(lines)


class CompoWorldEnv:
    """One rollout's world; public methods are the gateway's meta-tools (TRL turns them into tools).

    A thin adapter over the harness's environment: ``reset`` opens the task's world and an
    :class:`harness.env.InProcessEnv` on its gateway surface (which owns the world's recorder), and every
    meta-tool call goes through that environment, so a rollout's calls are recorded as the
    harness's ``ToolCall`` records, exactly like a harness episode's.
    """

    hub: ClassVar[Hub | None] = None
    # Where the reward functions record each scored rollout as a trajectory (set by :func:`train_grpo`).
    recording: ClassVar[RolloutRecording | None] = None
    # TRL offers every public method except reset/get_reward as a tool: keep helpers private.

    def __init__(self) -> None:
        self.world: World | None = None
        self.task: Task | None = None
        self.env: InProcessEnv | None = None
        self.started_at = 0.0
        self.recorded = False  # whether this rollout is in the run store (recorded once, whatever the rewards)
        OPEN_ENVS.add(self)

    @classmethod
    def shared_hub(cls) -> Hub:
        if cls.hub is None:
            # Imported here, not at module level, for start-up speed: the hub (~0.4 s to import,
            # seconds to build) is needed once an environment resets, not to render its tools.
            from taskgen.generate import default_hub

            cls.hub = default_hub()
        return cls.hub

    @property
    def calls(self) -> list[ToolCall]:
        """The calls of this rollout, in order, as the harness records them."""
        return self.env.calls if self.env is not None else []

    @property
    def errors(self) -> int:
        """How many of them answered with an error envelope."""
        return sum(1 for c in self.calls if not c.ok)

    def reset(self, **row: Any) -> None:
        """Open a fresh world for the row's task.

        Returns nothing: TRL appends what ``reset`` returns to the last prompt message, and the row's prompt already
        carries the instruction (:func:`grpo_rows`).
        """
        if self.world is not None:
            self.world.close()
        raw = row["task"]
        self.task = Task.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
        self.world = self.shared_hub().open_world(services=self.task.mounted, seed=self.task.seed)
        self.env = InProcessEnv(self.world, "gateway")
        self.started_at = time.time()
        self.recorded = False

    def _call(self, meta: str, arguments: dict[str, Any]) -> str:
        if self.env is None:
            return json.dumps({"success": False, "error": {"code": 409, "message": "reset() was not called"}})
        return json.dumps(self.env.call(meta, arguments))

    def list_services(self) -> str:
        return self._call("list_services", {})

    def list_tools(self, service: str) -> str:
        return self._call("list_tools", {"service": service})

    def describe_tool(self, tool: str) -> str:
        return self._call("describe_tool", {"tool": tool})

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> str:
        return self._call("call_tool", {"tool_name": tool_name, "arguments": arguments})

    list_services.__doc__ = _gateway_docstring("list_services")
    list_tools.__doc__ = _gateway_docstring("list_tools")
    describe_tool.__doc__ = _gateway_docstring("describe_tool")
    call_tool.__doc__ = _gateway_docstring("call_tool")

    def _score(self, report: dict[str, Any] | None = None) -> ScoreResult:
        """The rubric result of the world as it is now, with the rollout's report."""
        if self.world is None or self.task is None:
            raise RuntimeError("reset() was not called")
        return self.world.score(self.task.rubric, report=report or {})

    def get_reward(self) -> float:
        """The rubric score without the report (logged by TRL beside the reward functions)."""
        return self._score().score


OPEN_ENVS: weakref.WeakSet[CompoWorldEnv] = weakref.WeakSet()
"""Every live environment: TRL makes them and never closes them, and each holds its last rollout's
world open until its next ``reset``; :func:`close_worlds` closes those when training ends."""


def close_worlds() -> int:
    """Close the world each live environment still holds (a module function, not a method: TRL
    would offer a public method to the model as a tool); returns how many were open."""
    closed = 0
    for env in list(OPEN_ENVS):
        if env.world is not None:
            env.world.close()
            env.world, env.env = None, None
            closed += 1
    return closed


def env_tool_schemas() -> list[dict[str, Any]]:
    """The tool schemas TRL renders for :class:`CompoWorldEnv` (from its methods' signatures and docstrings).

    Their descriptions are the gateway's own (``hub.surfaces.GATEWAY_TOOLS``), but TRL's rendering differs in form
    (no ``additionalProperties``, ``call_tool``'s ``arguments`` required, a ``return`` entry): an SFT warm-up for
    GRPO renders its conversations with these (``compoworld train sft --env-tools``) to see the prompts GRPO will
    show. The order is TRL's (``inspect.getmembers``: by name).
    """
    import inspect

    from transformers.utils import get_json_schema

    env = CompoWorldEnv()  # bound methods, as TRL passes them (no `self` parameter)
    return [
        get_json_schema(getattr(env, name))
        for name, _ in inspect.getmembers(CompoWorldEnv, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def final_text(completion: Any) -> str:
    """The last assistant text of a completion (a string, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        if isinstance(message, dict) and message.get("role") == "assistant" and message.get("content"):
            return str(message["content"])
    return ""


def _groups(task_ids: Sequence[str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for index, task_id in enumerate(task_ids):
        groups.setdefault(task_id, []).append(index)
    return groups


Row = tuple[list[float], list[bool], list[float], float | None]


def _scored(
    environments: Sequence[CompoWorldEnv], completions: Sequence[Any], prompts: Sequence[Any] | None
) -> list[Row]:
    """Each rollout scored on its task's rubric with the report of its final text, recorded into the run store
    (:attr:`CompoWorldEnv.recording`, once per rollout), and its criterion-pass row for the group rewards."""
    rows = []
    for index, (env, completion) in enumerate(zip(environments, completions, strict=True)):
        report = parse_report(final_text(completion))
        result = env._score(report)
        recording = CompoWorldEnv.recording
        if recording is not None and not env.recorded:
            recording.record(env, prompts[index] if prompts is not None else None, completion, report, result)
        positives = [c for c in result.criteria if not c.negative]
        rows.append(
            (
                [1.0 if c.passed else 0.0 for c in positives],
                [c.passed for c in result.criteria if c.negative],
                [c.weight for c in positives],
                env.task.rubric.penalty if env.task else None,
            )
        )
    return rows


def _log_calls(environments: Sequence[CompoWorldEnv], log_metric: Any) -> None:
    """Log the mean, per rollout, of the gateway calls that reached the world, of those that called a service's
    tool (``call_tool``) and of those answered with an error envelope."""
    if log_metric is None or not environments:
        return
    count = len(environments)
    log_metric("env/gateway_calls", sum(len(e.calls) for e in environments) / count)
    log_metric("env/service_calls", sum(sum(c.name == "call_tool" for c in e.calls) for e in environments) / count)
    log_metric("env/gateway_errors", sum(e.errors for e in environments) / count)


def _grouped(
    kind: str,
    completions: Sequence[Any],
    task_id: Sequence[str],
    environments: Sequence[CompoWorldEnv],
    kwargs: dict[str, Any],
) -> list[float]:
    _log_calls(environments, kwargs.get("log_metric"))
    rows = _scored(environments, completions, kwargs.get("prompts"))
    rewards = [0.0] * len(rows)
    for indices in _groups(task_id).values():
        passes = [rows[i][0] for i in indices]
        negatives = [rows[i][1] for i in indices]
        weights, penalty = rows[indices[0]][2], rows[indices[0]][3]
        if kind == "cfrr":
            values = cfrr(passes, weights, negatives=negatives, penalty=penalty)
        elif kind == "rubric":
            values = rubric_fraction(passes, weights, negatives=negatives, penalty=penalty)
        else:
            values = binary_success(passes, negatives=negatives)
        for i, value in zip(indices, values, strict=True):
            rewards[i] = value
    return rewards


def cfrr_reward(
    completions: Sequence[Any], task_id: Sequence[str], environments: Sequence[CompoWorldEnv], **kwargs: Any
) -> list[float]:
    """TRL reward function: CFRR over each group of rollouts of one task."""
    return _grouped("cfrr", completions, task_id, environments, kwargs)


def rubric_reward(
    completions: Sequence[Any], task_id: Sequence[str], environments: Sequence[CompoWorldEnv], **kwargs: Any
) -> list[float]:
    """TRL reward function: the plain weighted rubric fraction (net of negative criteria)."""
    return _grouped("rubric", completions, task_id, environments, kwargs)


def success_reward(
    completions: Sequence[Any], task_id: Sequence[str], environments: Sequence[CompoWorldEnv], **kwargs: Any
) -> list[float]:
    """TRL reward function: 1 when every criterion passes."""
    return _grouped("success", completions, task_id, environments, kwargs)


def grpo_rows(tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """Dataset rows for GRPO: a conversational prompt, the task id and the task itself."""
    return [
        {
            "prompt": [
                {"role": "system", "content": system_prompt("gateway")},
                {"role": "user", "content": t.instruction},
            ],
            "task_id": t.id,
            "task": t.model_dump_json(),
        }
        for t in tasks
    ]


def train_grpo(config: GRPOTraining) -> dict[str, Any]:
    """One GRPO run with TRL: the gateway environment, rubric rewards grouped by task.

    Every rollout the reward function scores is recorded into the run store ``config.store`` (the harness's
    default, so ``compoworld report <run>`` finds it) as a trajectory of run ``config.run_name``, with its calls and
    per-criterion results: a GRPO run is reported and exported to SFT like any other run. The run's stored config
    holds ``config`` under ``training``.

    ``model="tiny"`` builds the local smoke model with random weights (its tokenizer is trained on ``sft_data`` or
    on the prompts); it emits no tool calls. A tiny model warmed up by ``compoworld train sft --env-tools`` does.
    ``max_tasks`` keeps the first tasks of the file only. Returns the logged metrics.
    """
    import os

    import datasets
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    model, num_generations, output_dir = config.model, config.num_generations, str(config.output)
    tasks = list(read_jsonl(config.tasks))[: config.max_tasks]
    rows = grpo_rows(tasks)
    cpu = False
    if model == TINY:
        tools = env_tool_schemas()
        source = (
            sft_rows(config.sft_data, tools=tools)
            if config.sft_data
            else [{"messages": r["prompt"], "tools": tools} for r in rows]
        )
        tokenizer: Any = tiny_tokenizer(rendered_texts(source))
        network: Any = tiny_model(tokenizer, seed=SEED)
        cpu = True
    else:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        network = AutoModelForCausalLM.from_pretrained(model)
        cpu = not torch.cuda.is_available()  # e.g. a warmed-up tiny model; TRL's bf16 default needs a GPU
    rewards: Any = {"cfrr": cfrr_reward, "rubric": rubric_reward, "success": success_reward}[config.reward]
    peft_config = None
    if config.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=16, lora_alpha=32, task_type="CAUSAL_LM", target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]
        )
    args = GRPOConfig(
        output_dir=output_dir,
        max_steps=config.max_steps,
        per_device_train_batch_size=num_generations,
        num_generations=num_generations,
        max_completion_length=config.max_completion_length,
        learning_rate=config.learning_rate,
        temperature=config.temperature,
        logging_steps=1,
        report_to=[],
        use_cpu=cpu,
        save_strategy="no",
        max_tool_calling_iterations=config.max_tool_calling_iterations,
    )
    run_name = config.run_name
    previous = CompoWorldEnv.recording
    recording = RolloutRecording(RunStore(config.store), run_name, model)
    # One rollout group per task and step: the stored config says so, and keeps every training setting.
    recording.config = RunConfig(
        surface="gateway",
        rollouts=num_generations,
        agents=[AgentSpec(name=recording.agent, model=model)],
        training={"trainer": "grpo", **config.model_dump(mode="json")},
    )
    CompoWorldEnv.recording = recording
    trainer = GRPOTrainer(
        model=network,
        reward_funcs=[rewards],
        args=args,
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=CompoWorldEnv,
        peft_config=peft_config,
    )
    try:
        trainer.train()
    finally:
        CompoWorldEnv.recording = previous
        close_worlds()
    trainer.save_model(output_dir)
    return {
        "log": [dict(h) for h in trainer.state.log_history],
        "tasks": len(tasks),
        "output_dir": output_dir,
        "store": str(config.store),
        "run": run_name,
    }
