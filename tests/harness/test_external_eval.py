"""External-client evaluation: real server subprocesses, the official MCP client, then scoring."""

from __future__ import annotations

import json
import os
import shlex
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

from harness.external import open_session, score
from harness.session_store import STORE_ENV, SessionError, find_task, load_task, read_calls, session_store
from harness.store import RunStore
from taskgen.generate import generate
from taskgen.task import Task, read_jsonl, resolve, write_jsonl
from tests.conftest import free_port, full_hub, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "external-secret"
COMPOWORLD = Path(sys.executable).parent / "compoworld"


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    assert write_jsonl(generate(2, seed=5, hub=full_hub()).tasks, path) == 2
    return path


@pytest.fixture(scope="module")
def tasks(tasks_file: Path) -> list[Task]:
    return list(read_jsonl(tasks_file))


@pytest.fixture(autouse=True)
def session_store_root(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's session stores live in its own folder, never in the user's cache."""
    root = tmp_path_factory.mktemp("session-store")
    monkeypatch.setenv(STORE_ENV, str(root))
    return root


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
    # Clients start stdio servers with a minimal environment: the store is passed on explicitly.
    return StdioServerParameters(
        command=sys.executable, args=args, cwd=str(ROOT), env={STORE_ENV: os.environ[STORE_ENV]}
    )


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


def test_a_killed_http_server_restarted_as_before_continues(
    http_server: Any, tasks: list[Task], tmp_path: Path
) -> None:
    task, session = tasks[0], tmp_path / "session"
    results: list[Any] = []
    half = len(task.plan) // 2
    for steps in (range(half), range(half, len(task.plan))):
        proc, url = http_server(task, session, "direct")  # the same command twice: resuming is the default

        async def main(steps: range = steps, url: str = url) -> None:
            async with _http_client(url) as client:
                await _replay(client, task, "direct", steps, results)

        anyio.run(main)
        proc.kill()
        proc.wait(timeout=10)
    assert [c.index for c in read_calls(session_store(session) / "calls.jsonl")] == list(range(len(task.plan)))
    trajectory = score(session, RunStore(tmp_path / "store.db"), report=task.expected_report)
    assert trajectory.score == 1.0


def _printed_configs(text: str) -> list[StdioServerParameters]:
    """The two stdio configs `eval serve --print-config` prints, exactly as a client would run them:
    the Claude Desktop JSON and the `claude mcp add NAME [--env K=V …] -- COMMAND ARGS…` line."""
    desktop_at = text.index("{", text.index("claude_desktop_config.json"))
    desktop, _ = json.JSONDecoder().raw_decode(text, desktop_at)
    [(name, server)] = desktop["mcpServers"].items()
    [line] = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("claude mcp add ")]
    words = shlex.split(line)
    cut = words.index("--")
    options, command = words[3:cut], words[cut + 1 :]
    assert options[0] == name and options[1::2] == ["--env"] * (len(options) // 2)
    env = dict(pair.split("=", 1) for pair in options[2::2])
    return [
        StdioServerParameters(command=server["command"], args=server["args"], env=server.get("env")),
        StdioServerParameters(command=command[0], args=command[1:], env=env or None),
    ]


def test_printed_stdio_configs_run_as_printed_and_a_restart_continues(
    tasks_file: Path, tasks: list[Task], tmp_path: Path
) -> None:
    """What `claude mcp add` (or Claude Desktop) runs is the printed command, started from anywhere;
    Claude starts a new server every session, and the second one continues the first's session."""
    task, session, elsewhere = tasks[0], tmp_path / "work" / "runs" / "sessions" / tasks[0].id, tmp_path / "cwd"
    elsewhere.mkdir()
    command = [str(COMPOWORLD), "eval", "serve", "--task", task.id, "--tasks", str(tasks_file)]
    command += ["--session", str(session), "--surface", "direct", "--print-config"]
    printed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True).stdout
    desktop, claude_code = _printed_configs(printed)
    assert desktop.command == claude_code.command == str(COMPOWORLD) and desktop.args == claude_code.args
    assert str(tasks_file) not in printed  # the client's config names no file holding the answer key
    first_write = next(i for i, s in enumerate(task.plan) if full_hub().registry.tools[s.tool].kind == "write")
    results: list[Any] = []
    worlds: list[Any] = []
    world_file = session_store(session) / "world.json"

    async def run(config: StdioServerParameters, steps: range) -> None:
        async with Client(config.model_copy(update={"cwd": str(elsewhere)})) as client:
            assert {s.tool for s in task.plan} <= {t.name for t in (await client.list_tools()).tools}
            worlds.append(json.loads(world_file.read_text()))  # the world as the server opened it
            await _replay(client, task, "direct", steps, results)

    anyio.run(run, desktop, range(first_write + 1))
    after_first = json.loads(world_file.read_text())
    anyio.run(run, claude_code, range(first_write + 1, len(task.plan)))
    assert worlds[1] == after_first != worlds[0]  # the restarted world holds the first server's writes
    recorded = read_calls(session_store(session) / "calls.jsonl")
    assert [(c.index, c.tool) for c in recorded] == list(enumerate(s.tool for s in task.plan))
    assert recorded[first_write].diff
    seen = [json.loads(line) for line in (session / "calls.jsonl").read_text().splitlines()]
    assert [(c["index"], c["name"]) for c in seen] == list(enumerate(s.tool for s in task.plan))
    trajectory = score(session, RunStore(tmp_path / "store.db"), report=task.expected_report)
    assert trajectory.score == 1.0 and len(trajectory.tool_calls) == len(task.plan)


def _answer_key(task: Task) -> list[str]:
    """Strings that would give the rubric, the plan, the expected report or carried values away."""

    def distinctive(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in distinctive(v)]
        if isinstance(value, list):
            return [s for v in value for s in distinctive(v)]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return []
        text = value if isinstance(value, str) else json.dumps(value)
        return [text] if len(text) >= 5 and text not in task.instruction else []

    rubric = task.rubric.model_dump(mode="json")
    plan = [step.model_dump(mode="json") for step in task.plan]
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    needles = [json.dumps(rubric, **compact), *(json.dumps(step, **compact) for step in plan)]  # type: ignore[arg-type]
    needles += [c["description"] for c in rubric["criteria"]]
    needles += distinctive([c.get("match") for c in rubric["criteria"]])
    needles += distinctive([step["arguments"] for step in plan])
    needles += distinctive(task.expected_report) + distinctive(task.meta.get("carried_values", []))
    return needles


def _leaks(files: list[Path], needles: list[str]) -> list[tuple[str, str]]:
    texts = {str(p): p.read_text(encoding="utf-8") for p in files}
    return [(path, n) for path, text in texts.items() for n in needles if n in text or json.dumps(n) in text]


def test_the_session_directory_holds_nothing_of_the_answer_key(tasks: list[Task], tmp_path: Path) -> None:
    report = {"total_owed": 98765.43, "reference": "REF-7731-QX"}
    task = tasks[1].model_copy(update={"expected_report": report})
    needles = _answer_key(task)
    assert "98765.43" in needles and "REF-7731-QX" in needles and len(needles) > 10
    session, hub = tmp_path / "session", full_hub()
    for fresh in (False, False, True):  # first start, a restart, a fresh start
        opened = open_session(task, session, "gateway", hub=hub, fresh=fresh)
        listed = opened.call("list_services", {})
        assert listed["success"] is True
        assert opened.call("call_tool", {"tool_name": "nope__nothing", "arguments": {}})["success"] is False
        opened.close()
        assert _leaks([p for p in session.rglob("*") if p.is_file()], needles) == []
        assert sorted(p.name for p in session.iterdir()) == ["calls.jsonl", "session.json"]
        view = json.loads((session / "session.json").read_text())
        assert view["instruction"] == task.instruction and view["surface"] == "gateway"
        seen = [json.loads(line) for line in (session / "calls.jsonl").read_text().splitlines()]
        assert seen[-2]["envelope"] == listed and seen[-2]["name"] == "list_services"
    store = session_store(session)
    assert not store.is_relative_to(session) and _leaks([store / "task.json"], needles)  # the key lives there
    assert Task.model_validate_json((store / "task.json").read_text()) == task
    assert len(score(session, RunStore(tmp_path / "runs.db")).tool_calls) == 2  # only the fresh start's calls


def test_a_session_in_the_old_layout_moves_its_answer_key_out(tasks: list[Task], tmp_path: Path) -> None:
    task, session, hub = tasks[0], tmp_path / "session", full_hub()
    opened = open_session(task, session, hub=hub)
    opened.call(task.plan[0].tool, task.plan[0].arguments)
    opened.close()
    store = session_store(session)
    for name in ("task.json", "session.json", "calls.jsonl", "world.json"):  # as older versions wrote it
        (session / name).write_bytes((store / name).read_bytes())
        (store / name).unlink()
    assert find_task(task.id, session) == task  # found in the session directory, then moved to the store
    assert not (session / "task.json").exists() and (store / "task.json").exists()
    assert len(score(session, RunStore(tmp_path / "runs.db")).tool_calls) == 1
    resumed = open_session(task, session, hub=hub)
    resumed.close()
    assert sorted(p.name for p in session.iterdir()) == ["calls.jsonl", "session.json"]
    [seen] = [json.loads(line) for line in (session / "calls.jsonl").read_text().splitlines()]
    assert sorted(seen) == ["arguments", "envelope", "index", "name"]


def test_a_recorded_session_continues_unless_fresh_which_archives_it(
    tasks_file: Path, tasks: list[Task], tmp_path: Path
) -> None:
    task, hub = load_task(tasks_file, tasks[0].id), full_hub()
    first = open_session(task, tmp_path / "s", hub=hub)
    seeded = first.world.hash()
    first.call(task.plan[0].tool, task.plan[0].arguments)
    with pytest.raises(SessionError, match="being served by another process"):
        open_session(task, tmp_path / "s", hub=hub)
    first.close()
    store = session_store(tmp_path / "s")
    with (store / "calls.jsonl").open("a") as handle:
        handle.write('{"index": 1, "na')  # a line cut short by a kill mid-write
    resumed = open_session(task, tmp_path / "s", hub=hub)
    assert resumed.call(task.plan[0].tool, task.plan[0].arguments)["success"] is True
    resumed.close()
    assert [c.index for c in read_calls(store / "calls.jsonl")] == [0, 1]
    with pytest.raises(SessionError, match=r"records task .* not .*; pass --fresh"):
        open_session(tasks[1], tmp_path / "s", hub=hub)
    with pytest.raises(SessionError, match="'direct' surface, not 'gateway'; pass --fresh"):
        open_session(task, tmp_path / "s", "gateway", hub=hub)
    restarted = open_session(tasks[1], tmp_path / "s", hub=hub, fresh=True)
    restarted.close()
    again = open_session(task, tmp_path / "s", hub=hub, fresh=True)
    assert again.world.hash() == seeded and read_calls(store / "calls.jsonl") == []
    again.close()
    archived = sorted((store / "archive").iterdir())
    assert len(archived) == 2 and len(read_calls(archived[0] / "calls.jsonl")) == 2
    assert Task.model_validate_json((archived[1] / "task.json").read_text()).id == tasks[1].id
    assert len((archived[0] / "agent-view" / "calls.jsonl").read_text().splitlines()) == 2
    assert (tmp_path / "s" / "calls.jsonl").read_text() == ""


@pytest.mark.parametrize("case", ["unknown task", "missing tasks file", "unknown session"])
def test_cli_mistakes_get_one_line(case: str, tasks_file: Path, tmp_path: Path) -> None:
    session = ["--session", str(tmp_path / "s")]
    args = {
        "unknown task": ["eval", "serve", "--task", "nope", "--tasks", str(tasks_file), *session],
        "missing tasks file": ["eval", "serve", "--task", "t5-00000", "--tasks", str(tmp_path / "no.jsonl"), *session],
        "unknown session": ["eval", "score", *session, "--store", str(tmp_path / "runs.db")],
    }[case]
    done = subprocess.run([str(COMPOWORLD), *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "Traceback" not in done.stderr
    assert {"unknown task": "no task 'nope'", "missing tasks file": "no tasks file", "unknown session": "no recorded"}[
        case
    ] in line
