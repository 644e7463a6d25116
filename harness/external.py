"""Evaluating an external MCP client (Claude Desktop, Claude Code, MCP Inspector, any client).

``serve`` opens one task's world and serves it over stdio or streamable HTTP; a person (or any
agent we do not drive) works the task through their own client. Every call is recorded into a
session directory *as it happens*, so the session survives the server being killed:

- ``task.json``: the task, on one line (it doubles as a one-task tasks file for ``--tasks``);
- ``session.json``: surface, transport, world model flag and start time;
- ``calls.jsonl``: one :class:`~harness.trajectory.ToolCall` per call the client made (gateway
  meta-calls included), appended and flushed after each call;
- ``world.json``: the world snapshot, replaced atomically after every call that changed state.

``score`` rebuilds the final world from ``world.json`` over the task's seeded start, scores it
against the rubric and stores the episode (``path="external"``) in a run store.

    python -m harness.external serve --tasks tasks.jsonl --task t5-00000 --session runs/s1
    python -m harness.external score --session runs/s1 --store runs/store.db --report '{"amount": 12}'
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext

from harness.agents import HOUSE_RULES
from harness.store import RunStore
from harness.trajectory import Surface, ToolCall, Trajectory
from hub.core import Hub
from hub.http import HubHTTP
from hub.middleware import Recorder
from hub.surfaces import (
    DIRECT_INSTRUCTIONS,
    GATEWAY_INSTRUCTIONS,
    GATEWAY_NAMES,
    surface_call,
    surface_tools,
)
from hub.world import World
from servers.framework import Envelope
from servers.serving import LIST_TTL_MS, build_server, envelope_result, serve_stdio
from taskgen.generate import default_hub
from taskgen.task import Task, read_jsonl

Transport = Literal["stdio", "http"]

TASK_FILE = "task.json"
META_FILE = "session.json"
CALLS_FILE = "calls.jsonl"
WORLD_FILE = "world.json"


def episode_instructions(surface: str) -> str:
    """What an evaluated client is told by the server: how the surface works, and the house rules
    its rubric holds it to (the MCP server instructions are its system prompt)."""
    return (GATEWAY_INSTRUCTIONS if surface == "gateway" else DIRECT_INSTRUCTIONS) + " " + HOUSE_RULES


def load_task(tasks_file: Path, task_id: str) -> Task:
    """The task ``task_id`` of a JSONL tasks file."""
    seen: list[str] = []
    for task in read_jsonl(tasks_file):
        if task.id == task_id:
            return task
        seen.append(task.id)
    shown = ", ".join(seen[:10]) + (", …" if len(seen) > 10 else "")
    raise KeyError(f"no task {task_id!r} in {str(tasks_file)!r} (it has {len(seen)}: {shown})")


def read_calls(path: Path) -> list[ToolCall]:
    """The recorded calls; a last line cut short by a kill mid-write is dropped."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    calls: list[ToolCall] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            calls.append(ToolCall.model_validate_json(line))
        except ValueError:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a recorded call") from None
    return calls


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class Session:
    """One external client's session: a recording wrapper around the world's surface call."""

    def __init__(self, task: Task, world: World, surface: Surface, session_dir: Path, first_index: int = 0) -> None:
        self.task = task
        self.world = world
        self.surface = surface
        self.dir = session_dir
        self.recorder = Recorder()
        world.use(self.recorder)
        self._call = surface_call(world, surface)
        self._next = first_index
        self._lock = threading.Lock()
        self._calls = open(session_dir / CALLS_FILE, "a", encoding="utf-8")  # noqa: SIM115 - lives with the session

    def save_world(self) -> None:
        _write_atomic(self.dir / WORLD_FILE, json.dumps(self.world.snapshot(), ensure_ascii=False))

    def call(self, name: str, arguments: dict[str, Any]) -> Envelope:
        """Call ``name`` on the surface and record it before the client sees the answer."""
        with self._lock:
            seen = len(self.recorder.records)
            started = time.perf_counter()
            envelope = self._call(name, arguments)
            latency = (time.perf_counter() - started) * 1000
            inner = self.recorder.records[seen] if len(self.recorder.records) > seen else None
            entry = self.world.hub.registry.tools.get(inner.tool) if inner else None
            meta = self.surface == "gateway" and name in GATEWAY_NAMES
            record = ToolCall(
                index=self._next,
                name=name,
                service=entry.service if entry else None,
                tool=entry.qualified if entry else None,
                kind=entry.kind if entry else ("meta" if meta else None),
                arguments=arguments,
                envelope=envelope,
                latency_ms=round(latency, 4),
                diff=inner.diff if inner else None,
            )
            self._next += 1
            # The world goes first: a kill between the two leaves the effect scored, never a
            # recorded call whose effect is missing.
            if record.diff:
                self.save_world()
            self._calls.write(record.model_dump_json() + "\n")
            self._calls.flush()
            return envelope

    def close(self) -> None:
        self._calls.close()
        self.world.close()


def open_session(
    task: Task,
    session_dir: Path,
    surface: Surface = "direct",
    transport: Transport = "stdio",
    worldmodel: bool = True,
    resume: bool = False,
    hub: Hub | None = None,
) -> Session:
    """Open the task's world and its session directory (continuing a recorded one with ``resume``)."""
    session_dir.mkdir(parents=True, exist_ok=True)
    previous = read_calls(session_dir / CALLS_FILE)
    started = time.time()
    snapshot = None
    if resume and (session_dir / WORLD_FILE).exists():
        recorded = Task.model_validate_json((session_dir / TASK_FILE).read_text(encoding="utf-8"))
        if recorded.id != task.id:
            raise ValueError(f"session {str(session_dir)!r} records task {recorded.id!r}, not {task.id!r}")
        meta = json.loads((session_dir / META_FILE).read_text(encoding="utf-8"))
        if meta.get("surface", surface) != surface:
            raise ValueError(f"session {str(session_dir)!r} was recorded on the {meta['surface']!r} surface")
        started = meta.get("started_at", started)
        snapshot = json.loads((session_dir / WORLD_FILE).read_text(encoding="utf-8"))
    elif previous:
        raise FileExistsError(
            f"session {str(session_dir)!r} already records {len(previous)} call(s); "
            "pass resume to continue it, or use a new session directory"
        )
    hub = hub or default_hub(worldmodel=worldmodel)
    world = hub.open_world(services=task.mounted, seed=task.seed, world_id=task.id)
    if snapshot is not None:
        world.restore(snapshot)
    # Rewriting the calls drops a line a kill cut short, so appended lines stay whole.
    _write_atomic(session_dir / CALLS_FILE, "".join(c.model_dump_json() + "\n" for c in previous))
    _write_atomic(session_dir / TASK_FILE, task.model_dump_json() + "\n")
    meta = {
        "task_id": task.id,
        "surface": surface,
        "transport": transport,
        "worldmodel": worldmodel,
        "world_id": world.id,
        "started_at": started,
    }
    _write_atomic(session_dir / META_FILE, json.dumps(meta, indent=2) + "\n")
    session = Session(task, world, surface, session_dir, first_index=len(previous))
    session.save_world()
    return session


class RecordingHubHTTP(HubHTTP):
    """The hub's HTTP front whose agent calls to the session's world go through the session."""

    def __init__(self, hub: Hub, session: Session, admin_token: str | None = None, host: str = "127.0.0.1") -> None:
        self.session = session  # set first: the parent's __init__ builds the MCP server
        super().__init__(hub, admin_token, host)

    def _mcp_server(self) -> Server[Any]:
        async def on_list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            access = self._world_of(ctx)
            return types.ListToolsResult(tools=surface_tools(access.world, access.surface))

        async def on_call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            access = self._world_of(ctx)
            recorded = access.world is self.session.world and access.surface == self.session.surface
            call = self.session.call if recorded else surface_call(access.world, access.surface)
            return envelope_result(call(params.name, dict(params.arguments or {})))

        return Server(
            "compoworld-hub",
            version="1",
            instructions=episode_instructions(self.session.surface),
            cache_hints={"tools/list": CacheHint(ttl_ms=LIST_TTL_MS, scope="private")},
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )


def _compoworld_command() -> str:
    """The ``compoworld`` executable beside this Python (clients do not inherit our venv)."""
    beside = Path(sys.executable).parent / "compoworld"
    return str(beside) if beside.exists() else shutil.which("compoworld") or "compoworld"


def client_config(
    task: Task,
    session_dir: Path,
    surface: Surface = "direct",
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8780,
    token: str | None = None,
    tasks_file: Path | None = None,
) -> str:
    """What to tell the person at the client: the instruction and how to connect their client."""
    name = f"compoworld-{task.id}"
    lines = [f"Task {task.id} ({surface} surface). Give your client this instruction:", "", task.instruction, ""]
    if transport == "stdio":
        tasks = (tasks_file or session_dir / TASK_FILE).resolve()
        args = ["eval", "serve", "--tasks", str(tasks), "--task", task.id, "--session", str(session_dir.resolve())]
        args += ["--surface", surface, "--resume"]
        command = _compoworld_command()
        snippet: dict[str, Any] = {"mcpServers": {name: {"command": command, "args": args}}}
        lines += [
            "Claude Desktop (claude_desktop_config.json):",
            json.dumps(snippet, indent=2),
            "",
            "Claude Code:",
            f"  claude mcp add {name} -- {shlex.join([command, *args])}",
        ]
    else:
        url = f"http://{host}:{port}/worlds/{task.id}/mcp"
        auth = f"Bearer {token}"
        snippet = {"mcpServers": {name: {"type": "http", "url": url, "headers": {"Authorization": auth}}}}
        lines += [
            f"MCP endpoint: {url}",
            f"Authorization: {auth}",
            "",
            "Claude Code:",
            f'  claude mcp add --transport http {name} {url} --header "Authorization: {auth}"',
            "",
            "Clients that read an mcpServers file (.mcp.json):",
            json.dumps(snippet, indent=2),
        ]
    lines += ["", f"Every call is recorded in {session_dir}; score it with `compoworld eval score`."]
    if task.expected_report:
        fields = ", ".join(repr(f) for f in task.expected_report)
        lines.append(f"The task asks for a report ({fields}): pass the client's answer to score as --report JSON.")
    return "\n".join(lines)


def serve(
    task: Task,
    session_dir: Path,
    surface: Surface = "direct",
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8780,
    token: str | None = None,
    worldmodel: bool = True,
    resume: bool = False,
    tasks_file: Path | None = None,
) -> None:
    """Serve the task's world to an external client, recording the session into ``session_dir``."""
    session = open_session(task, session_dir, surface, transport, worldmodel, resume)
    world = session.world
    try:
        if transport == "stdio":
            print(client_config(task, session_dir, surface, "stdio", tasks_file=tasks_file), file=sys.stderr)
            instructions = episode_instructions(surface)
            tools = surface_tools(world, surface)
            serve_stdio(build_server(f"compoworld-{task.id}", "1", tools, session.call, instructions, LIST_TTL_MS))
            return
        import uvicorn

        front = RecordingHubHTTP(world.hub, session, host=host)
        access = front.add_world(world, surface, token or secrets.token_urlsafe(24))
        print(client_config(task, session_dir, surface, "http", host, port, access.token), file=sys.stderr)
        uvicorn.run(front.app(), host=host, port=port, log_level="warning")
    finally:
        session.close()


def score(
    session_dir: Path,
    store: RunStore,
    run: str = "external",
    agent: str = "external",
    report: dict[str, Any] | None = None,
    rollout: int = 0,
) -> Trajectory:
    """Score a recorded session against its task's rubric and store it as an episode."""
    task = Task.model_validate_json((session_dir / TASK_FILE).read_text(encoding="utf-8"))
    meta = json.loads((session_dir / META_FILE).read_text(encoding="utf-8"))
    snapshot = json.loads((session_dir / WORLD_FILE).read_text(encoding="utf-8"))
    calls = read_calls(session_dir / CALLS_FILE)
    hub = default_hub(worldmodel=bool(meta.get("worldmodel", True)))
    # Seeded start + restored end: the rubric compares against the task's initial world.
    world = hub.open_world(services=task.mounted, seed=task.seed)
    try:
        world.restore(snapshot)
        scored = world.score(task.rubric, report=report or {})
        final_hash = world.hash()
    finally:
        world.close()
    started = float(meta.get("started_at", 0.0))
    ended = max((session_dir / name).stat().st_mtime for name in (CALLS_FILE, WORLD_FILE))
    trajectory = Trajectory(
        task_id=task.id,
        agent=agent,
        surface=meta.get("surface", "direct"),
        path="external",
        rollout=rollout,
        messages=[{"role": "user", "content": task.instruction}],
        tool_calls=calls,
        report=report or {},
        final_hash=final_hash,
        criteria=scored.criteria,
        score=scored.score,
        net_score=scored.net_score,
        success=scored.success,
        finish_reason="completed" if calls else "no_action",
        started_at=started,
        duration_s=round(max(0.0, ended - started), 4),
        services=task.services,
    )
    store.start_run(run, {"path": "external"}, [task])
    store.add(run, trajectory, task)
    return trajectory


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.external", description=(__doc__ or "").split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    srv = commands.add_parser("serve", help="Serve one task's world to an external MCP client, recording it.")
    srv.add_argument("--tasks", type=Path, required=True, help="JSONL tasks file.")
    srv.add_argument("--task", required=True, help="Task id.")
    srv.add_argument("--session", type=Path, required=True, help="Session directory to record into.")
    srv.add_argument("--surface", choices=["direct", "gateway"], default="direct")
    srv.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8780)
    srv.add_argument("--token", default=None, help="Bearer token for HTTP (default: random).")
    srv.add_argument("--no-worldmodel", action="store_true", help="Do not mount the simulated services.")
    srv.add_argument("--resume", action="store_true", help="Continue the session recorded in --session.")
    sc = commands.add_parser("score", help="Score a recorded session and store it as an episode.")
    sc.add_argument("--session", type=Path, required=True)
    sc.add_argument("--store", type=Path, required=True, help="SQLite run store.")
    sc.add_argument("--run", default="external")
    sc.add_argument("--agent", default="external")
    sc.add_argument("--report", default=None, help="The client's answer as a JSON object.")
    sc.add_argument("--rollout", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "serve":
        task = load_task(args.tasks, args.task)
        serve(
            task,
            args.session,
            args.surface,
            args.transport,
            args.host,
            args.port,
            args.token,
            worldmodel=not args.no_worldmodel,
            resume=args.resume,
            tasks_file=args.tasks,
        )
        return
    report = json.loads(args.report) if args.report else None
    if report is not None and not isinstance(report, dict):
        parser.error("--report must be a JSON object")
    trajectory = score(args.session, RunStore(args.store), args.run, args.agent, report, args.rollout)
    summary = {"task_id": trajectory.task_id, "score": trajectory.score, "net_score": trajectory.net_score}
    print(json.dumps({**summary, "success": trajectory.success, "calls": len(trajectory.tool_calls)}))


if __name__ == "__main__":
    main()
