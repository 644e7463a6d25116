"""The session store of ``eval serve``: where a session's answer key and full recording live.

A session has two folders. The **session folder** is where the evaluated agent runs (by default
``runs/sessions/<task>``): it holds only what the agent may see — the instruction, the world id
and surface, and each call with the envelope it got. The **store** (``$COMPOWORLD_SESSION_STORE``,
else ``$XDG_CACHE_HOME/compoworld/sessions``, else ``~/.cache/compoworld/sessions``; one folder per
session, keyed by the session folder's absolute path) holds the task with its rubric, plan and
expected report, the full call records with diffs, the world after each change, the lock that
keeps one server per session, and the archive of sessions started over with ``--fresh``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Literal

from harness.trajectory import Surface, ToolCall
from taskgen.task import Task, read_jsonl

Transport = Literal["stdio", "http"]

STORE_ENV = "COMPOWORLD_SESSION_STORE"
TASK_FILE = "task.json"
META_FILE = "session.json"
CALLS_FILE = "calls.jsonl"
WORLD_FILE = "world.json"
LOCK_FILE = "lock"
ARCHIVE_DIR = "archive"
FRESH_HINT = "pass --fresh to start it over (its recording is archived) or use another --session"


class SessionError(Exception):
    """A task or session that cannot be served or scored as asked; the message is one line for a person."""


def load_task(tasks_file: Path, task_id: str) -> Task:
    """The task ``task_id`` of a JSONL tasks file."""
    if not tasks_file.is_file():
        raise SessionError(f"no tasks file {str(tasks_file)!r}")
    seen: list[str] = []
    try:
        for task in read_jsonl(tasks_file):
            if task.id == task_id:
                return task
            seen.append(task.id)
    except (OSError, ValueError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise SessionError(f"cannot read tasks file {str(tasks_file)!r}: {reason}") from exc
    shown = ", ".join(seen[:10]) + (", …" if len(seen) > 10 else "")
    raise SessionError(f"no task {task_id!r} in {str(tasks_file)!r} (it has {len(seen)}: {shown})")


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


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def agent_view(call: ToolCall) -> str:
    """A call as the agent saw it: no service behind it, no diff."""
    seen = {"index": call.index, "name": call.name, "arguments": call.arguments, "envelope": call.envelope}
    return json.dumps(seen, ensure_ascii=False) + "\n"


def store_root() -> Path:
    """Where session stores live: ``$COMPOWORLD_SESSION_STORE``, else the user's cache folder."""
    override = os.environ.get(STORE_ENV)
    if override:
        return Path(override).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME", "")
    return ((Path(cache) if os.path.isabs(cache) else Path.home() / ".cache") / "compoworld" / "sessions").resolve()


def session_store(session_dir: Path) -> Path:
    """The store folder of a session directory: named after it and keyed by its absolute path."""
    where = session_dir.resolve()
    key = hashlib.sha256(str(where).encode()).hexdigest()[:16]
    store = store_root() / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', where.name)[:48]}-{key}"
    if store.is_relative_to(where):
        raise SessionError(f"the session store {str(store)!r} lies inside the session directory; set ${STORE_ENV}")
    return store


def _archive_dir(store: Path, suffix: str = "") -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + suffix
    target, n = store / ARCHIVE_DIR / stamp, 1
    while target.exists():
        n += 1
        target = store / ARCHIVE_DIR / f"{stamp}-{n}"
    return target


def migrate_legacy(session_dir: Path, store: Path) -> None:
    """Sessions recorded before the answer key moved out kept it in the session directory: move their
    files into the store (or into its archive, when the store already records a session)."""
    if not (session_dir / TASK_FILE).is_file():
        return
    target = _archive_dir(store, "-legacy") if (store / TASK_FILE).exists() else store
    target.mkdir(parents=True, exist_ok=True)
    for name in (TASK_FILE, META_FILE, CALLS_FILE, WORLD_FILE):
        if (session_dir / name).exists():
            shutil.move(session_dir / name, target / name)


def _archive(session_dir: Path, store: Path) -> Path | None:
    """Move a recorded session (the store's files and the agent's view) into ``archive/<time>/``.
    The archive stays in the store: an agent starting over must not read the earlier attempt."""
    recorded = [store / name for name in (TASK_FILE, META_FILE, CALLS_FILE, WORLD_FILE) if (store / name).exists()]
    viewed = [session_dir / name for name in (META_FILE, CALLS_FILE) if (session_dir / name).exists()]
    if not recorded and not viewed:
        return None
    target = _archive_dir(store)
    (target / "agent-view").mkdir(parents=True)
    for path in recorded:
        shutil.move(path, target / path.name)
    for path in viewed:
        shutil.move(path, target / "agent-view" / path.name)
    return target


class StoreLock:
    """One server per session at a time; the OS releases the lock of a killed server."""

    def __init__(self, store: Path, session_dir: Path) -> None:
        self._handle = open(store / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115 - held while serving
        if sys.platform != "win32":
            import fcntl

            try:
                fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._handle.seek(0)
                holder = self._handle.read().strip() or "?"
                self._handle.close()
                raise SessionError(
                    f"session {str(session_dir)!r} is being served by another process (pid {holder}); stop it first"
                ) from None
        self._handle.truncate(0)
        self._handle.write(str(os.getpid()))
        self._handle.flush()

    def release(self) -> None:
        self._handle.close()


def _mismatch(recorded: Task, meta: dict[str, Any], task: Task, surface: str, worldmodel: bool) -> str | None:
    if recorded.id != task.id:
        return f"records task {recorded.id!r}, not {task.id!r}"
    if recorded.model_dump(mode="json") != task.model_dump(mode="json"):
        return f"records another version of task {task.id!r}"
    if meta.get("surface") != surface:
        return f"was recorded on the {meta.get('surface')!r} surface, not {surface!r}"
    if bool(meta.get("worldmodel", True)) != worldmodel:
        return "was recorded " + ("without" if worldmodel else "with") + " the world model"
    return None


def prepare_store(
    task: Task,
    session_dir: Path,
    store: Path,
    surface: Surface,
    transport: Transport,
    worldmodel: bool,
    fresh: bool,
    token: str | None,
) -> tuple[list[ToolCall], Any, dict[str, Any]]:
    """Continue the session ``store`` records (or archive it first, with ``fresh``); write the task and
    settings to the store and the agent's view to the session directory. Returns the recorded calls,
    the recorded world snapshot (None: the seeded start) and the settings."""
    migrate_legacy(session_dir, store)
    if fresh and (archived := _archive(session_dir, store)):
        print(f"session {str(session_dir)!r} starts over; its recording is in {str(archived)!r}", file=sys.stderr)
    meta: dict[str, Any] = {}
    if (store / TASK_FILE).exists():
        recorded = Task.model_validate_json((store / TASK_FILE).read_text(encoding="utf-8"))
        meta = json.loads((store / META_FILE).read_text(encoding="utf-8"))
        problem = _mismatch(recorded, meta, task, surface, worldmodel)
        if problem:
            raise SessionError(f"session {str(session_dir)!r} {problem}; {FRESH_HINT}")
    calls = read_calls(store / CALLS_FILE)
    world_file = store / WORLD_FILE
    snapshot = json.loads(world_file.read_text(encoding="utf-8")) if meta and world_file.exists() else None
    if transport == "http":
        token = token or meta.get("token") or secrets.token_urlsafe(24)
    settings = {
        "task_id": task.id,
        "world_id": task.id,
        "surface": surface,
        "transport": transport,
        "worldmodel": worldmodel,
        "started_at": meta.get("started_at", time.time()),
        "session": str(session_dir.resolve()),
        "token": token or meta.get("token"),
    }
    write_atomic(store / TASK_FILE, task.model_dump_json() + "\n")
    write_atomic(store / META_FILE, json.dumps(settings, indent=2) + "\n")
    # Rewriting the calls drops a line a kill cut short, so appended lines stay whole; the agent's
    # view is rebuilt from the store, which is what is scored.
    write_atomic(store / CALLS_FILE, "".join(c.model_dump_json() + "\n" for c in calls))
    view = {key: settings[key] for key in ("task_id", "world_id", "surface", "transport", "started_at")}
    view["instruction"] = task.instruction
    write_atomic(session_dir / META_FILE, json.dumps(view, indent=2, ensure_ascii=False) + "\n")
    write_atomic(session_dir / CALLS_FILE, "".join(agent_view(c) for c in calls))
    return calls, snapshot, settings


def open_store(session_dir: Path) -> tuple[Path, StoreLock]:
    session_dir.mkdir(parents=True, exist_ok=True)
    store = session_store(session_dir)
    store.mkdir(parents=True, exist_ok=True)
    return store, StoreLock(store, session_dir)


def find_task(task_id: str, session_dir: Path, tasks_file: Path | None = None) -> Task:
    """The task to serve: from ``tasks_file`` when given, else the one the session's store records,
    else from ``tasks.jsonl`` in the current folder."""
    if tasks_file is None:
        store = session_store(session_dir)
        migrate_legacy(session_dir, store)
        if (store / TASK_FILE).exists():
            recorded = Task.model_validate_json((store / TASK_FILE).read_text(encoding="utf-8"))
            if recorded.id != task_id:
                raise SessionError(f"session {str(session_dir)!r} records task {recorded.id!r}, not {task_id!r}")
            return recorded
        tasks_file = Path("tasks.jsonl")
        if not tasks_file.is_file():
            raise SessionError(
                f"session {str(session_dir)!r} records no task and there is no ./tasks.jsonl: pass --tasks"
            )
    return load_task(tasks_file, task_id)
