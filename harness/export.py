"""Trajectories as JSONL: raw, or in the SFT layout of the published CompoWorld example data.

An SFT record is ``{"tools": [OpenAI function specs], "messages": [system, user, assistant with
tool_calls, tool, …], "meta": {task_id, src, rollout_idx, rubric_score, score, net_score,
n_tool_calls, n_real_tool_calls, n_steps, discover_mode, finish_reason, services, domain,
capabilities, agent, model, rubric_version}, "source": "compoworld"}`` — ``score`` is the net score
(the published layout's name), ``n_real_tool_calls`` counts the calls that reached a service (not
the gateway's discovery calls), ``src`` names the producer (``compoworld/<agent>``). The tools offered are
rebuilt from the task's services and the surface (they are not stored per episode).
"""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

from harness.env import function_spec
from harness.store import RunStore
from harness.trajectory import Trajectory
from hub.core import Hub
from hub.surfaces import GATEWAY_TOOLS
from taskgen.task import Task


def tools_for(hub: Hub, task: Task, surface: str) -> list[dict[str, Any]]:
    listing = GATEWAY_TOOLS if surface == "gateway" else hub.registry.listing(task.mounted)
    return [function_spec(t) for t in listing]


def sft_record(hub: Hub, task: Task, trajectory: Trajectory) -> dict[str, Any]:
    return {
        "tools": tools_for(hub, task, trajectory.surface),
        "messages": trajectory.messages,
        "meta": {
            "task_id": task.id,
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
            "domain": task.meta.get("domain", []),
            "capabilities": task.meta.get("capabilities", []),
            "agent": trajectory.agent,
            "model": trajectory.model,
            "rubric_version": task.rubric_version,  # scores of different versions do not compare
        },
        "source": "compoworld",
    }


def export_sft(
    hub: Hub,
    store: RunStore,
    run: str,
    path: str | Path,
    min_score: float = 1.0,
    agents: list[str] | None = None,
    surface: str | None = None,
    held_out: float = 0.0,
    seed: int = 0,
) -> int:
    """Write the verified trajectories of ``run`` (net score >= ``min_score``) as SFT JSONL; deduplicated.

    With ``held_out`` a fraction of the *tasks* (not of the records) goes to ``<stem>.test.jsonl``
    beside ``path``, so no task is in both files. Returns the records written (both files together).
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
            record = sft_record(hub, tasks[trajectory.task_id], trajectory)
            key = json.dumps(record["messages"], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            handle = test if trajectory.task_id in test_tasks else train
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
