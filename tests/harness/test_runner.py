"""Runs: resumable after kill -9, parallel like serial, MCP path like in-process, Ray like local."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.agent_spec import AgentSpec, make_agent
from harness.config import RunConfig
from harness.runner import run
from harness.store import RunStore
from hub.core import Hub
from taskgen.generate import generate
from taskgen.task import Task, write_jsonl
from tests.conftest import full_hub
from training.cli import app


@pytest.fixture(scope="module")
def setup() -> tuple[Hub, list[Task]]:
    hub = full_hub()
    return hub, generate(5, seed=6, hub=hub).tasks


def _rows(store: RunStore, run_id: str) -> list[tuple[str, float, str, int]]:
    return sorted((e["id"].split("/", 1)[1], e["score"], e["final_hash"], e["n_calls"]) for e in store.episodes(run_id))


def test_oracle_scores_one_null_zero_and_episodes_are_stored_whole(
    setup: tuple[Hub, list[Task]], tmp_path: Path
) -> None:
    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    summary = run(hub, tasks, [make_agent("oracle"), make_agent("null")], store, "r")
    assert summary.ran == 10 and summary.skipped == 0
    episodes = store.episodes("r")
    assert {e["score"] for e in episodes if e["agent"] == "oracle"} == {1.0}
    assert {e["score"] for e in episodes if e["agent"] == "null"} == {0.0}
    for episode in episodes:
        steps = [s for s in store.steps("r") if s["episode_id"] == episode["id"]]
        assert len(steps) == episode["n_calls"]
    assert run(hub, tasks, [make_agent("oracle")], store, "r").ran == 0


def test_parallel_and_serial_runs_agree(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    agents = [make_agent("oracle"), make_agent("random")]
    run(hub, tasks, agents, store, "serial", RunConfig(rollouts=2))
    run(hub, tasks, agents, store, "parallel", RunConfig(rollouts=2, parallel=4))
    assert _rows(store, "serial") == _rows(store, "parallel")


def test_a_run_stores_its_config_with_the_specs_of_its_agents(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    run(
        hub, tasks[:1], [make_agent("oracle"), AgentSpec(name="null")], store, "r", RunConfig(surface="gateway", seed=4)
    )
    agents = [AgentSpec(name="oracle"), AgentSpec(name="null")]
    assert store.config("r") == RunConfig(surface="gateway", seed=4, agents=agents)
    assert sorted(e["agent"] for e in store.episodes("r")) == ["null", "oracle"]


def test_the_run_command_stores_the_config_its_flags_describe(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    _, tasks = setup
    tasks_file, db = tmp_path / "tasks.jsonl", tmp_path / "runs.db"
    write_jsonl(tasks[:1], tasks_file)
    flags = ["--tasks", str(tasks_file), "--agent", "null", "--agent", "oracle", "--surface", "gateway"]
    flags += ["--rollouts", "2", "--parallel", "2", "--max-turns", "7", "--run", "r", "--store", str(db)]
    result = CliRunner().invoke(app, ["run", *flags])
    assert result.exit_code == 0, result.output
    agents = [AgentSpec(name="null"), AgentSpec(name="oracle")]  # --max-turns is the openai agent's only
    assert RunStore(db).config("r") == RunConfig(surface="gateway", rollouts=2, parallel=2, agents=agents)


def test_mcp_path_records_what_the_in_process_path_records(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    for path in ("inprocess", "mcp"):
        run(hub, tasks[:2], [make_agent("oracle")], store, path, RunConfig(surface="gateway", path=path))
    one, two = list(store.trajectories("inprocess")), list(store.trajectories("mcp"))
    assert [t.final_hash for t in one] == [t.final_hash for t in two]
    for a, b in zip(one, two, strict=True):
        assert [(c.name, c.tool, c.arguments, c.envelope) for c in a.tool_calls] == [
            (c.name, c.tool, c.arguments, c.envelope) for c in b.tool_calls
        ]


@pytest.mark.slow
def test_kill_minus_nine_then_resume_keeps_every_episode_once(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    hub, _ = setup
    tasks_file, db = tmp_path / "tasks.jsonl", tmp_path / "runs.db"
    write_jsonl(generate(16, seed=7, hub=hub).tasks, tasks_file)
    command = [
        sys.executable,
        "-m",
        "training.cli",
        "run",
        "--tasks",
        str(tasks_file),
        "--agent",
        "oracle",
        "--agent",
        "random",
        "--rollouts",
        "2",
        "--path",
        "mcp",
        "--run",
        "r",
        "--store",
        str(db),
    ]
    total = 16 * 2 * 2
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    stored = conn.execute("select count(*) from episodes").fetchone()[0]
            except sqlite3.OperationalError:
                continue
        if stored >= 8:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with sqlite3.connect(db) as conn:
        before = dict(conn.execute("select id, final_hash from episodes").fetchall())
    assert 0 < len(before) < total, "the run must be killed mid-way"
    finished = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    with sqlite3.connect(db) as conn:
        after = dict(conn.execute("select id, final_hash from episodes").fetchall())
        ids = [r[0] for r in conn.execute("select id from episodes")]
        orphans = conn.execute("select count(*) from steps where episode_id not in (select id from episodes)")
        assert orphans.fetchone()[0] == 0
    assert len(after) == len(ids) == total
    assert all(after[k] == v for k, v in before.items())


@pytest.mark.slow
def test_ray_backend_gives_the_local_scores(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    agents = [make_agent("oracle"), make_agent("null"), make_agent("random")]
    run(hub, tasks, agents, store, "local", RunConfig(rollouts=2))
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        summary = run(hub, tasks, agents, store, "ray", RunConfig(rollouts=2, backend="ray", parallel=2))
    finally:
        ray.shutdown()
    assert summary.ran == len(tasks) * 3 * 2
    assert _rows(store, "local") == _rows(store, "ray")


def test_sft_export_filters_and_holds_out_whole_tasks(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    import json

    from harness.export import export_sft

    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    run(hub, tasks, [make_agent("oracle"), make_agent("null")], store, "r", RunConfig(rollouts=2))
    out = tmp_path / "sft.jsonl"
    count = export_sft(store, "r", out, held_out=0.4)
    train = [json.loads(line) for line in out.read_text().splitlines()]
    test = [json.loads(line) for line in (tmp_path / "sft.test.jsonl").read_text().splitlines()]
    assert count == len(train) + len(test) == len(tasks)  # null episodes fail; duplicate rollouts dedupe
    assert {r["meta"]["task_id"] for r in train}.isdisjoint({r["meta"]["task_id"] for r in test}) and test
    assert all(r["meta"]["agent"] == "oracle" and r["meta"]["rubric_score"] == 1.0 for r in train + test)
    for record in train + test:  # the published layout's meta keys
        meta = record["meta"]
        assert meta["src"] == "compoworld/oracle" and meta["net_score"] == meta["score"] == 1.0
        assert meta["rollout_idx"] in (0, 1) and 0 < meta["n_real_tool_calls"] <= meta["n_tool_calls"]
    assert export_sft(store, "r", out, surface="gateway") == 0


def test_a_run_never_mixes_rubric_versions(setup: tuple[Hub, list[Task]], tmp_path: Path) -> None:
    """Episodes keep the rubric version they were scored with; resuming a run with tasks of
    another rubric version is refused instead of mixing two scorings in one run."""
    hub, tasks = setup
    store = RunStore(tmp_path / "runs.db")
    run(hub, tasks[:1], [make_agent("oracle")], store, "r")
    assert {e["rubric_version"] for e in store.episodes("r")} == {2}
    old = tasks[0].model_copy(update={"rubric": tasks[0].rubric.model_copy(update={"version": 1})})
    with pytest.raises(ValueError, match="rubric version 2"):
        run(hub, [old], [make_agent("null")], store, "r")
    assert run(hub, [old], [make_agent("null")], store, "r-v1").ran == 1
