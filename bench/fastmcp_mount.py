"""FastMCP servers mounted in process: what the hub adds to a call of the server's own ``call_tool``.

Run: ``python bench/fastmcp_mount.py [--calls 500] [--json]``. One FastMCP server (the notes
server of the tests, with its per-world state hook) is mounted in a hub with a Recorder; the
figures are median milliseconds per call: ``server_call_tool_ms`` (``await server.call_tool`` on
one event loop: the floor), ``hub_read_ms`` and ``hub_write_ms`` (``world.call`` with recording;
a write runs in a fresh fork, so it also pays the world's first copy of the state, and records
its diff), and ``added_*_ms`` (hub minus floor). Target: the hub adds <= 2 ms per call (issue 19).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _median_ms(call: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from hub.core import Hub
    from hub.fastmcp_mount import HookState, bound_state, fastmcp_entry
    from hub.middleware import Recorder
    from tests.hub.fixtures.notes_server import mcp

    hub = Hub.native([], extra=[fastmcp_entry(mcp, state="tests.hub.fixtures.notes_server:state")])
    hub.middleware.append(lambda world: Recorder())
    world = hub.open_world(seed=0)
    for i in range(20):  # a state of 20 notes, as a short episode leaves it
        world.call("notes__add_note", {"text": f"note {i}"})

    async def floor() -> float:
        times = []
        state = world.slot("notes").read_state()
        assert isinstance(state, HookState)
        with bound_state(state.value):
            for _ in range(args.calls):
                started = time.perf_counter()
                await mcp.call_tool("list_notes", {})
                times.append(time.perf_counter() - started)
        return round(statistics.median(times) * 1000, 3)

    results: dict[str, float] = {"server_call_tool_ms": asyncio.run(floor())}
    results["hub_read_ms"] = _median_ms(lambda: world.call("notes__list_notes", {}), args.calls)
    # Each write in a fresh fork of the 20-note world (forking is not timed), so the state keeps its size.
    forks = [world.fork() for _ in range(args.calls)]
    results["hub_write_ms"] = _median_ms(lambda: forks.pop().call("notes__add_note", {"text": "x"}), args.calls)
    results["added_read_ms"] = round(results["hub_read_ms"] - results["server_call_tool_ms"], 3)
    results["added_write_ms"] = round(results["hub_write_ms"] - results["server_call_tool_ms"], 3)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        print(f"{key:24} {value:>8}")


if __name__ == "__main__":
    main()
