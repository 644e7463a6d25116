"""Trajectories as JSONL: raw, or in the SFT layout of the published CompoWorld example data.

An SFT record is ``{"tools": [OpenAI function specs], "meta": {task_id, src, rollout_idx,
rubric_score, score, net_score, n_tool_calls, n_real_tool_calls, n_steps, discover_mode,
finish_reason, services, domain, capabilities, agent, model, rubric_version}, "source":
"compoworld", "messages": [system, user, assistant with tool_calls, tool, …]}`` — the key order and
the types of the published file (AllSpark-Research/AgentEnv, ``CompoWorld/compoworld_example_data_20.jsonl``):
``task_id`` and ``domain`` are strings, tool-call arguments are JSON objects and every tool message
names its tool. ``score`` is the net score (the published layout's name), ``n_real_tool_calls``
counts the calls that reached a service (not the gateway's discovery calls), ``src`` names the
producer (``compoworld/<agent>``) and ``capabilities`` are the task's.

The tools are the specs the episode was offered, read from the run store: export needs no hub.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.store import RunStore
from harness.trajectory import Trajectory
from taskgen.task import Task

RebuildTools = Callable[[Task, str], list[dict[str, Any]]]
"""``(task, surface) -> specs``: the tools of an episode stored without them (see :func:`export_sft`)."""


def sft_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat in the published layout: tool-call arguments as objects, tool messages with ``name``.

    Arguments that are no JSON object (a model's malformed call) stay the string it wrote.
    """
    names: dict[str, str] = {}
    out = []
    for message in messages:
        message = dict(message)
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = dict(call["function"])
                function["arguments"] = _object(function.get("arguments"))
                names[call.get("id", "")] = function["name"]
                calls.append({**call, "function": function})
            message["tool_calls"] = calls
        if message.get("role") == "tool" and "name" not in message and message.get("tool_call_id") in names:
            message["name"] = names[message["tool_call_id"]]
        out.append(message)
    return out


def _object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError:
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return arguments


def domain_of(task: Task) -> str:
    """The task's domain as one string, as the published records carry it (several are joined by ',')."""
    domain = task.meta.get("domain", "")
    return domain if isinstance(domain, str) else ",".join(str(d) for d in domain)


def sft_record(task: Task, trajectory: Trajectory, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``trajectory`` as one SFT record; ``tools`` replaces the specs it carries (for episodes stored without)."""
    return {
        "tools": trajectory.tools if tools is None else tools,
        "meta": {
            "task_id": str(task.id),
            "src": f"compoworld/{trajectory.agent}",
            "rollout_idx": trajectory.rollout,
            "rubric_score": trajectory.score,
            "score": trajectory.net_score,
            "net_score": trajectory.net_score,
            "n_tool_calls": len(trajectory.tool_calls),
            "n_real_tool_calls": sum(1 for c in trajectory.tool_calls if c.service is not None),
            "n_steps": sum(1 for m in trajectory.messages if m.get("role") == "assistant"),
            "discover_mode": trajectory.surface,
            "finish_reason": trajectory.finish_reason,
            "services": task.services,
            "domain": domain_of(task),
            "capabilities": list(task.meta.get("capabilities", [])),
            "agent": trajectory.agent,
            "model": trajectory.model or "",  # always a string, so Arrow gives the column one type
            "rubric_version": task.rubric_version,  # scores of different versions do not compare
        },
        "source": "compoworld",
        "messages": sft_messages(trajectory.messages),
    }


def export_sft(
    store: RunStore,
    run: str,
    path: str | Path,
    min_score: float = 1.0,
    agents: list[str] | None = None,
    surface: str | None = None,
    held_out: float = 0.0,
    seed: int = 0,
    rebuild_tools: RebuildTools | None = None,
) -> int:
    """Write the verified trajectories of ``run`` (net score >= ``min_score``) as SFT JSONL; deduplicated.

    With ``held_out`` a fraction of the *tasks* (not of the records) goes to ``<stem>.test.jsonl``
    beside ``path``, so no task is in both files. Returns the records written (both files together).
    The tools are those stored with the run; an episode stored without them (a store written before
    runs kept them, an external client's session) gets ``rebuild_tools(task, surface)``, and without
    that function it is an error.
    """
    tasks = store.tasks(run)
    names = sorted(tasks)
    random.Random(seed).shuffle(names)
    test_tasks = set(names[: max(1, int(len(names) * held_out))]) if held_out else set()
    target = Path(path)
    seen: set[str] = set()
    count = 0
    with contextlib.ExitStack() as files:
        train = files.enter_context(open(target, "w", encoding="utf-8"))
        test = train
        if test_tasks:
            test = files.enter_context(open(target.with_name(target.stem + ".test.jsonl"), "w", encoding="utf-8"))
        for trajectory in store.trajectories(run):
            if trajectory.net_score < min_score or (agents and trajectory.agent not in agents):
                continue
            if surface and trajectory.surface != surface:
                continue
            task = tasks[trajectory.task_id]
            tools = None
            if not trajectory.tools:
                if rebuild_tools is None:
                    raise ValueError(
                        f"run {run!r} stored task {task.id!r} ({trajectory.agent}) without the tools it offered: "
                        "export it with a hub to rebuild them from today's services"
                    )
                tools = rebuild_tools(task, trajectory.surface)
            record = sft_record(task, trajectory, tools)
            key = json.dumps(record["messages"], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            handle = test if trajectory.task_id in test_tasks else train
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
