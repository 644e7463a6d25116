"""The configuration of a run, as one model shared by the CLI, the Python API, Ray and the run store.

``compoworld run`` builds a :class:`RunConfig` from its flags, :func:`harness.runner.run` takes one,
the Ray backend ships it to its actors as JSON, and the run store keeps it with the run
(``runs.config``), where reports read it back with :meth:`RunConfig.stored`.

Runs stored before this model existed stay readable: their ``agents`` were plain names (now
:class:`~harness.agent_spec.AgentSpec` objects), and keys this model does not name — the trainer
settings GRPO runs stored flat, anything a caller merged in — are kept as extra fields.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.agent_spec import AgentSpec
from harness.trajectory import Surface

#: How episodes reach the world: in process, through an in-memory MCP client, or (runs of ``eval score``) an
#: external MCP client whose recorded session was scored.
CallPath = Literal["inprocess", "mcp", "external"]
EpisodePath = Literal["inprocess", "mcp"]
Backend = Literal["local", "ray"]


class RunConfig(BaseModel):
    """How a run's episodes are run: surface, call path, rollouts, seed, backend and the agents."""

    # extra="allow": a stored config from an older version (or a trainer's) loads with its own keys intact.
    model_config = ConfigDict(extra="allow")

    surface: Surface = "direct"
    path: CallPath = "inprocess"
    rollouts: int = Field(1, ge=0)
    parallel: int = Field(1, ge=0, description="episodes at once: threads, or Ray actors (0 and 1: one at a time)")
    seed: int = 0
    backend: Backend = "local"
    agents: list[AgentSpec] = Field(default_factory=list, description="filled in by the runner from its agents")
    training: dict[str, Any] = Field(
        default_factory=dict, description="the trainer's settings, for runs a trainer records (GRPO rollouts)"
    )

    @field_validator("agents", mode="before")
    @classmethod
    def _names_are_specs(cls, value: Any) -> Any:
        """Runs stored before agent specs listed their agents by name."""
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @property
    def agent_names(self) -> list[str]:
        return [spec.name for spec in self.agents]

    def episode_path(self) -> EpisodePath:
        """The path the runner's episodes take; a run of external clients' sessions has none to run."""
        if self.path == "external":
            raise ValueError("an external client's episodes are scored from its session (`compoworld eval score`)")
        return self.path

    def stored_json(self) -> str:
        """The JSON the run store keeps (no defaults left out, so a later version reads what ran)."""
        return self.model_dump_json()

    @classmethod
    def stored(cls, text: str | None) -> RunConfig:
        """The config of a stored run; an empty one (stores that kept none) gives the defaults."""
        data = json.loads(text) if text else {}
        return cls.model_validate(data if isinstance(data, dict) else {})
