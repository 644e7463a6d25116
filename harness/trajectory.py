"""Trajectories: everything one episode did, as data.

The chat messages are in OpenAI format (what SFT export and the published CompoWorld data use);
every tool call the agent made is also kept as a structured record
(:class:`hub.middleware.ToolCall`, made once by the recorder its environment owns) with the
service, the arguments, the envelope, the latency and, for writes, the state diff.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hub.middleware import ToolCall  # the one call record (the world's recorder makes it)
from hub.rubric import CriterionResult

Surface = Literal["direct", "gateway"]
FinishReason = Literal["completed", "max_turns", "error", "no_action", "timeout"]


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    agent: str
    model: str | None = None
    surface: Surface = "direct"
    path: Literal["inprocess", "mcp", "external"] = "inprocess"
    rollout: int = 0
    seed: int = 0
    messages: list[dict[str, Any]] = Field(default_factory=list)
    # The OpenAI function specs the agent was offered, as it saw them. The run store keeps each
    # distinct list once per run (keyed by its hash), so exports need no hub and stay right after
    # the services change; an episode recorded without them (an external client's) has [].
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    report: dict[str, Any] = Field(default_factory=dict)
    final_hash: str = ""
    criteria: list[CriterionResult] = Field(default_factory=list)
    score: float = 0.0
    net_score: float = 0.0
    success: bool = False
    finish_reason: FinishReason = "completed"
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    services: list[str] = Field(default_factory=list)

    @property
    def n_errors(self) -> int:
        return sum(1 for c in self.tool_calls if not c.ok)
