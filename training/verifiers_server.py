"""Rollouts over HTTP for frameworks that live in another Python environment (verifiers, prime-rl).

``compoworld serve verifiers --tasks tasks.jsonl --store runs/runs.db`` (or ``python -m training.verifiers_server``)
serves a task file; the ``compoworld-verifiers`` package (``integrations/verifiers``, installed in the framework's
own virtual environment: verifiers 0.4 pins ``mcp==2.0.0`` and ``openai<3``, ours need newer) drives it. Each rollout is
one :class:`training.grpo.CompoWorldEnv` — the environment TRL's GRPO rollouts use — so it runs in its own
world on the gateway surface, its calls are recorded as the harness records them, it is scored as the harness
scores an episode (``World.score`` on the task's rubric) and stored in the run store as GRPO's rollouts are
(agent ``verifiers:<model>``).

Endpoints (JSON; the admin token for everything but ``call``, which takes the rollout's own token, so an agent's
tool server can reach its world and nothing else):

- ``GET /tasks``: what a framework may show an agent: id, instruction, system prompt (today's date and the
  gateway's rules) and services of each task. Rubrics, plans and expected reports stay here.
- ``POST /rollouts`` ``{"task_id", "model"?}``: open a fresh world for the task; ``{"rollout_id", "token"}``.
- ``POST /rollouts/<id>/call`` ``{"name", "arguments"}``: one gateway meta-tool call; always an envelope.
- ``POST /rollouts/<id>/finish`` ``{"messages"?, "report"?}``: score the world with the report (else the last
  JSON object of the last assistant message, as the harness reads it), store the episode, close the world; the
  score, net score and per-criterion results. Finishing again answers the same result.
- ``POST /groups`` ``{"rollouts": [...], "reward": "cfrr"|"rubric"|"success", "epsilon"?, "beta"?}``: the
  group-relative rewards (:mod:`training.rewards`) of finished rollouts of one task, in the order given.
- ``DELETE /rollouts/<id>``: forget a rollout (a finished one's result; an unfinished one's world closes
  unrecorded). A finished rollout keeps only its result until then.

Bad input is answered with ``{"error": …}`` naming the field or id (400, 404, 409) and changes nothing. Calls run
on the event loop, inline, as the OpenEnv server's do: they are in-process and well under a millisecond, and a
thread hop would cost more than the call. Scoring and store writes run on one recorder thread (SQLite
connections belong to the thread that opened them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.agents import parse_report, system_prompt, world_today
from harness.external import episode_instructions
from harness.store import RunStore
from hub.core import Hub
from hub.http import HubHTTP, WorldAccess, same_token
from hub.rubric import ScoreResult
from hub.surfaces import GATEWAY_NAMES
from servers.framework import Envelope
from servers.serving import CallFn
from taskgen.task import Task, read_jsonl
from training.grpo import CompoWorldEnv, RolloutRecording, final_text
from training.rewards import binary_success, cfrr, rubric_fraction

RewardKind = Literal["cfrr", "rubric", "success"]


class VerifiersRecording(RolloutRecording):
    """GRPO's rollout recording, for rollouts a verifiers environment drives: agent ``verifiers:<model>``."""

    @property
    def agent(self) -> str:
        return f"verifiers:{self.model}"


@dataclass
class Rollout:
    """One rollout: its environment (world, recorded calls), its token and, once finished, its result."""

    id: str
    task: Task
    env: CompoWorldEnv
    token: str
    model: str
    result: dict[str, Any] | None = None
    finishing: bool = False  # set before scoring starts: no call may change the world being scored
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class RolloutHubHTTP(HubHTTP):
    """The hub's MCP agent surface over the rollouts' worlds (``/worlds/<world id>/mcp``, the rollout's token):
    a call to a rollout's world goes through the rollout's environment, so it is recorded."""

    def __init__(self, rollouts: RolloutServer, host: str) -> None:
        self.rollouts = rollouts
        super().__init__(rollouts.hub, rollouts.admin_token, host, instructions=episode_instructions("gateway"))

    def call_function(self, access: WorldAccess) -> CallFn:
        rollout = self.rollouts.by_world.get(access.world.id)
        if rollout is None:
            return super().call_function(access)
        return lambda name, arguments: self.rollouts.call(rollout, name, arguments)


class RolloutServer:
    """The rollouts of one task file, one run of one run store."""

    def __init__(
        self,
        hub: Hub,
        tasks: list[Task],
        store: str | Path,
        run: str = "verifiers",
        admin_token: str | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        if not tasks:
            raise ValueError("no tasks: the task file is empty")
        self.hub = hub
        self.tasks = {t.id: t for t in tasks}
        self.store_path = Path(store)
        self.run = run
        self.admin_token = admin_token or secrets.token_urlsafe(24)
        self.rollouts: dict[str, Rollout] = {}
        self.by_world: dict[str, Rollout] = {}
        self.recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verifiers-recorder")
        self._recordings: dict[str, VerifiersRecording] = {}  # by model; touched on the recorder thread only
        self._views: dict[str, dict[str, Any]] = {}
        # CompoWorldEnv opens worlds on its class-wide hub: this server's.
        CompoWorldEnv.hub = hub
        # Agents may also reach their world over MCP, one hop, with their rollout's token; both paths run a
        # world's calls one at a time on the front's runner, off the event loop.
        self.front = RolloutHubHTTP(self, host)

    # -- the work, off HTTP ----------------------------------------------------------------------

    def view(self, task: Task) -> dict[str, Any]:
        """What an agent may see of ``task`` (cached: finding today's date opens a world)."""
        if task.id not in self._views:
            world = self.hub.open_world(services=task.mounted, seed=task.seed)
            try:
                today = world_today(world, task.services)
            finally:
                world.close()
            self._views[task.id] = {
                "id": task.id,
                "instruction": task.instruction,
                "system_prompt": system_prompt("gateway", today),
                "services": task.services,
            }
        return self._views[task.id]

    def open(self, task_id: Any, model: Any) -> Rollout:
        if not isinstance(task_id, str) or task_id not in self.tasks:
            raise ApiError(400, f"unknown task_id {task_id!r}: the task file has {len(self.tasks)} tasks")
        if not isinstance(model, str) or not model:
            raise ApiError(400, f"model {model!r} must be a non-empty string")
        task = self.tasks[task_id]
        env = CompoWorldEnv()
        env.reset(task=task.model_dump(mode="json"))
        assert env.world is not None
        rollout = Rollout(secrets.token_hex(8), task, env, secrets.token_urlsafe(24), model)
        self.rollouts[rollout.id] = rollout
        self.by_world[env.world.id] = rollout
        self.front.add_world(env.world, "gateway", rollout.token)
        return rollout

    def call(self, rollout: Rollout, name: str, arguments: dict[str, Any]) -> Envelope:
        """One gateway call of ``rollout`` (recorded by its environment); an envelope whatever the input."""
        if rollout.finishing:
            return _error(409, f"rollout {rollout.id!r} is finished: no tool can be called")
        if name not in GATEWAY_NAMES:
            return _error(400, f"name {name!r} is not a gateway tool (one of {', '.join(sorted(GATEWAY_NAMES))})")
        if not isinstance(arguments, dict):
            return _error(400, f"arguments {arguments!r} must be a JSON object")
        assert rollout.env.env is not None
        return rollout.env.env.call(name, arguments)

    async def retire(self, rollout: Rollout) -> None:
        """Take the rollout's world off the agent surface, once the calls already queued for it are done."""
        rollout.finishing = True
        world_id = rollout.env.world.id if rollout.env.world is not None else ""
        await self.front.runner.run(world_id, lambda name, arguments: {"success": True, "data": None}, "", {})
        self.front.access.pop(world_id, None)
        self.front.runner.forget(world_id)
        self.by_world.pop(world_id, None)

    def get(self, rollout_id: str) -> Rollout:
        rollout = self.rollouts.get(rollout_id)
        if rollout is None:
            raise ApiError(404, f"rollout {rollout_id!r} is not open")
        return rollout

    def _recording(self, model: str) -> VerifiersRecording:
        if model not in self._recordings:
            self._recordings[model] = VerifiersRecording(RunStore(self.store_path), self.run, model)
        return self._recordings[model]

    def score_and_record(self, rollout: Rollout, messages: list[Any], report: dict[str, Any]) -> dict[str, Any]:
        """Score the rollout's world as the harness does, store the episode and close the world (recorder thread)."""
        env, task = rollout.env, rollout.task
        assert env.world is not None
        result: ScoreResult = env.world.score(task.rubric, report=report)
        prompt = [m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "user")][:2]
        completion = messages[len(prompt) :]
        episode = self._recording(rollout.model).record(env, prompt, completion, report, result)
        calls = len(env.calls)
        env.world.close()
        # What a finished rollout keeps is its result (for its group's reward): the world and the calls go.
        env.world, env.env = None, None
        return {
            "rollout_id": rollout.id,
            "task_id": task.id,
            "episode_id": episode,
            "score": result.score,
            "net_score": result.net_score,
            "success": result.success,
            "report": report,
            "calls": calls,
            "criteria": [c.model_dump(mode="json", exclude={"detail"}) for c in result.criteria],
        }

    def group(self, rollout_ids: Any, kind: Any, epsilon: Any, beta: Any) -> list[float]:
        if not isinstance(rollout_ids, list) or not rollout_ids:
            raise ApiError(400, f"rollouts {rollout_ids!r} must be a non-empty list of rollout ids")
        if kind not in ("cfrr", "rubric", "success"):
            raise ApiError(400, f"reward {kind!r} must be 'cfrr', 'rubric' or 'success'")
        for name, value in (("epsilon", epsilon), ("beta", beta)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ApiError(400, f"{name} {value!r} must be a non-negative number")
        members = [self.get(str(r)) for r in rollout_ids]
        for member in members:
            if member.result is None:
                raise ApiError(409, f"rollout {member.id!r} is not finished")
            if member.task.id != members[0].task.id:
                raise ApiError(400, f"rollout {member.id!r} is of task {member.task.id!r}, not {members[0].task.id!r}")
        rows = [m.result["criteria"] for m in members if m.result is not None]
        passes = [[1.0 if c["passed"] else 0.0 for c in row if not c["negative"]] for row in rows]
        negatives = [[bool(c["passed"]) for c in row if c["negative"]] for row in rows]
        weights = [float(c["weight"]) for c in rows[0] if not c["negative"]]
        penalty = members[0].task.rubric.penalty
        if kind == "cfrr":
            return cfrr(passes, weights, float(epsilon), float(beta), negatives=negatives, penalty=penalty)
        if kind == "rubric":
            return rubric_fraction(passes, weights, negatives=negatives, penalty=penalty)
        return binary_success(passes, negatives=negatives)

    # -- HTTP --------------------------------------------------------------------------------------

    def _admin(self, request: Request) -> None:
        if not same_token(_bearer(request), self.admin_token):
            raise ApiError(403, "admin token required")

    async def _body(self, request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise ApiError(400, "body must be JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "body must be a JSON object")
        return body

    async def tasks_endpoint(self, request: Request) -> Response:
        self._admin(request)
        loop = asyncio.get_running_loop()
        views = [await loop.run_in_executor(None, self.view, t) for t in self.tasks.values()]
        return JSONResponse({"tasks": views})

    async def open_endpoint(self, request: Request) -> Response:
        self._admin(request)
        body = await self._body(request)
        rollout = self.open(body.get("task_id"), body.get("model", "policy"))
        assert rollout.env.world is not None
        mcp_url = f"{str(request.base_url).rstrip('/')}/worlds/{rollout.env.world.id}/mcp"
        opened = {"rollout_id": rollout.id, "token": rollout.token, "task_id": rollout.task.id, "mcp_url": mcp_url}
        return JSONResponse(opened, 201)

    async def call_endpoint(self, request: Request) -> Response:
        rollout = self.get(request.path_params["rollout_id"])
        if not same_token(_bearer(request), rollout.token):
            raise ApiError(403, f"token not valid for rollout {rollout.id!r}")
        body = await self._body(request)
        name, arguments = body.get("name"), body.get("arguments", {})
        world_id = rollout.env.world.id if rollout.env.world is not None else ""
        envelope = await self.front.runner.run(world_id, lambda n, a: self.call(rollout, n, a), str(name), arguments)
        return JSONResponse(envelope)

    async def finish_endpoint(self, request: Request) -> Response:
        self._admin(request)
        rollout = self.get(request.path_params["rollout_id"])
        body = await self._body(request)
        messages, report = body.get("messages", []), body.get("report")
        if not isinstance(messages, list):
            raise ApiError(400, "messages must be a list of chat messages")
        if report is not None and not isinstance(report, dict):
            raise ApiError(400, f"report {report!r} must be a JSON object")
        async with rollout.lock:
            if rollout.result is None:
                await self.retire(rollout)
                chosen = report if report is not None else parse_report(final_text(messages))
                loop = asyncio.get_running_loop()
                job = self.recorder.submit(self.score_and_record, rollout, messages, chosen)
                rollout.result = await asyncio.wrap_future(job, loop=loop)
        return JSONResponse(rollout.result)

    async def group_endpoint(self, request: Request) -> Response:
        self._admin(request)
        body = await self._body(request)
        rewards = self.group(
            body.get("rollouts"), body.get("reward", "cfrr"), body.get("epsilon", 0.1), body.get("beta", 0.5)
        )
        return JSONResponse({"rewards": rewards})

    async def close_endpoint(self, request: Request) -> Response:
        self._admin(request)
        rollout = self.get(request.path_params["rollout_id"])
        if rollout.result is None and not rollout.finishing and rollout.env.world is not None:
            await self.retire(rollout)
            rollout.env.world.close()
        del self.rollouts[rollout.id]
        return JSONResponse({"rollout_id": rollout.id, "closed": True})

    def app(self) -> Starlette:
        def guarded(handler: Any) -> Any:
            async def endpoint(request: Request) -> Response:
                try:
                    response: Response = await handler(request)
                except ApiError as exc:
                    return JSONResponse({"error": str(exc)}, status_code=exc.status)
                return response

            return endpoint

        # The hub front's app: its MCP agent surface and its admin surface (same admin token), plus ours.
        app = self.front.app()
        app.router.routes.extend(
            [
                Route("/tasks", guarded(self.tasks_endpoint), methods=["GET"]),
                Route("/rollouts", guarded(self.open_endpoint), methods=["POST"]),
                Route("/rollouts/{rollout_id}", guarded(self.close_endpoint), methods=["DELETE"]),
                Route("/rollouts/{rollout_id}/call", guarded(self.call_endpoint), methods=["POST"]),
                Route("/rollouts/{rollout_id}/finish", guarded(self.finish_endpoint), methods=["POST"]),
                Route("/groups", guarded(self.group_endpoint), methods=["POST"]),
            ]
        )
        return app

    def close(self) -> None:
        for rollout in self.rollouts.values():
            if rollout.result is None and rollout.env.world is not None:
                rollout.env.world.close()
        self.recorder.shutdown(wait=True)


def _bearer(request: Request) -> str:
    value = request.headers.get("authorization", "")
    return value[7:].strip() if value.lower().startswith("bearer ") else ""


def _error(code: int, message: str) -> Envelope:
    return {"success": False, "error": {"code": code, "message": message}}


def serve(
    tasks: Path,
    store: Path,
    run: str = "verifiers",
    host: str = "127.0.0.1",
    port: int = 8790,
    token: str | None = None,
    worldmodel: bool = True,
) -> None:
    """Serve the task file's rollouts until interrupted; prints a JSON line (url, token, tasks) when ready."""
    import uvicorn

    from taskgen.generate import default_hub

    started = time.perf_counter()
    server = RolloutServer(default_hub(worldmodel=worldmodel), list(read_jsonl(tasks)), store, run, token, host)
    ready = {"url": f"http://{host}:{port}", "token": server.admin_token, "tasks": len(server.tasks)}
    print(json.dumps(ready | {"startup_s": round(time.perf_counter() - started, 3)}), flush=True)
    try:
        uvicorn.run(server.app(), host=host, port=port, log_level="warning")
    finally:
        server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.verifiers_server", description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=Path, required=True, help="Tasks JSONL.")
    parser.add_argument("--store", type=Path, default=Path("runs/runs.db"), help="SQLite run store.")
    parser.add_argument("--run", default="verifiers", help="Run name of the recorded rollouts.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--token", default=None, help="Admin token (default: random, printed).")
    parser.add_argument("--no-worldmodel", action="store_true", help="Do not mount the simulated services.")
    args = parser.parse_args(argv)
    serve(args.tasks, args.store, args.run, args.host, args.port, args.token, not args.no_worldmodel)


if __name__ == "__main__":
    main()
