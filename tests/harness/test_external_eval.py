"""External-client evaluation: real server subprocesses, the official MCP client, then scoring."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from harness.external import Session, load_task, open_session, read_calls, score
from harness.store import RunStore
from taskgen.generate import generate
from taskgen.task import Task, read_jsonl, resolve, write_jsonl
from tests.conftest import free_port, full_hub, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "external-secret"


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    assert write_jsonl(generate(2, seed=5, hub=full_hub()).tasks, path) == 2
    return path


@pytest.fixture(scope="module")
def tasks(tasks_file: Path) -> list[Task]:
    return list(read_jsonl(tasks_file))


def _serve_args(tasks_file: Path, task: Task, session: Path, *extra: str) -> list[str]:
    base = ["-m", "harness.external", "serve", "--tasks", str(tasks_file), "--task", task.id]
    return [*base, "--session", str(session), *extra]


async def _replay(client: Client, task: Task, surface: str, steps: range, results: list[Any]) -> None:
    """Call the oracle plan's ``steps``, resolving ``$ref`` arguments over earlier envelopes."""
    for i in steps:
        step = task.plan[i]
        args = resolve(step.arguments, results)
        if surface == "gateway":
            result = await client.call_tool("call_tool", {"tool_name": step.tool, "arguments": args})
        else:
            result = await client.call_tool(step.tool, args)
        envelope = result.structured_content
        assert isinstance(envelope, dict) and envelope["success"] is True, (step.tool, envelope)
        results.append(envelope)


def _stdio(tasks_file: Path, task: Task, session: Path, surface: str) -> StdioServerParameters:
    args = _serve_args(tasks_file, task, session, "--surface", surface)
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))


@pytest.fixture
def http_server(tasks_file: Path) -> Iterator[Any]:
    """Starts ``serve --transport http`` subprocesses; yields a starter returning (process, url)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(task: Task, session: Path, surface: str, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
        port = free_port()
        args = _serve_args(tasks_file, task, session, "--surface", surface, "--transport", "http")
        args += ["--port", str(port), "--token", TOKEN, *extra]
        proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        wait_for_port(port, proc)
        return proc, f"http://127.0.0.1:{port}/worlds/{task.id}/mcp"

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _http_client(url: str) -> Client:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    return Client(streamable_http_client(url, http_client=http))


def test_stdio_client_replaying_the_oracle_scores_one(tasks_file: Path, tasks: list[Task], tmp_path: Path) -> None:
    task, session = tasks[0], tmp_path / "session"

    async def main() -> None:
        async with Client(_stdio(tasks_file, task, session, "direct")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {s.tool for s in task.plan} <= names
            await _replay(client, task, "direct", range(len(task.plan)), [])

    anyio.run(main)
    store = RunStore(tmp_path / "store.db")
    trajectory = score(session, store, report=task.expected_report)
    assert trajectory.score == 1.0 and trajectory.success
    assert trajectory.path == "external" and trajectory.surface == "direct"
    assert trajectory.messages == [{"role": "user", "content": task.instruction}]
    assert [c.tool for c in trajectory.tool_calls] == [s.tool for s in task.plan]
    assert any(c.kind == "write" and c.diff for c in trajectory.tool_calls)
    [row] = store.episodes("external")
    assert row["task_id"] == task.id and row["score"] == 1.0 and row["path"] == "external"
    assert task.id in store.tasks("external")


def test_stdio_client_that_calls_nothing_scores_zero(tasks_file: Path, tasks: list[Task], tmp_path: Path) -> None:
    task, session = tasks[1], tmp_path / "session"

    async def main() -> None:
        async with Client(_stdio(tasks_file, task, session, "gateway")) as client:
            assert len((await client.list_tools()).tools) == 4

    anyio.run(main)
    trajectory = score(session, RunStore(tmp_path / "store.db"))
    assert trajectory.score == 0.0 and trajectory.tool_calls == []
    assert trajectory.finish_reason == "no_action" and trajectory.surface == "gateway"


def test_http_gateway_session_survives_killing_the_server(http_server: Any, tasks: list[Task], tmp_path: Path) -> None:
    task, session = tasks[1], tmp_path / "session"
    proc, url = http_server(task, session, "gateway")

    async def main() -> None:
        async with _http_client(url) as client:
            listed = await client.call_tool("list_services", {})
            assert listed.structured_content and listed.structured_content["success"] is True
            await _replay(client, task, "gateway", range(len(task.plan)), [])

    anyio.run(main)
    proc.kill()  # SIGKILL: nothing runs at shutdown, so only what was written per call counts
    proc.wait(timeout=10)
    trajectory = score(session, RunStore(tmp_path / "store.db"), report=task.expected_report)
    assert trajectory.score == 1.0 and trajectory.surface == "gateway"
    calls = trajectory.tool_calls
    assert calls[0].name == "list_services" and calls[0].kind == "meta"
    assert [c.tool for c in calls[1:]] == [s.tool for s in task.plan]
    assert all(c.name == "call_tool" for c in calls[1:])


def test_resumed_http_session_continues_after_a_kill(http_server: Any, tasks: list[Task], tmp_path: Path) -> None:
    task, session = tasks[0], tmp_path / "session"
    results: list[Any] = []
    half = len(task.plan) // 2
    for steps, extra in ((range(half), ()), (range(half, len(task.plan)), ("--resume",))):
        proc, url = http_server(task, session, "direct", *extra)

        async def main(steps: range = steps, url: str = url) -> None:
            async with _http_client(url) as client:
                await _replay(client, task, "direct", steps, results)

        anyio.run(main)
        proc.kill()
        proc.wait(timeout=10)
    assert [c.index for c in read_calls(session / "calls.jsonl")] == list(range(len(task.plan)))
    trajectory = score(session, RunStore(tmp_path / "store.db"), report=task.expected_report)
    assert trajectory.score == 1.0


def test_a_recorded_session_is_not_overwritten_without_resume(
    tasks_file: Path, tasks: list[Task], tmp_path: Path
) -> None:
    task = load_task(tasks_file, tasks[0].id)
    hub = full_hub()
    session: Session = open_session(task, tmp_path, hub=hub)
    session.call(task.plan[0].tool, task.plan[0].arguments)
    session.close()
    with (tmp_path / "calls.jsonl").open("a") as handle:
        handle.write('{"index": 1, "na')  # a line cut short by a kill mid-write
    with pytest.raises(FileExistsError):
        open_session(task, tmp_path, hub=hub)
    resumed = open_session(task, tmp_path, hub=hub, resume=True)
    resumed.close()
    assert len(read_calls(tmp_path / "calls.jsonl")) == 1
    with pytest.raises(KeyError, match="no task 'nope'"):
        load_task(tasks_file, "nope")
