"""Harness benchmark: oracle episodes per minute, in process and through the in-memory MCP surface.

Run: ``python bench/harness.py [--tasks 100] [--json]``. Recording is on (every call with its
write diff), as in a real run; episodes are also scored. The target is >= 1,000 oracle episodes
per minute on 2 cores on the in-process path; the MCP-surface rate is printed beside it.

With the ``inspect`` extra installed it also replays the oracle's gateway calls through the Inspect
adapter's tools (``harness.inspect_task.gateway_tools``) and straight into the harness environment, world
by world in turn, and prints the median per-call cost of each (target: the adapter adds <= 2 ms a call),
and beside it the cost of a call through Inspect's own tool executor (``execute_tools``: argument
validation, transcript events), which Inspect adds to any tool.

``--adapters`` then runs every other framework adapter's own benchmark, each in the environment it
needs (``.venvs/verl`` and ``.venvs/verifiers``, made by their tests, for verl and verifiers), and
prints one line per adapter: the milliseconds it adds to a tool call over the in-process harness
path (target <= 2 ms), the path measured, and the benchmark to run for the details. An adapter whose
environment is missing is reported as skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--adapters", action="store_true", help="also measure every framework adapter's added cost")
    args = parser.parse_args()

    from harness.agent_spec import make_agent
    from harness.episode import run_episode
    from taskgen.generate import default_hub, generate

    hub = default_hub()
    tasks = generate(args.tasks, seed=0, hub=hub).tasks
    oracle = make_agent("oracle")
    results: dict[str, float] = {}
    for surface in ("direct", "gateway"):
        for path in ("inprocess", "mcp"):
            run_episode(hub, tasks[0], oracle, surface, path)  # warm
            started = time.perf_counter()
            scores = [run_episode(hub, t, oracle, surface, path).score for t in tasks]
            elapsed = time.perf_counter() - started
            assert all(s == 1.0 for s in scores)
            results[f"{path}_{surface}_episodes_per_min"] = round(len(tasks) / elapsed * 60)
    results["median_calls_per_task"] = sorted(len(t.plan) for t in tasks)[len(tasks) // 2]
    results["target_inprocess_episodes_per_min"] = 1000
    if importlib.util.find_spec("inspect_ai") is not None:
        results.update(inspect_overhead(hub, tasks[:20], oracle))
    if args.adapters:
        results.update(adapter_overheads(hub))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        print(f"{key:40} {value:>8}")


def inspect_overhead(hub: Any, tasks: list[Any], oracle: Any, rounds: int = 5) -> dict[str, float]:
    """Median milliseconds per gateway call: the environment itself, the Inspect adapter's tool, and Inspect's
    tool executor over that tool; each task's oracle calls are replayed in a fresh world of the task's seed."""
    import anyio
    from inspect_ai.model import ChatMessageAssistant, execute_tools
    from inspect_ai.tool import ToolCall

    from harness.env import InProcessEnv
    from harness.episode import run_episode
    from harness.inspect_task import gateway_tools

    scripts = [(t, [(c.name, c.arguments) for c in run_episode(hub, t, oracle, "gateway").tool_calls]) for t in tasks]

    def timed(task: Any, calls: list[tuple[str, Any]], how: str) -> float:
        world = hub.open_world(services=task.mounted, seed=task.seed)
        env = InProcessEnv(world, "gateway")
        tools = gateway_tools(env)
        by_name = dict(zip(["list_services", "list_tools", "describe_tool", "call_tool"], tools, strict=True))

        async def replay() -> float:
            started = time.perf_counter()
            for number, (name, arguments) in enumerate(calls):
                if how == "env":
                    json.dumps(env.call(name, arguments))  # what the adapter hands back is this JSON
                elif how == "adapter":
                    await by_name[name](**arguments)
                else:
                    turn = ChatMessageAssistant(content="", tool_calls=[ToolCall(f"c{number}", name, arguments)])
                    await execute_tools([turn], tools)
            return time.perf_counter() - started

        try:
            return float(anyio.run(replay)) * 1000 / max(len(calls), 1)
        finally:
            world.close()

    samples: dict[str, list[float]] = {"env": [], "adapter": [], "execute_tools": []}
    for _ in range(rounds):
        for task, calls in scripts:
            for how in samples:  # interleaved, so a busy moment on a shared machine hits every path alike
                samples[how].append(timed(task, calls, how))
    env_ms, adapter_ms, executor_ms = (statistics.median(samples[k]) for k in ("env", "adapter", "execute_tools"))
    return {
        "inspect_env_ms_per_call": round(env_ms, 3),
        "inspect_adapter_added_ms_per_call": round(adapter_ms - env_ms, 3),
        "inspect_execute_tools_added_ms_per_call": round(executor_ms - env_ms, 3),
        "target_inspect_adapter_added_ms_per_call": 2.0,
    }


ROOT = Path(__file__).resolve().parents[1]


def _bench_json(python: Path, *command: str) -> dict[str, Any]:
    done = subprocess.run([str(python), *command], cwd=ROOT, capture_output=True, text=True, timeout=900, check=True)
    return dict(json.loads(done.stdout[done.stdout.index("{") :]))


def adapter_overheads(hub: Any) -> dict[str, Any]:
    """``<adapter>_added_ms_per_call`` for FastMCP, OpenEnv, verl and verifiers, from their own benchmarks
    (``"skipped: …"`` where the adapter's environment is missing)."""
    here, out = Path(sys.executable), {}
    out["fastmcp_mount_added_ms_per_call"] = _bench_json(here, "bench/fastmcp_mount.py", "--json")["added_write_ms"]
    if importlib.util.find_spec("openenv") is not None:
        found = _bench_json(here, "bench/openenv_server.py", "--json", "--tasks", "10")
        out["openenv_added_ms_per_call"] = found["openenv_added_ms_per_call_median"]  # a separate server process
    else:
        out["openenv_added_ms_per_call"] = "skipped: pip install -e .[openenv]"
    verl = ROOT / ".venvs/verl/bin/python"
    out["verl_added_ms_per_call"] = (
        _bench_json(verl, "bench/verl_tools.py", "--json", "--tasks", "20")["added_median_ms_per_call"]
        if verl.exists()
        else "skipped: no .venvs/verl (pytest tests/training/test_verl_tools.py makes it)"
    )
    verifiers = ROOT / ".venvs/verifiers/bin/python"
    if verifiers.exists():
        found = verifiers_calls(verifiers, hub)
        out["verifiers_server_call_added_ms_per_call"] = found["server_call_added_ms"]
        out["verifiers_mcp_added_ms_per_call"] = found["verifiers_mcp_added_ms"]
    else:
        out["verifiers_added_ms_per_call"] = "skipped: no .venvs/verifiers (tests/integrations/test_verifiers.py)"
    out["target_adapter_added_ms_per_call"] = 2.0
    return out


def verifiers_calls(python: Path, hub: Any) -> dict[str, Any]:
    """``integrations/verifiers/examples/bench_calls.py`` against a ``compoworld serve verifiers`` of its own."""
    from taskgen.generate import generate
    from taskgen.task import write_jsonl
    from tests.conftest import free_port, wait_for_port

    folder = Path(tempfile.mkdtemp(prefix="bench-verifiers-"))
    task = generate(1, seed=0, hub=hub).tasks[0]
    write_jsonl([task], folder / "tasks.jsonl")
    port, store, token = free_port(), folder / "runs.db", "bench"
    serve = [
        str(Path(sys.executable).parent / "compoworld"),
        "serve",
        "verifiers",
        "--tasks",
        str(folder / "tasks.jsonl"),
    ]
    server = subprocess.Popen(
        [*serve, "--store", str(store), "--port", str(port), "--token", token], cwd=ROOT, stdout=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, server, timeout=90)
        url = f"http://127.0.0.1:{port}"
        command = ["integrations/verifiers/examples/bench_calls.py", "--server", url, "--token", token]
        return _bench_json(python, *command, "--store", str(store), "--task", task.id, "--calls", "200")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
