"""Evaluating an external MCP client (Claude Desktop, Claude Code, MCP Inspector, any client).

``serve`` opens one task's world and serves it over stdio or streamable HTTP; a person (or an agent
we do not drive) works the task through their own client. Every call is recorded as it happens, so
a killed server loses nothing and a restarted one continues the session (``fresh`` archives it and
starts over). The evaluated agent runs where the session directory is, so it gets only what the
agent may see — ``session.json`` (task and world id, surface, transport, start, instruction) and
``calls.jsonl`` (name, arguments, envelope per call). The answer key lives in the **session store**
(``$COMPOWORLD_SESSION_STORE``, else ``$XDG_CACHE_HOME`` or ``~/.cache`` + ``/compoworld/sessions``),
one folder per session path: ``task.json``, ``session.json`` (all settings), ``calls.jsonl`` (each
:class:`~harness.trajectory.ToolCall` with its diff, flushed per call), ``world.json`` (replaced
atomically after each change), a ``lock`` held while serving, and ``archive/<time>/``. ``score``
restores the final world over the task's seeded start, scores it and stores the episode.

    python -m harness.external serve --tasks tasks.jsonl --task t5-00000 --session runs/s1
    python -m harness.external score --session runs/s1 --store runs/store.db --report '{"amount": 12}'
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Literal, cast

from harness.agents import HOUSE_RULES
from harness.config import RunConfig
from harness.env import InProcessEnv
from harness.session_store import (
    CALLS_FILE,
    META_FILE,
    STORE_ENV,
    TASK_FILE,
    WORLD_FILE,
    SessionError,
    StoreLock,
    agent_view,
    find_task,
    migrate_legacy,
    open_store,
    prepare_store,
    read_calls,
    session_store,
    store_root,
    write_atomic,
)
from harness.store import RunStore
from harness.trajectory import Surface, Trajectory
from hub.core import Hub
from hub.http import HubHTTP, WorldAccess
from hub.middleware import Recorder
from hub.surfaces import DIRECT_INSTRUCTIONS, GATEWAY_INSTRUCTIONS, surface_tools
from hub.world import World
from servers.framework import Envelope
from servers.serving import LIST_TTL_MS, CallFn, build_server, serve_stdio
from taskgen.generate import default_hub
from taskgen.task import Task

Transport = Literal["stdio", "http"]


def episode_instructions(surface: str) -> str:
    """What an evaluated client is told by the server: how the surface works, and the house rules
    its rubric holds it to (the MCP server instructions are its system prompt)."""
    return (GATEWAY_INSTRUCTIONS if surface == "gateway" else DIRECT_INSTRUCTIONS) + " " + HOUSE_RULES


class Session:
    """One external client's session: a recording wrapper around the world's surface call."""

    def __init__(
        self,
        task: Task,
        world: World,
        surface: Surface,
        session_dir: Path,
        store: Path,
        meta: dict[str, Any],
        owner: StoreLock | None = None,
        first_index: int = 0,
    ) -> None:
        self.task = task
        self.world = world
        self.surface = surface
        self.dir = session_dir
        self.store = store
        self.meta = meta
        # Calls go through one environment, whose recorder numbers on from the recorded calls.
        self.env = InProcessEnv(world, surface, Recorder(first_index=first_index))
        self._lock = threading.Lock()
        self._owner = owner
        self._calls = open(store / CALLS_FILE, "a", encoding="utf-8")  # noqa: SIM115 - lives with the session
        self._view = open(session_dir / CALLS_FILE, "a", encoding="utf-8")  # noqa: SIM115 - lives with the session

    def save_world(self) -> None:
        write_atomic(self.store / WORLD_FILE, json.dumps(self.world.snapshot(), ensure_ascii=False))

    def call(self, name: str, arguments: dict[str, Any]) -> Envelope:
        """Call ``name`` on the surface and record it before the client sees the answer."""
        with self._lock:
            record = self.env.record(name, arguments)
            # The world goes first: a kill between the writes leaves the effect scored, never a
            # recorded call whose effect is missing (and the agent's view is rebuilt on restart).
            if record.diff:
                self.save_world()
            self._calls.write(record.model_dump_json() + "\n")
            self._calls.flush()
            self._view.write(agent_view(record))
            self._view.flush()
            return cast(Envelope, record.envelope)

    def close(self) -> None:
        self._calls.close()
        self._view.close()
        self.world.close()
        if self._owner is not None:
            self._owner.release()


def open_session(
    task: Task,
    session_dir: Path,
    surface: Surface = "direct",
    transport: Transport = "stdio",
    worldmodel: bool = True,
    fresh: bool = False,
    hub: Hub | None = None,
    token: str | None = None,
) -> Session:
    """Open the task's world and its session. A recorded session continues: its world and calls are
    restored. ``fresh`` archives the recording and starts from the task's seeded world."""
    store, owner = open_store(session_dir)
    try:
        calls, snapshot, meta = prepare_store(task, session_dir, store, surface, transport, worldmodel, fresh, token)
        hub = hub or default_hub(worldmodel=worldmodel)
        world = hub.open_world(services=task.mounted, seed=task.seed, world_id=task.id)
        if snapshot is not None:
            world.restore(snapshot)
    except BaseException:
        owner.release()
        raise
    session = Session(task, world, surface, session_dir, store, meta, owner, first_index=len(calls))
    session.save_world()
    return session


def prepare_session(
    task: Task,
    session_dir: Path,
    surface: Surface = "direct",
    transport: Transport = "stdio",
    worldmodel: bool = True,
    fresh: bool = False,
    token: str | None = None,
) -> dict[str, Any]:
    """Record the task for ``session_dir`` as :func:`open_session` would, without opening the world
    (for printing a client's config before the client starts the server); returns the settings."""
    store, owner = open_store(session_dir)
    try:
        return prepare_store(task, session_dir, store, surface, transport, worldmodel, fresh, token)[2]
    finally:
        owner.release()


class RecordingHubHTTP(HubHTTP):
    """The hub's HTTP front whose agent calls to the session's world go through the session."""

    def __init__(self, hub: Hub, session: Session, admin_token: str | None = None, host: str = "127.0.0.1") -> None:
        self.session = session
        super().__init__(hub, admin_token, host, instructions=episode_instructions(session.surface))

    def call_function(self, access: WorldAccess) -> CallFn:
        recorded = access.world is self.session.world and access.surface == self.session.surface
        return self.session.call if recorded else super().call_function(access)


def _compoworld_command() -> str:
    """The ``compoworld`` executable beside this Python (clients do not inherit our venv)."""
    beside = Path(sys.executable).parent / "compoworld"
    return str(beside) if beside.exists() else shutil.which("compoworld") or "compoworld"


def _store_env() -> dict[str, str]:
    """The environment a client must give the server so that it finds this store: clients start stdio
    servers with a minimal environment (HOME, PATH), where only the default store is found."""
    root = store_root()
    return {} if root == (Path.home() / ".cache" / "compoworld" / "sessions").resolve() else {STORE_ENV: str(root)}


def client_config(
    task: Task,
    session_dir: Path,
    surface: Surface = "direct",
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8780,
    token: str | None = None,
    worldmodel: bool = True,
) -> str:
    """What to tell the person at the client: the instruction and how to connect their client. The
    stdio command names the session only: its task comes from the store, so the client's config
    holds no path to the answer key."""
    name = f"compoworld-{task.id}"
    lines = [f"Task {task.id} ({surface} surface). Give your client this instruction:", "", task.instruction, ""]
    if transport == "stdio":
        args = ["eval", "serve", "--task", task.id, "--session", str(session_dir.resolve()), "--surface", surface]
        args += [] if worldmodel else ["--no-worldmodel"]
        command = _compoworld_command()
        env = _store_env()
        server: dict[str, Any] = {"command": command, "args": args} | ({"env": env} if env else {})
        flags = [flag for key, value in env.items() for flag in ("--env", f"{key}={value}")]
        lines += [
            "Claude Desktop (claude_desktop_config.json):",
            json.dumps({"mcpServers": {name: server}}, indent=2),
            "",
            "Claude Code:",
            f"  claude mcp add {shlex.join([name, *flags, '--', command, *args])}",
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
    lines += [
        "",
        f"Calls are recorded as the agent saw them in {session_dir}, and with the task and the world in",
        f"{session_store(session_dir)} (outside the agent's folder). A restarted server continues the",
        "session; `--fresh` starts it over and archives the old recording.",
        f"Score it with: compoworld eval score --session {shlex.quote(str(session_dir))}",
    ]
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
    fresh: bool = False,
) -> None:
    """Serve the task's world to an external client, recording the session (see the module docstring);
    a recorded session continues unless ``fresh``. HTTP keeps the session's token across restarts."""
    session = open_session(task, session_dir, surface, transport, worldmodel, fresh, token=token)
    world = session.world
    try:
        if transport == "stdio":
            print(client_config(task, session_dir, surface, "stdio", worldmodel=worldmodel), file=sys.stderr)
            instructions = episode_instructions(surface)
            tools = surface_tools(world, surface)
            serve_stdio(build_server(f"compoworld-{task.id}", "1", tools, session.call, instructions, LIST_TTL_MS))
            return
        import uvicorn

        front = RecordingHubHTTP(world.hub, session, host=host)
        access = front.add_world(world, surface, session.meta["token"])
        print(client_config(task, session_dir, surface, "http", host, port, access.token, worldmodel), file=sys.stderr)
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
    kept = session_store(session_dir)
    migrate_legacy(session_dir, kept)
    if not (kept / TASK_FILE).exists():
        raise SessionError(
            f"no recorded session for {str(session_dir)!r} in the session store {str(store_root())!r} "
            f"(served with another ${STORE_ENV}?)"
        )
    task = Task.model_validate_json((kept / TASK_FILE).read_text(encoding="utf-8"))
    meta = json.loads((kept / META_FILE).read_text(encoding="utf-8"))
    world_file = kept / WORLD_FILE
    snapshot = json.loads(world_file.read_text(encoding="utf-8")) if world_file.exists() else None
    calls = read_calls(kept / CALLS_FILE)
    hub = default_hub(worldmodel=bool(meta.get("worldmodel", True)))
    # Seeded start + restored end: the rubric compares against the task's initial world.
    world = hub.open_world(services=task.mounted, seed=task.seed)
    try:
        if snapshot is not None:
            world.restore(snapshot)
        scored = world.score(task.rubric, report=report or {})
        final_hash = world.hash()
    finally:
        world.close()
    started = float(meta.get("started_at", 0.0))
    ended = max((p.stat().st_mtime for p in (kept / CALLS_FILE, world_file) if p.exists()), default=started)
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
    store.start_run(run, RunConfig(surface=trajectory.surface, path="external"), [task])
    store.add(run, trajectory, task)
    return trajectory


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.external", description=(__doc__ or "").split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    srv = commands.add_parser("serve", help="Serve one task's world to an external MCP client, recording it.")
    srv.add_argument("--tasks", type=Path, default=None, help="JSONL tasks file (default: the session's task).")
    srv.add_argument("--task", required=True, help="Task id.")
    srv.add_argument("--session", type=Path, required=True, help="Session directory to record into.")
    srv.add_argument("--surface", choices=["direct", "gateway"], default="direct")
    srv.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8780)
    srv.add_argument("--token", default=None, help="Bearer token for HTTP (default: the session's, else random).")
    srv.add_argument("--no-worldmodel", action="store_true", help="Do not mount the simulated services.")
    srv.add_argument("--fresh", action="store_true", help="Start over; the recorded session is archived.")
    srv.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)  # the default; old configs pass it
    sc = commands.add_parser("score", help="Score a recorded session and store it as an episode.")
    sc.add_argument("--session", type=Path, required=True)
    sc.add_argument("--store", type=Path, required=True, help="SQLite run store.")
    sc.add_argument("--run", default="external")
    sc.add_argument("--agent", default="external")
    sc.add_argument("--report", default=None, help="The client's answer as a JSON object.")
    sc.add_argument("--rollout", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            if args.fresh and args.resume:
                parser.error("--fresh and --resume exclude each other")
            task = find_task(args.task, args.session, args.tasks)
            serve(
                task,
                args.session,
                args.surface,
                args.transport,
                args.host,
                args.port,
                args.token,
                worldmodel=not args.no_worldmodel,
                fresh=args.fresh,
            )
            return
        report = json.loads(args.report) if args.report else None
        if report is not None and not isinstance(report, dict):
            parser.error("--report must be a JSON object")
        trajectory = score(args.session, RunStore(args.store), args.run, args.agent, report, args.rollout)
    except SessionError as exc:
        parser.exit(2, f"error: {exc}\n")
    summary = {"task_id": trajectory.task_id, "score": trajectory.score, "net_score": trajectory.net_score}
    print(json.dumps({**summary, "success": trajectory.success, "calls": len(trajectory.tool_calls)}))


if __name__ == "__main__":
    main()
