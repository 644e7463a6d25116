"""OpenEnv server benchmark: milliseconds an OpenEnv step adds per tool call over the in-process harness path.

Run: ``python bench/openenv_server.py [--tasks 20] [--json]`` (needs the openenv extra). It serves ``--tasks`` generated
tasks with ``compoworld serve openenv`` in a subprocess (as a trainer would reach it), plays each task's oracle
calls on the gateway through OpenEnv's ``GenericEnvClient`` (WebSocket ``/ws``, one session), and times every
step at the client; the same calls are timed through :class:`harness.env.InProcessEnv` in this process. The
target is <= 2 ms added per call (median).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _oracle_calls(task: Any) -> list[tuple[str, dict[str, Any]]]:
    """The gateway calls of the task's plan (the arguments resolved against the in-process run's results)."""
    return [("list_services", {})] + [("call_tool", {"tool_name": s.tool, "arguments": s.arguments}) for s in task.plan]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--thread", action="store_true", help="serve from a thread of this process instead of a subprocess"
    )
    args = parser.parse_args()

    from harness.env import InProcessEnv
    from taskgen.generate import default_hub, generate
    from taskgen.task import resolve, write_jsonl

    hub = default_hub()
    tasks = generate(args.tasks, seed=0, hub=hub).tasks
    inprocess: list[float] = []
    plans: list[list[tuple[str, dict[str, Any]]]] = []
    for task in tasks:
        world = hub.open_world(services=task.mounted, seed=task.seed)
        env = InProcessEnv(world, "gateway")
        envelopes: list[Any] = []
        calls = []
        for name, arguments in _oracle_calls(task):
            if name == "call_tool":
                arguments = {**arguments, "arguments": resolve(arguments["arguments"], envelopes)}
            started = time.perf_counter()
            envelope = env.call(name, arguments)
            inprocess.append((time.perf_counter() - started) * 1000)
            if name == "call_tool":
                envelopes.append(envelope)
            calls.append((name, arguments))
        plans.append(calls)
        world.close()

    folder = Path(tempfile.mkdtemp(prefix="bench-openenv-"))
    write_jsonl(tasks, folder / "tasks.jsonl")
    over_http = _in_thread(hub, tasks, plans, folder) if args.thread else _in_subprocess(tasks, plans, folder)
    added = statistics.median(over_http) - statistics.median(inprocess)
    results = {
        "server": "thread" if args.thread else "subprocess",
        "calls": len(inprocess),
        "inprocess_ms_per_call_median": round(statistics.median(inprocess), 3),
        "openenv_ms_per_call_median": round(statistics.median(over_http), 3),
        "openenv_added_ms_per_call_median": round(added, 3),
        "openenv_added_ms_per_call_mean": round(statistics.mean(over_http) - statistics.mean(inprocess), 3),
        "target_added_ms_per_call": 2.0,
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        print(f"{key:40} {value:>10}")


def _in_thread(hub: Any, tasks: list[Any], plans: list[list[tuple[str, dict[str, Any]]]], folder: Path) -> list[float]:
    import threading

    import uvicorn
    from openenv.core import GenericEnvClient

    from tests.conftest import free_port
    from training.openenv_server import Episodes, create_app

    port = free_port()
    app = create_app(Episodes(hub, tasks, folder / "runs.db"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        return asyncio.run(_play(GenericEnvClient(base_url=f"http://127.0.0.1:{port}"), tasks, plans))
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _in_subprocess(tasks: list[Any], plans: list[list[tuple[str, dict[str, Any]]]], folder: Path) -> list[float]:
    from openenv.core import GenericEnvClient

    from tests.conftest import free_port

    port = free_port()
    command = [sys.executable, "-m", "training.cli", "serve", "openenv", "--tasks", str(folder / "tasks.jsonl")]
    command += ["--store", str(folder / "runs.db"), "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the OpenEnv server did not start") from None
                time.sleep(0.2)
        return asyncio.run(_play(GenericEnvClient(base_url=url), tasks, plans))
    finally:
        server.terminate()
        server.wait(timeout=30)


async def _play(client: Any, tasks: list[Any], plans: list[list[tuple[str, dict[str, Any]]]]) -> list[float]:
    times: list[float] = []
    async with client:
        for task, calls in zip(tasks, plans, strict=True):
            await client.reset(task_id=task.id)
            for name, arguments in calls:
                started = time.perf_counter()
                await client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
                times.append((time.perf_counter() - started) * 1000)
            await client.step({"type": "call_tool", "tool_name": "submit_report", "arguments": {"report": {}}})
    return times


if __name__ == "__main__":
    main()
