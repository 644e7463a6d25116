"""Agents by name: the agent a name and its options build, and the spec that builds it again.

The CLI builds its agents from names (``--agent oracle``); a Ray actor rebuilds the driver's agents
from their specs, since an agent object does not travel. Both go through :func:`make_agent`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.agents import Agent, NullAgent, OracleAgent, RandomAgent


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


def agent_spec(agent: Agent) -> dict[str, Any]:
    """What rebuilds ``agent`` elsewhere with :func:`make_agent`: its name and, for the openai agent,
    the endpoint."""
    spec: dict[str, Any] = {"name": agent.name}
    if agent.name == "openai":
        spec.update(
            model=agent.model, base_url=getattr(agent, "base_url", None), max_turns=getattr(agent, "max_turns", 30)
        )
    return spec


def agent_from_spec(spec: Mapping[str, Any]) -> Agent:
    """The agent an :func:`agent_spec` describes."""
    options = {k: v for k, v in spec.items() if k not in ("name", "model", "base_url")}
    return make_agent(spec["name"], spec.get("model"), spec.get("base_url"), **options)
