"""The rollout server verifiers environments drive: real HTTP (uvicorn in a thread), real worlds, real SQLite."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.agents import OracleAgent
from harness.episode import run_episode
from harness.store import RunStore
from hub.surfaces import GATEWAY_NAMES
from taskgen.generate import generate
from taskgen.task import Task, resolve
from tests.conftest import free_port, full_hub
from training.rewards import cfrr
from training.verifiers_server import RolloutServer

TOKEN = "admin-secret"


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return generate(2, seed=5, hub=full_hub()).tasks


@pytest.fixture(scope="module")
def served(tasks: list[Task], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RolloutServer]]:
    store = tmp_path_factory.mktemp("verifiers-server") / "runs.db"
    server = RolloutServer(full_hub(), tasks, store, run="vf", admin_token=TOKEN)
    port = free_port()
    front = uvicorn.Server(uvicorn.Config(server.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=front.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not front.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", server
    front.should_exit = True
    thread.join(timeout=10)
    server.close()


@pytest.fixture
def http(served: tuple[str, RolloutServer]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[0], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
        yield client


def _open(http: httpx.Client, task: Task, model: str = "policy") -> dict[str, Any]:
    response = http.post("/rollouts", json={"task_id": task.id, "model": model})
    assert response.status_code == 201, response.text
    opened: dict[str, Any] = response.json()
    return opened


def _call(http: httpx.Client, rollout: dict[str, Any], name: str, arguments: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {rollout['token']}"}
    response = http.post(
        f"/rollouts/{rollout['rollout_id']}/call", json={"name": name, "arguments": arguments}, headers=headers
    )
    assert response.status_code == 200, response.text
    envelope: dict[str, Any] = response.json()
    return envelope


def _replay(http: httpx.Client, rollout: dict[str, Any], task: Task, steps: int | None = None) -> None:
    results: list[Any] = []
    for step in task.plan[:steps]:
        envelope = _call(
            http, rollout, "call_tool", {"tool_name": step.tool, "arguments": resolve(step.arguments, results)}
        )
        assert envelope["success"] is True, (step.tool, envelope)
        results.append(envelope)


def _finish(http: httpx.Client, rollout: dict[str, Any], report: dict[str, Any] | None = None) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": "the instruction"},
        {"role": "assistant", "content": f"Done. {report or {}}"},
    ]
    body: dict[str, Any] = {"messages": messages} | ({"report": report} if report is not None else {})
    response = http.post(f"/rollouts/{rollout['rollout_id']}/finish", json=body)
    assert response.status_code == 200, response.text
    finished: dict[str, Any] = response.json()
    return finished


def test_tasks_show_the_instruction_and_system_prompt_but_no_answer_key(http: httpx.Client, tasks: list[Task]) -> None:
    shown = http.get("/tasks").json()["tasks"]
    assert [t["id"] for t in shown] == [t.id for t in tasks]
    assert shown[0]["instruction"] == tasks[0].instruction
    assert "call_tool" in shown[0]["system_prompt"]
    assert set(shown[0]) == {"id", "instruction", "system_prompt", "services"}


def test_an_oracle_rollout_is_stored_and_scored_as_the_harness_scores_the_oracle(
    http: httpx.Client, served: tuple[str, RolloutServer], tasks: list[Task]
) -> None:
    task = tasks[0]
    rollout = _open(http, task, model="oracle-replay")
    _replay(http, rollout, task)
    finished = _finish(http, rollout, task.expected_report)
    harness = run_episode(full_hub(), task, OracleAgent(), surface="gateway")
    assert finished["score"] == harness.score == 1.0 and finished["net_score"] == harness.net_score
    assert [(c["id"], c["passed"]) for c in finished["criteria"]] == [(c.id, c.passed) for c in harness.criteria]
    stored = {e["id"]: e for e in RunStore(served[1].store_path).episodes("vf")}[finished["episode_id"]]
    assert stored["agent"] == "verifiers:oracle-replay" and stored["surface"] == "gateway"
    assert stored["score"] == 1.0 and stored["n_calls"] == len(task.plan)


def test_a_partial_rollout_without_a_report_scores_as_the_same_calls_score_in_process(
    http: httpx.Client, tasks: list[Task]
) -> None:
    from harness.env import InProcessEnv

    task = tasks[1]
    rollout = _open(http, task)
    _replay(http, rollout, task, steps=2)
    finished = _finish(http, rollout, {})
    world = full_hub().open_world(services=task.mounted, seed=task.seed)
    try:
        env = InProcessEnv(world, "gateway")
        results: list[Any] = []
        for step in task.plan[:2]:
            results.append(
                env.call("call_tool", {"tool_name": step.tool, "arguments": resolve(step.arguments, results)})
            )
        expected = world.score(task.rubric, report={})
    finally:
        world.close()
    assert finished["score"] == expected.score < 1.0 and finished["net_score"] == expected.net_score
    assert [c["passed"] for c in finished["criteria"]] == [c.passed for c in expected.criteria]


def test_the_report_is_read_from_the_final_message_when_none_is_given(http: httpx.Client, tasks: list[Task]) -> None:
    rollout = _open(http, tasks[0])
    finished = _finish(http, rollout)
    assert finished["report"] == {} and finished["score"] == 0.0


def test_an_unknown_task_is_refused_naming_it_and_opens_nothing(
    http: httpx.Client, served: tuple[str, RolloutServer]
) -> None:
    before = len(served[1].rollouts)
    response = http.post("/rollouts", json={"task_id": "no-such-task"})
    assert response.status_code == 400 and "task_id 'no-such-task'" in response.json()["error"]
    assert len(served[1].rollouts) == before


def test_a_call_with_another_rollouts_token_is_refused_and_changes_nothing(
    http: httpx.Client, served: tuple[str, RolloutServer], tasks: list[Task]
) -> None:
    mine, other = _open(http, tasks[0]), _open(http, tasks[0])
    world = served[1].rollouts[mine["rollout_id"]].env.world
    assert world is not None
    before = world.hash()
    step = tasks[0].plan[-1]
    response = http.post(
        f"/rollouts/{mine['rollout_id']}/call",
        json={"name": "call_tool", "arguments": {"tool_name": step.tool, "arguments": {}}},
        headers={"Authorization": f"Bearer {other['token']}"},
    )
    assert response.status_code == 403 and mine["rollout_id"] in response.json()["error"]
    assert world.hash() == before


def test_a_call_that_is_not_a_gateway_tool_gets_an_envelope_naming_it(http: httpx.Client, tasks: list[Task]) -> None:
    envelope = _call(http, _open(http, tasks[0]), "drop_tables", {})
    assert envelope["success"] is False and envelope["error"]["code"] == 400
    assert "name 'drop_tables'" in envelope["error"]["message"]


def test_a_finished_rollout_takes_no_call_and_finishes_once(
    http: httpx.Client, served: tuple[str, RolloutServer], tasks: list[Task]
) -> None:
    rollout = _open(http, tasks[0], model="twice")
    first = _finish(http, rollout, {})
    envelope = _call(http, rollout, "list_services", {})
    assert envelope["success"] is False and envelope["error"]["code"] == 409
    assert _finish(http, rollout, tasks[0].expected_report) == first
    stored = [e for e in RunStore(served[1].store_path).episodes("vf") if e["agent"] == "verifiers:twice"]
    assert len(stored) == 1


def test_group_cfrr_is_the_training_reward_over_the_groups_criteria(http: httpx.Client, tasks: list[Task]) -> None:
    task = tasks[0]
    full, partial, idle = _open(http, task), _open(http, task), _open(http, task)
    _replay(http, full, task)
    _replay(http, partial, task, steps=len(task.plan) - 1)
    results = [_finish(http, full, task.expected_report), _finish(http, partial, {}), _finish(http, idle, {})]
    ids = [r["rollout_id"] for r in results]
    rewards = http.post("/groups", json={"rollouts": ids, "reward": "cfrr"}).json()["rewards"]
    passes = [[1.0 if c["passed"] else 0.0 for c in r["criteria"] if not c["negative"]] for r in results]
    negatives = [[c["passed"] for c in r["criteria"] if c["negative"]] for r in results]
    weights = [c["weight"] for c in results[0]["criteria"] if not c["negative"]]
    assert rewards == cfrr(passes, weights, negatives=negatives, penalty=task.rubric.penalty)
    assert rewards[0] > rewards[1] > rewards[2] == 0.0


def test_a_group_mixing_tasks_or_unfinished_rollouts_is_refused_naming_the_rollout(
    http: httpx.Client, tasks: list[Task]
) -> None:
    first, second, running = _open(http, tasks[0]), _open(http, tasks[1]), _open(http, tasks[0])
    _finish(http, first, {})
    _finish(http, second, {})
    mixed = http.post("/groups", json={"rollouts": [first["rollout_id"], second["rollout_id"]]})
    assert mixed.status_code == 400 and second["rollout_id"] in mixed.json()["error"]
    unfinished = http.post("/groups", json={"rollouts": [first["rollout_id"], running["rollout_id"]]})
    assert unfinished.status_code == 409 and running["rollout_id"] in unfinished.json()["error"]


def test_admin_endpoints_refuse_a_rollout_token(http: httpx.Client, tasks: list[Task]) -> None:
    rollout = _open(http, tasks[0])
    response = http.post(
        "/rollouts", json={"task_id": tasks[0].id}, headers={"Authorization": f"Bearer {rollout['token']}"}
    )
    assert response.status_code == 403


def test_closing_an_unfinished_rollout_closes_its_world_unrecorded(
    http: httpx.Client, served: tuple[str, RolloutServer], tasks: list[Task]
) -> None:
    rollout = _open(http, tasks[0], model="closed")
    response = http.delete(f"/rollouts/{rollout['rollout_id']}")
    assert response.status_code == 200 and rollout["rollout_id"] not in served[1].rollouts
    assert not [e for e in RunStore(served[1].store_path).episodes("vf") if e["agent"] == "verifiers:closed"]
    assert http.post(f"/rollouts/{rollout['rollout_id']}/finish", json={}).status_code == 404


def test_a_rollout_played_over_mcp_is_recorded_and_scored_like_one_played_over_call(
    http: httpx.Client, served: tuple[str, RolloutServer], tasks: list[Task]
) -> None:
    task = tasks[0]
    rollout = _open(http, task, model="over-mcp")
    assert rollout["mcp_url"].endswith("/mcp")

    async def play() -> set[str]:
        headers = {"Authorization": f"Bearer {rollout['token']}"}
        async with (
            httpx2.AsyncClient(headers=headers) as transport,
            Client(streamable_http_client(rollout["mcp_url"], http_client=transport)) as client,
        ):
            names = {t.name for t in (await client.list_tools()).tools}
            results: list[Any] = []
            for step in task.plan:
                arguments = {"tool_name": step.tool, "arguments": resolve(step.arguments, results)}
                envelope = (await client.call_tool("call_tool", arguments)).structured_content
                assert isinstance(envelope, dict) and envelope["success"] is True, envelope
                results.append(envelope)
            return names

    assert anyio.run(play) == GATEWAY_NAMES
    finished = _finish(http, rollout, task.expected_report)
    assert finished["score"] == 1.0 and finished["calls"] == len(task.plan)
    steps = [s for s in RunStore(served[1].store_path).steps("vf") if s["episode_id"] == finished["episode_id"]]
    assert [s["tool"] for s in steps] == [s.tool for s in task.plan]


def test_a_rollouts_mcp_endpoint_refuses_another_rollouts_token(http: httpx.Client, tasks: list[Task]) -> None:
    mine, other = _open(http, tasks[0]), _open(http, tasks[0])
    response = http.post(
        mine["mcp_url"],
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {other['token']}"},
    )
    assert response.status_code == 403


def test_a_finished_rollouts_world_leaves_the_mcp_surface(http: httpx.Client, tasks: list[Task]) -> None:
    rollout = _open(http, tasks[0])
    _finish(http, rollout, {})
    response = http.post(
        rollout["mcp_url"],
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {rollout['token']}"},
    )
    assert response.status_code == 404


def test_a_finished_rollout_keeps_only_its_result_until_it_is_forgotten(
    http: httpx.Client, served: tuple[str, RolloutServer], tasks: list[Task]
) -> None:
    rollout = _open(http, tasks[0])
    _finish(http, rollout, {})
    kept = served[1].rollouts[rollout["rollout_id"]]
    assert kept.env.world is None and kept.env.calls == [] and kept.result is not None
    assert http.delete(f"/rollouts/{rollout['rollout_id']}").status_code == 200
    gone = http.post("/groups", json={"rollouts": [rollout["rollout_id"]]})
    assert gone.status_code == 404 and rollout["rollout_id"] in gone.json()["error"]
