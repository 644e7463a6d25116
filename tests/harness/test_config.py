"""Run configs and agent specs: what a run stores, and runs stored by older versions still load."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.agent_spec import AgentSpec, make_agent
from harness.config import RunConfig
from harness.metrics import agent_order
from harness.store import RunStore


def _old_run(store: RunStore, run: str, config: str) -> None:
    """A ``runs`` row as the code before :class:`RunConfig` wrote it: its config dict, dumped as it was."""
    store.db.table("runs").insert({"id": run, "created": time.time(), "config": config})


def test_a_run_config_stored_by_the_old_runner_loads_with_its_agents_and_extra_keys(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    # harness.runner.run stored agent names and merged the caller's `config` dict into the same object.
    old = {"surface": "gateway", "path": "mcp", "rollouts": 2, "seed": 3, "agents": ["null", "oracle"], "note": "x"}
    _old_run(store, "old", json.dumps(old))
    config = store.config("old")
    assert config is not None
    assert (config.surface, config.path, config.rollouts, config.seed) == ("gateway", "mcp", 2, 3)
    assert config.agents == [AgentSpec(name="null"), AgentSpec(name="oracle")]
    assert config.model_extra == {"note": "x"}
    assert agent_order(store, "old") == ["null", "oracle"]  # what the report orders its agents by


def test_a_grpo_run_config_stored_by_the_old_trainer_keeps_its_flat_training_keys(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    old = {"trainer": "grpo", "model": "tiny", "reward": "cfrr", "num_generations": 4, "surface": "gateway"}
    _old_run(store, "grpo", json.dumps(old))
    config = store.config("grpo")
    assert config is not None and config.surface == "gateway" and config.agents == []
    assert config.model_extra == {"trainer": "grpo", "model": "tiny", "reward": "cfrr", "num_generations": 4}
    assert agent_order(store, "grpo") == []


@pytest.mark.parametrize("stored", ["{}", "", '{"path": "external"}'])
def test_empty_and_external_run_configs_load(tmp_path: Path, stored: str) -> None:
    """Runs that stored no config, and the runs `eval score` keeps external clients' sessions in."""
    store = RunStore(tmp_path / "runs.db")
    _old_run(store, "r", stored)
    config = store.config("r")
    assert config is not None and config.surface == "direct" and config.agents == []
    assert config.path == ("external" if "external" in stored else "inprocess")


def test_a_config_that_no_version_wrote_leaves_the_report_without_an_agent_order(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    _old_run(store, "r", '{"rollouts": "many"}')
    with pytest.raises(ValueError, match="rollouts"):
        store.config("r")
    assert agent_order(store, "r") == []


def test_an_unknown_run_has_no_config(tmp_path: Path) -> None:
    assert RunStore(tmp_path / "runs.db").config("nope") is None


def test_an_external_run_config_cannot_be_run() -> None:
    with pytest.raises(ValueError, match="eval score"):
        RunConfig(path="external").episode_path()


def test_the_openai_agent_spec_round_trips_through_the_agent_and_json() -> None:
    spec = AgentSpec(
        name="openai", model="m", base_url="http://127.0.0.1:9/v1", max_turns=5, temperature=0.3, max_tokens=99
    )
    agent = spec.build()
    assert (agent.name, agent.model) == ("openai", "m")
    assert AgentSpec.of(agent) == spec
    assert AgentSpec.model_validate_json(spec.model_dump_json()) == spec  # what a Ray actor receives


def test_a_built_in_agent_spec_is_its_name() -> None:
    assert AgentSpec.of(make_agent("oracle-recovery")) == AgentSpec(name="oracle-recovery")
    assert AgentSpec(name="random").build().name == "random"


def test_an_agent_spec_never_holds_an_api_key() -> None:
    """A spec is stored with its run: the key stays in the environment."""
    with pytest.raises(ValueError, match="api_key"):
        AgentSpec.model_validate({"name": "openai", "model": "m", "api_key": "sk-secret"})


@pytest.mark.parametrize(
    ("spec", "message"), [(AgentSpec(name="nope"), "unknown agent"), (AgentSpec(name="openai"), "--model")]
)
def test_an_agent_spec_that_builds_nothing_says_why(spec: AgentSpec, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec.build()
