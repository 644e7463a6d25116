"""verifiers 0.4 (prime-rl's environments) running CompoWorld tasks through its own classes.

verifiers pins ``mcp==2.0.0`` and ``openai<3`` where we need newer, so it lives in its own virtual environment,
``.venvs/verifiers`` (created once, on first use: about 70 s for ``pip install verifiers==0.4.0`` here; the
integration package is reinstalled whenever its source changes). The test starts our rollout server as a real
subprocess and a scripted policy that replays each task's oracle plan over the OpenAI protocol, and runs an
episode through ``load_environment`` → ``Env.run_episode`` (verifiers' interception server, its chat program as
the agent, its MCP toolset machinery) in that environment.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agents import OracleAgent
from harness.env import InProcessEnv
from harness.episode import run_episode
from harness.store import RunStore
from hub.http import GATEWAY_SCHEMAS
from hub.surfaces import GATEWAY_NAMES
from taskgen.generate import generate
from taskgen.task import Task, resolve, write_jsonl
from tests.conftest import free_port, full_hub, wait_for_port
from tests.integrations.oracle_model import OracleModel

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = ROOT / "integrations" / "verifiers"
VENV = ROOT / ".venvs" / "verifiers"
VERIFIERS = "verifiers==0.4.0"
TOKEN = "verifiers-admin"

pytestmark = pytest.mark.slow


def _source_hash() -> str:
    files = [INTEGRATION / "pyproject.toml", *sorted((INTEGRATION / "compoworld_verifiers").glob("*.py"))]
    return hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed: {done.stderr[-2000:]}")


@pytest.fixture(scope="module")
def verifiers_python() -> Path:
    """The verifiers environment's interpreter, with verifiers and our integration installed (cached)."""
    python = VENV / "bin" / "python"
    VENV.parent.mkdir(exist_ok=True)
    with open(VENV.parent / "verifiers.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one creator at a time (xdist workers, other checkouts' runs)
        if not (VENV / ".verifiers-installed").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
            _pip(python, "install", VERIFIERS)
            (VENV / ".verifiers-installed").write_text(VERIFIERS)
        stamp = VENV / ".integration-hash"
        if not stamp.exists() or stamp.read_text() != _source_hash():
            _pip(python, "install", "--no-deps", "--force-reinstall", str(INTEGRATION))
            stamp.write_text(_source_hash())
    return python


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    return generate(2, seed=5, hub=full_hub()).tasks


@pytest.fixture(scope="module")
def rollout_server(tasks: list[Task], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("verifiers")
    write_jsonl(tasks, folder / "tasks.jsonl")
    port, store = free_port(), folder / "runs.db"
    command = [
        str(Path(sys.executable).parent / "compoworld"),
        "serve",
        "verifiers",
        "--tasks",
        str(folder / "tasks.jsonl"),
    ]
    command += ["--store", str(store), "--port", str(port), "--token", TOKEN]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"http://127.0.0.1:{port}", store
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_verifiers_does_not_pull_torch(verifiers_python: Path) -> None:
    listed = subprocess.run(
        [str(verifiers_python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True
    )
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "verifiers" in names and "compoworld-verifiers" in names
    assert not {n for n in names if n == "torch" or n.startswith("nvidia-")}


def _run(python: Path, server: str, model: OracleModel, task: Task, cwd: Path, *extra: str) -> dict[str, Any]:
    """One episode through ``examples/run_episodes.py`` in the verifiers environment; its JSON line."""
    script = INTEGRATION / "examples" / "run_episodes.py"
    args = ["--server", server, "--token", TOKEN, "--model-url", model.url, "--tasks", task.id, *extra]
    done = subprocess.run([str(python), str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return line


def test_a_cfrr_group_runs_in_isolated_worlds_and_is_stored_scored_as_the_harness_scores_it(
    verifiers_python: Path, rollout_server: tuple[str, Path], tasks: list[Task], tmp_path: Path
) -> None:
    server, store = rollout_server
    task = tasks[0]
    model = OracleModel(tasks)
    try:
        episode = _run(verifiers_python, server, model, task, tmp_path, "--reward", "cfrr", "--group", "2")
    finally:
        model.close()
    assert episode["ok"] and episode["task_id"] == task.id, episode
    harness = run_episode(full_hub(), task, OracleAgent(), surface="gateway")
    # Both rollouts made the same writes: in a shared world the second's would be damage (a score under 1).
    for trace in episode["traces"]:
        assert trace["tools"] == GATEWAY_SCHEMAS  # listed by the world's own MCP endpoint: the direct path
        assert trace["result"]["score"] == harness.score == 1.0 and trace["metrics"]["net_score"] == harness.net_score
        assert trace["rewards"] == {"cfrr": 1.5}  # every criterion passed: 1 plus the completion bonus β
    stored = [e for e in RunStore(store).episodes("verifiers") if e["agent"] == "verifiers:oracle"]
    assert sorted(e["rollout"] for e in stored) == [0, 1]
    assert {e["id"] for e in stored} == {t["result"]["episode_id"] for t in episode["traces"]}
    criteria = {(c["episode_id"], c["criterion_id"]): bool(c["passed"]) for c in RunStore(store).criteria("verifiers")}
    for entry in stored:
        assert entry["score"] == harness.score and entry["net_score"] == harness.net_score
        assert [criteria[(entry["id"], c.id)] for c in harness.criteria] == [c.passed for c in harness.criteria]
        calls = [s for s in RunStore(store).steps("verifiers") if s["episode_id"] == entry["id"]]
        assert [s["tool"] for s in calls] == [s.tool for s in task.plan]


def test_a_partial_rollout_through_the_shared_toolset_is_rewarded_its_in_process_score(
    verifiers_python: Path, rollout_server: tuple[str, Path], tasks: list[Task], tmp_path: Path
) -> None:
    server, store = rollout_server
    task = tasks[1]
    steps = len(task.plan) - 1  # the last write left out, and no report: a partial score
    model = OracleModel(tasks, steps=steps)
    try:
        episode = _run(verifiers_python, server, model, task, tmp_path, "--via-toolset", "--model", "partial")
    finally:
        model.close()
    assert episode["ok"], episode
    world = full_hub().open_world(services=task.mounted, seed=task.seed)
    try:
        env = InProcessEnv(world, "gateway")
        results: list[Any] = []
        for step in task.plan[:steps]:
            results.append(
                env.call("call_tool", {"tool_name": step.tool, "arguments": resolve(step.arguments, results)})
            )
        expected = world.score(task.rubric, report={})
    finally:
        world.close()
    (trace,) = episode["traces"]
    # The toolset's own schemas (verifiers derives them from its methods), not the gateway's: it went that way.
    assert set(trace["tools"]) == GATEWAY_NAMES and trace["tools"]["call_tool"] != GATEWAY_SCHEMAS["call_tool"]
    assert trace["rewards"] == {"rubric": expected.net_score} and trace["result"]["score"] == expected.score < 1.0
    (stored,) = [e for e in RunStore(store).episodes("verifiers") if e["agent"] == "verifiers:partial"]
    assert stored["score"] == expected.score and stored["n_calls"] == steps
