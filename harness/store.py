"""The run store: SQLite through sqlite-utils (tables runs, tasks, episodes, steps, criteria, tools).

An episode is written in one transaction — its row, its steps and its criterion results — so a
run killed at any moment (Ctrl-C or kill -9) leaves only whole episodes behind, and resuming the
run skips exactly those. Episode ids are ``<run>/<task>/<agent>/<surface>/<rollout>``, so the
same episode is never stored twice. WAL mode keeps readers (reports) and the writer apart.

A run is self-describing: the tool specs its episodes were offered are stored once per run in
``tools``, keyed by a hash of the specs, one row per service's tools (:func:`spec_chunks`), and each
episode lists its rows in ``tools_hash`` — so a run exports without a hub, and stays right after
the services change. Serialising a direct surface's specs costs as much as running an episode; by
service, a run serialises each service's specs once, however many task worlds mount it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import sqlite_utils

from harness.config import RunConfig
from harness.trajectory import Trajectory
from taskgen.task import Task


def episode_id(run: str, task_id: str, agent: str, surface: str, rollout: int) -> str:
    return f"{run}/{task_id}/{agent}/{surface}/{rollout}"


def spec_chunks(tools: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``tools`` cut where the service changes (names are ``<service>__<tool>``; a direct listing comes
    sorted by service, the gateway's four meta-tools make one chunk): what the store keeps once per run."""
    chunks: list[list[dict[str, Any]]] = []
    last: str | None = None
    for spec in tools:
        name = str(spec.get("function", {}).get("name", ""))
        service = name.split("__", 1)[0] if "__" in name else ""
        if not chunks or service != last:
            chunks.append([])
            last = service
        chunks[-1].append(spec)
    return chunks


def specs_hash(specs: list[dict[str, Any]]) -> str:
    """The key of a list of tool specs: the same specs, in the same order, give the same key."""
    return hashlib.sha256(json.dumps(specs, ensure_ascii=False).encode()).hexdigest()[:16]


class RunStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite_utils.Database(str(self.path))
        self.db.conn.execute("PRAGMA journal_mode=WAL")
        self.db.conn.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.Lock()
        # Each distinct chunk of specs is hashed once: found again by its tool names, then compared.
        self._keys: dict[tuple[str, ...], list[tuple[list[dict[str, Any]], str]]] = {}
        self._stored: set[tuple[str, str]] = set()  # (run, key) rows this store has written
        self._ensure()

    def _ensure(self) -> None:
        db = self.db
        if "runs" not in db.table_names():
            db.table("runs").create({"id": str, "created": float, "config": str}, pk="id")
        if "tasks" not in db.table_names():
            db.table("tasks").create({"run_id": str, "task_id": str, "task": str}, pk=("run_id", "task_id"))
        if "episodes" not in db.table_names():
            db.table("episodes").create(
                {
                    "id": str,
                    "run_id": str,
                    "task_id": str,
                    "agent": str,
                    "model": str,
                    "surface": str,
                    "path": str,
                    "rollout": int,
                    "score": float,
                    "net_score": float,
                    "success": int,
                    "n_calls": int,
                    "n_errors": int,
                    "finish_reason": str,
                    "final_hash": str,
                    "started_at": float,
                    "duration_s": float,
                    "trajectory": str,
                    "rubric_version": int,
                    "tools_hash": str,
                },
                pk="id",
            )
            db.table("episodes").create_index(["run_id"])
        elif "tools_hash" not in db.table("episodes").columns_dict:  # a store made before runs kept their specs
            db.table("episodes").add_column("tools_hash", str)
        if "tools" not in db.table_names():
            db.table("tools").create({"run_id": str, "hash": str, "specs": str}, pk=("run_id", "hash"))
        if "steps" not in db.table_names():
            db.table("steps").create(
                {
                    "episode_id": str,
                    "idx": int,
                    "name": str,
                    "service": str,
                    "tool": str,
                    "kind": str,
                    "arguments": str,
                    "envelope": str,
                    "success": int,
                    "latency_ms": float,
                    "diff": str,
                },
                pk=("episode_id", "idx"),
            )
        if "criteria" not in db.table_names():
            db.table("criteria").create(
                {
                    "episode_id": str,
                    "criterion_id": str,
                    "passed": int,
                    "negative": int,
                    "weight": float,
                    "detail": str,
                    "kind": str,
                    "service": str,
                },
                pk=("episode_id", "criterion_id"),
            )

    # -- writing -----------------------------------------------------------------------------

    def start_run(self, run: str, config: RunConfig | Mapping[str, Any], tasks: Iterable[Task]) -> None:
        """Record a run, its config (a mapping is read as a :class:`RunConfig`) and its tasks; a resumed run keeps
        the config it started with.

        Resuming a run whose stored tasks carry another rubric version than ``tasks`` is refused, so scores of
        two rubric semantics never end up in one run."""
        config = config if isinstance(config, RunConfig) else RunConfig.model_validate(config)
        tasks = list(tasks)
        stored = {
            row["task_id"]: Task.model_validate_json(row["task"]).rubric_version
            for row in self.db.query("select task_id, task from tasks where run_id = ?", [run])
        }
        for task in tasks:
            if task.id in stored and stored[task.id] != task.rubric_version:
                raise ValueError(
                    f"run {run!r} scored task {task.id!r} with rubric version {stored[task.id]}, and the task given "
                    f"now has version {task.rubric_version}: start a new run instead of resuming this one"
                )
        with self._lock, self.db.conn:
            row = {"id": run, "created": time.time(), "config": config.stored_json()}
            self.db.table("runs").insert(row, ignore=True)
            self.db.table("tasks").insert_all(
                ({"run_id": run, "task_id": t.id, "task": t.model_dump_json()} for t in tasks), ignore=True
            )

    def done(self, run: str) -> set[str]:
        """Ids of the episodes of ``run`` that are already stored."""
        return {row["id"] for row in self.db.query("select id from episodes where run_id = ?", [run])}

    def add(self, run: str, trajectory: Trajectory, task: Task | None = None) -> str:
        """Store one episode atomically; storing it again is a no-op."""
        key = episode_id(run, trajectory.task_id, trajectory.agent, trajectory.surface, trajectory.rollout)
        kinds = {c.id: c for c in task.rubric.criteria} if task else {}
        with self._lock, self.db.conn:
            if self.db.execute("select 1 from episodes where id = ?", [key]).fetchone():
                return key
            keys = self._store_specs(run, trajectory.tools)
            self.db.table("episodes").insert(
                {
                    "id": key,
                    "run_id": run,
                    "task_id": trajectory.task_id,
                    "agent": trajectory.agent,
                    "model": trajectory.model or "",
                    "surface": trajectory.surface,
                    "path": trajectory.path,
                    "rollout": trajectory.rollout,
                    "score": trajectory.score,
                    "net_score": trajectory.net_score,
                    "success": int(trajectory.success),
                    "n_calls": len(trajectory.tool_calls),
                    "n_errors": trajectory.n_errors,
                    "finish_reason": trajectory.finish_reason,
                    "final_hash": trajectory.final_hash,
                    "started_at": trajectory.started_at,
                    "duration_s": trajectory.duration_s,
                    "trajectory": trajectory.model_dump_json(exclude={"tools"}),  # kept once per run instead
                    "rubric_version": task.rubric_version if task else None,
                    "tools_hash": " ".join(keys) or None,
                },
                alter=True,  # stores made before rubric versions get the column on first use
            )
            self.db.table("steps").insert_all(
                {
                    "episode_id": key,
                    "idx": c.index,
                    "name": c.name,
                    "service": c.service or "",
                    "tool": c.tool or "",
                    "kind": c.kind or "",
                    "arguments": json.dumps(c.arguments),
                    "envelope": json.dumps(c.envelope),
                    "success": int(c.ok),
                    "latency_ms": c.latency_ms,
                    "diff": json.dumps([d.model_dump(mode="json") for d in c.diff]) if c.diff else "",
                }
                for c in trajectory.tool_calls
            )
            self.db.table("criteria").insert_all(
                {
                    "episode_id": key,
                    "criterion_id": r.id,
                    "passed": int(r.passed),
                    "negative": int(r.negative),
                    "weight": r.weight,
                    "detail": r.detail,
                    "kind": getattr(kinds.get(r.id), "kind", ""),
                    "service": getattr(kinds.get(r.id), "service", ""),
                }
                for r in trajectory.criteria
            )
        return key

    def _store_specs(self, run: str, tools: list[dict[str, Any]]) -> list[str]:
        """The keys of ``tools``' chunks, each chunk written to ``tools`` unless the run has it already."""
        keys = []
        for chunk in spec_chunks(tools):
            names = tuple(str(spec.get("function", {}).get("name", "")) for spec in chunk)
            key = next((k for seen, k in self._keys.get(names, []) if seen == chunk), None)
            if key is None:
                key = specs_hash(chunk)
                self._keys.setdefault(names, []).append((chunk, key))
            if (run, key) not in self._stored:
                row = {"run_id": run, "hash": key, "specs": json.dumps(chunk, ensure_ascii=False)}
                self.db.table("tools").insert(row, ignore=True)
                self._stored.add((run, key))
            keys.append(key)
        return keys

    # -- reading -----------------------------------------------------------------------------

    def runs(self) -> list[dict[str, Any]]:
        return list(self.db.query("select id, created, config from runs order by created"))

    def config(self, run: str) -> RunConfig | None:
        """The config ``run`` was started with (runs stored by older versions included); None for no such run."""
        row = next(self.db.query("select config from runs where id = ?", [run]), None)
        return None if row is None else RunConfig.stored(row["config"])

    def tasks(self, run: str) -> dict[str, Task]:
        rows = self.db.query("select task from tasks where run_id = ?", [run])
        return {t.id: t for t in (Task.model_validate_json(r["task"]) for r in rows)}

    def episodes(self, run: str) -> list[dict[str, Any]]:
        return list(self.db.query("select * from episodes where run_id = ? order by id", [run]))

    def tools(self, run: str) -> dict[str, list[dict[str, Any]]]:
        """The chunks of tool specs (:func:`spec_chunks`) the episodes of ``run`` were offered, by hash."""
        rows = self.db.query("select hash, specs from tools where run_id = ?", [run])
        return {row["hash"]: json.loads(row["specs"]) for row in rows}

    def trajectories(self, run: str) -> Iterator[Trajectory]:
        """The episodes of ``run`` with the tool specs they were offered ([] where none were stored)."""
        specs = self.tools(run)
        query = "select trajectory, tools_hash from episodes where run_id = ? order by id"
        for row in self.db.query(query, [run]):
            trajectory = Trajectory.model_validate_json(row["trajectory"])
            trajectory.tools = [spec for key in (row["tools_hash"] or "").split() for spec in specs[key]]
            yield trajectory

    def criteria(self, run: str) -> list[dict[str, Any]]:
        return list(
            self.db.query(
                "select c.*, e.task_id, e.agent from criteria c join episodes e on e.id = c.episode_id "
                "where e.run_id = ?",
                [run],
            )
        )

    def steps(self, run: str) -> list[dict[str, Any]]:
        return list(
            self.db.query(
                "select s.*, e.agent from steps s join episodes e on e.id = s.episode_id where e.run_id = ?", [run]
            )
        )

    def export_jsonl(self, run: str, path: str | Path) -> int:
        count = 0
        with open(path, "w", encoding="utf-8") as handle:
            for trajectory in self.trajectories(run):
                handle.write(trajectory.model_dump_json() + "\n")
                count += 1
        return count
