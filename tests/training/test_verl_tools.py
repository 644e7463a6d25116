"""The verl adapter (training/verl_tools.py) through verl's own classes, in verl's own environment.

verl cannot share our environment (it pins transformers<5.11), so a cached venv holds verl, CPU torch and this
checkout (tests/training/verl_venv.py: built once, 2-3 minutes). ``verl_driver.py`` runs there: it loads the
example tool config with verl's ``initialize_tools_from_config``, runs a generated task's oracle plan through the
tools' create / execute / calc_reward / release and the same task through the harness, and reports; these tests
check the report and the run store it wrote.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.store import RunStore
from hub.surfaces import GATEWAY_TOOLS
from tests.training.verl_venv import REPO, verl_python

pytestmark = pytest.mark.slow  # the first run builds verl's environment (minutes); later runs take ~20 s

CONFIG = REPO / "training" / "configs" / "verl_tools.yaml"


@pytest.fixture(scope="module")
def driven(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python = verl_python()
    work = tmp_path_factory.mktemp("verl")
    out = work / "out.json"
    done = subprocess.run(
        [str(python), str(REPO / "tests" / "training" / "verl_driver.py"), str(CONFIG), str(out)],
        cwd=work,  # the config's store (runs/runs.db) is relative: it lands here
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report: dict[str, Any] = json.loads(out.read_text())
    report["store"] = work / "runs" / "runs.db"
    return report


def test_config_loads_with_verls_loader_as_the_four_gateway_tools(driven: dict[str, Any]) -> None:
    assert driven["classes"] == ["ListServicesTool", "ListToolsTool", "DescribeToolTool", "CallToolTool"]
    for tool in GATEWAY_TOOLS:
        function = driven["schemas"][tool.name]["function"]
        assert function["description"] == tool.description
        assert function["parameters"]["properties"] == tool.input_schema["properties"]
        assert function["parameters"]["required"] == tool.input_schema.get("required", [])


def test_oracle_episode_through_verl_tools_makes_the_harness_oracles_calls(driven: dict[str, Any]) -> None:
    assert driven["verl"]["calls"] == driven["harness"]["calls"]
    assert driven["verl"]["final_hash"] == driven["harness"]["final_hash"]


def test_calc_reward_is_the_harness_score_on_every_tool(driven: dict[str, Any]) -> None:
    assert driven["harness"]["success"] is True
    assert driven["verl"]["rewards"] == [driven["harness"]["net_score"]] * 4


def test_episode_is_recorded_in_the_run_store_and_scored_as_the_harness_scores_it(driven: dict[str, Any]) -> None:
    store = RunStore(Path(driven["store"]))
    episode = {e["id"]: e for e in store.episodes("verl")}[driven["verl"]["episode_id"]]
    assert episode["agent"] == "verl:policy" and episode["surface"] == "gateway"
    harness = driven["harness"]
    assert (episode["score"], episode["net_score"], bool(episode["success"])) == (
        harness["score"],
        harness["net_score"],
        harness["success"],
    )
    assert episode["final_hash"] == harness["final_hash"]
    [trajectory] = [t for t in store.trajectories("verl") if t.rollout == episode["rollout"]]
    assert [[c.id, c.passed] for c in trajectory.criteria] == harness["criteria"]
    assert [[c.name, c.arguments] for c in trajectory.tool_calls] == harness["calls"]
    assert trajectory.report == driven["task"]["expected_report"] and trajectory.finish_reason == "completed"


def test_a_rollout_released_unscored_is_recorded_with_an_empty_report(driven: dict[str, Any]) -> None:
    # The driver's rollouts: the oracle (0), the stock loop's (1), then the bad-arguments instance (2), the timing
    # instance (3) and the timing trajectory of per-call handles (4), ended without calc_reward or a report.
    others = [t for t in RunStore(Path(driven["store"])).trajectories("verl") if t.rollout >= 2]
    assert all(t.report == {} and t.score == 0.0 and t.finish_reason == "max_turns" for t in others)
    # The timing instance: 400 calls through the tool and 400 straight through its harness environment.
    assert [len(t.tool_calls) for t in others] == [1, 800, 400]


def test_stock_tool_agent_loop_runs_a_trajectory_in_one_world_and_records_it_at_its_end(
    driven: dict[str, Any],
) -> None:
    # verl's ToolAgentLoop creates and releases an instance around every call and never calls calc_reward.
    stock = driven["stock_loop"]
    assert stock["key"].startswith("trajectory-") and stock["open_during"] == [stock["key"]]
    assert stock["pending_during"] == 0 and stock["open_after"] == []
    [trajectory] = [t for t in RunStore(Path(driven["store"])).trajectories("verl") if t.rollout == 1]
    assert (trajectory.score, trajectory.success) == (driven["harness"]["score"], True)
    assert trajectory.report == driven["task"]["expected_report"] and trajectory.finish_reason == "completed"
    assert len(trajectory.tool_calls) == 1 + 2 * len(driven["task"]["plan"])  # list_services, then describe + call


def test_scoring_ends_the_episode_and_release_closes_the_world(driven: dict[str, Any]) -> None:
    assert driven["verl"]["after_scoring"]["error"]["code"] == 409
    assert driven["verl"]["open_after_release"] == [] and driven["verl"]["world_closed"] is True


def test_create_without_a_valid_task_names_the_field_and_opens_nothing(driven: dict[str, Any]) -> None:
    bad = driven["bad"]
    assert "'task'" in bad["no_task"] and "'task_id'" in bad["no_task"]
    assert bad["bad_task"].startswith("create_kwargs 'task' is not a task")
    assert "'nope'" in bad["unknown_task_id"]
    assert bad["open_after_bad_create"] == []


def test_a_tool_config_with_an_unknown_reward_is_refused_naming_it(driven: dict[str, Any]) -> None:
    assert "'reward'" in driven["bad"]["bad_reward"] and "'bogus'" in driven["bad"]["bad_reward"]


def test_a_tool_without_a_schema_offers_the_gateways_and_opens_a_task_by_id(driven: dict[str, Any]) -> None:
    assert driven["variants"]["default_schema_same"] is True
    assert driven["variants"]["by_id_task"] == driven["task"]["id"]


def test_create_with_another_task_on_an_open_instance_is_refused(driven: dict[str, Any]) -> None:
    refused = driven["bad"]["other_task_joins"]
    assert refused is not None and refused.startswith("instance 'args' holds task ")


def test_unknown_instance_and_bad_arguments_answer_error_envelopes(driven: dict[str, Any]) -> None:
    assert driven["bad"]["unknown_instance"]["error"]["code"] == 404
    assert "'never-created'" in driven["bad"]["unknown_instance"]["error"]["message"]
    assert driven["bad"]["bad_arguments"]["error"]["code"] == 400


def test_a_tool_call_costs_under_2_ms_more_than_the_in_process_harness_call(driven: dict[str, Any]) -> None:
    assert driven["overhead"]["added_ms"] < 2.0, driven["overhead"]
    assert driven["overhead"]["stock_loop_added_ms"] < 2.0, driven["overhead"]  # create + execute + release
