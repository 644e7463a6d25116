"""CompoWorld tasks as a verifiers environment (``load_environment``); see :mod:`compoworld_verifiers.environment`.

pip install verifiers==0.4.0 ./integrations/verifiers      # in verifiers' own virtual environment
python -m training.verifiers_server --tasks tasks.jsonl --store runs/runs.db --token SECRET   # in ours

env = load_environment(tasks=["t5-00000"], reward="cfrr", group_size=4, server="http://127.0.0.1:8790",
                       token="SECRET")
"""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf

from compoworld_verifiers.environment import (
    CompoWorldData,
    CompoWorldGroupEnv,
    CompoWorldGroupEnvConfig,
    CompoWorldHarness,
    CompoWorldHarnessConfig,
    CompoWorldTask,
    CompoWorldTaskConfig,
    CompoWorldTaskset,
    CompoWorldTasksetConfig,
    RewardKind,
)
from compoworld_verifiers.toolset import CompoWorldGateway, RolloutState

TASKSET_ID = "compoworld-verifiers"

# verifiers finds a taskset package's Taskset, Harness and Env through `__all__` (exactly one of each).
__all__ = [
    "CompoWorldData",
    "CompoWorldGateway",
    "CompoWorldGroupEnv",
    "CompoWorldGroupEnvConfig",
    "CompoWorldHarness",
    "CompoWorldHarnessConfig",
    "CompoWorldTask",
    "CompoWorldTaskConfig",
    "CompoWorldTaskset",
    "CompoWorldTasksetConfig",
    "RolloutState",
    "load_environment",
]


def load_environment(
    tasks: list[str] | None = None,
    surface: str = "gateway",
    reward: RewardKind = "rubric",
    group_size: int = 1,
    server: str | None = None,
    token: str | None = None,
    model: str = "policy",
    **env: Any,
) -> vf.Env:
    """A verifiers environment over the tasks a CompoWorld rollout server serves.

    ``tasks``: task ids (default: all); ``surface``: ``gateway`` (the four meta-tools); ``reward``: ``rubric`` (each
    rollout's net rubric score) or ``cfrr`` (group-relative, over the ``group_size`` rollouts of an episode);
    ``server``/``token``: the rollout server (default ``$COMPOWORLD_SERVER`` / ``$COMPOWORLD_TOKEN``); ``model``:
    recorded as the episodes' agent ``verifiers:<model>``; further keywords go to the env config (e.g. ``agent``).
    """
    if surface != "gateway":
        raise ValueError(f"surface {surface!r} is not supported: the verifiers environment serves 'gateway'")
    if reward not in ("rubric", "cfrr"):
        raise ValueError(f"reward {reward!r} must be 'rubric' or 'cfrr'")
    task: dict[str, Any] = {"reward": reward, "surface": surface, "model": model}
    task |= {"server": server.rstrip("/")} if server else {}
    task |= {"token": token} if token is not None else {}
    # The harness is a local chat loop (no code execution): it runs beside the tools unless told otherwise,
    # where verifiers' default runtime is a remote sandbox that needs a Prime account.
    env.setdefault("agent", {"runtime": {"type": "subprocess"}})
    config = vf.resolve_env_config(
        {"taskset": {"id": TASKSET_ID, "tasks": tasks, "task": task}, "n": group_size, **env}
    )
    return vf.load_environment(config)
