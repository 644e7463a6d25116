"""Agents by name: :class:`AgentSpec`, the data that builds an agent, and :func:`make_agent`.

The CLI builds its agents from specs (``--agent oracle``), a run stores the specs of its agents in its
:class:`~harness.config.RunConfig`, and a Ray actor rebuilds the driver's agents from them, since an agent
object does not travel. All go through :meth:`AgentSpec.build`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.agents import Agent, NullAgent, OracleAgent, RandomAgent


class AgentSpec(BaseModel):
    """What builds one agent: its name and, for the openai agent, the endpoint and sampling options.

    Never an API key: a spec is stored with its run, so the key stays in ``$OPENAI_API_KEY``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str | None = None
    base_url: str | None = None
    max_turns: int = Field(30, ge=1)
    temperature: float = 0.0
    max_tokens: int | None = None

    def build(self) -> Agent:
        """The agent this spec describes (an unknown name raises ``ValueError``)."""
        if self.name == "openai":
            return make_agent(
                self.name,
                self.model,
                self.base_url,
                max_turns=self.max_turns,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        return make_agent(self.name, self.model, self.base_url)

    @classmethod
    def of(cls, agent: Agent) -> AgentSpec:
        """The spec that builds ``agent`` again. The :class:`Agent` protocol knows a name and a model; the
        openai agent's endpoint and sampling options are its own attributes."""
        if agent.name != "openai":
            return cls(name=agent.name, model=agent.model)
        options = {key: getattr(agent, key) for key in ("base_url", "max_turns", "temperature", "max_tokens")}
        return cls(name=agent.name, model=agent.model, **options)


def make_agent(name: str, model: str | None = None, base_url: str | None = None, **options: Any) -> Agent:
    """An agent by name: oracle, oracle-recovery, null, random or openai (which needs a model)."""
    if name in ("oracle", "oracle-recovery"):
        return OracleAgent(recovery=name == "oracle-recovery")
    if name == "null":
        return NullAgent()
    if name == "random":
        return RandomAgent()
    if name == "openai":
        if not model:
            raise ValueError("the openai agent needs --model (and --base-url or $OPENAI_BASE_URL)")
        # Imported here, not at module level, for start-up speed: the openai client takes ~0.5 s to
        # import and only this agent needs it.
        from harness.openai_agent import OpenAIAgent

        return OpenAIAgent(model, base_url=base_url, **options)
    raise ValueError(f"unknown agent {name!r}; choose oracle, oracle-recovery, null, random or openai")
