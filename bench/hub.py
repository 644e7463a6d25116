"""Hub benchmark: 500 services x 20 tools (10,000 tools), ours against FastMCP's mount().

Run: ``python bench/hub.py`` (a table) or ``python bench/hub.py --json``
(``{"ours": {...}, "peer": {...}, "ratios": {...}}``). Each side runs in its own subprocess so
that peak RSS and import costs are its own; both run in the same invocation, since these
machines are shared and noisy and only side-by-side ratios are meaningful.

Figures: ``build_s`` (constructing 500 services with their tools and the hub/parent server),
``list_tools_s`` (list_tools of all 10k tools through an in-memory MCP client, warm),
``call_median_ms`` / ``call_p99_ms`` (call_tool through that client), ``inprocess_call_median_us``
(a call without MCP, validation and envelope included), ``reset_median_ms``, ``fork_median_ms``
and ``hash_median_ms`` for a world of the 15+ seeded native services (hash measured after a write),
and ``peak_rss_mb`` after opening 100 worlds over the 10k-tool hub.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N_SERVICES, N_TOOLS = 500, 20
KEYS = (
    "build_s",
    "list_tools_s",
    "call_median_ms",
    "call_p99_ms",
    "inprocess_call_median_us",
    "reset_median_ms",
    "fork_median_ms",
    "hash_median_ms",
    "peak_rss_mb",
)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------------------------
# Ours


def _synthetic_models() -> tuple[Any, Any, Any]:
    from typing import Annotated

    from servers.framework import Record, ServiceState
    from servers.types import Note, Title, ident

    ItemId = Annotated[str, ident("synthetic", "item")]

    class Item(Record):
        id: ItemId
        title: Title
        note: Note = ""

    class State(ServiceState):
        items: dict[str, Item] = {}

    return ItemId, Item, State


_MODELS: tuple[Any, Any, Any] | None = None


def synthetic_service(index: int) -> Any:
    """Service number ``index``: 10 reads and 10 writes over one shared synthetic state model."""
    from servers.framework import Service, require
    from servers.types import Note

    global _MODELS
    if _MODELS is None:
        _MODELS = _synthetic_models()
    ItemId, Item, State = _MODELS

    def seed(rng: random.Random, world: Any) -> Any:
        state = State()
        for _ in range(10):
            item = Item(id=state.new_id("item"), title=f"item {rng.randrange(1000)}")
            state.items[item.id] = item
        return state

    service = Service(
        f"svc{index:03d}", version=1, category="synthetic", description="Synthetic.", state=State, seed=seed
    )
    for k in range(N_TOOLS // 2):

        def get_item(state: Any, item_id: Any) -> Any:
            return require(state.items, item_id, "item")

        def set_note(state: Any, item_id: Any, note: Any) -> Any:
            item = require(state.items, item_id, "item")
            item.note = note
            return item

        for func, kind, doc in ((get_item, "read", "Get an item."), (set_note, "write", "Set an item's note.")):
            func.__name__ = f"{func.__name__}_{k}"
            func.__doc__ = f"{doc}\n\nArgs:\n    item_id: Id of the item.\n    note: The new note.\n"
            func.__annotations__ = {"state": State, "item_id": ItemId, "note": Note, "return": Item}
            if kind == "read":
                func.__annotations__.pop("note")
            (service.read if kind == "read" else service.write)(func)
    return service


def run_ours() -> dict[str, Any]:
    import anyio
    from mcp import Client

    from hub.core import Hub
    from hub.surfaces import world_server
    from servers.registry import all_services
    from servers.serving import list_all_tools

    natives = list(all_services().values())  # imported before timing: both sides start warm
    started = time.perf_counter()
    services = [synthetic_service(i) for i in range(N_SERVICES)]
    hub = Hub.native(services)
    build_s = time.perf_counter() - started
    world = hub.open_world(seed=0)

    calls: list[float] = []
    inproc: list[float] = []
    cached: list[float] = []
    for i in range(2000):
        name = f"svc{i % N_SERVICES:03d}__get_item_{i % 10}"
        t = time.perf_counter()
        world.call(name, {"item_id": "item_0003"})
        inproc.append((time.perf_counter() - t) * 1e6)

    async def via_client() -> float:
        async with Client(world_server(world, "direct")) as client:
            await list_all_tools(client)  # warm hub: the listing is computed (and paged) once per service set
            t = time.perf_counter()
            listed = await list_all_tools(client)  # a full fetch of every page (only page 1 is cached)
            elapsed = time.perf_counter() - t
            t = time.perf_counter()
            await client.list_tools()
            cached.append(time.perf_counter() - t)
            assert len(listed) == N_SERVICES * N_TOOLS
            for i in range(500):
                t = time.perf_counter()
                await client.call_tool(f"svc{i % N_SERVICES:03d}__get_item_{i % 10}", {"item_id": "item_0003"})
                calls.append((time.perf_counter() - t) * 1000)
            return elapsed

    list_s = anyio.run(via_client)

    real = Hub.native(natives)
    seeded = real.open_world(seed=0)
    seeded.hash()
    resets, forks, hashes = [], [], []
    writes = [("email__send_message", {"to": ["a@b.co"], "subject": "s", "body": "b"})]
    for _ in range(200):
        t = time.perf_counter()
        seeded.reset()
        resets.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        child = seeded.fork()
        forks.append((time.perf_counter() - t) * 1000)
        child.close()
        seeded.call(*writes[0])
        t = time.perf_counter()
        seeded.hash()
        hashes.append((time.perf_counter() - t) * 1000)
    worlds = [hub.open_world(seed=0) for _ in range(100)]
    for w in worlds:
        w.call("svc000__set_note_0", {"item_id": "item_0001", "note": "touched"})
    return {
        "build_s": build_s,
        "list_tools_s": list_s,
        "list_tools_cached_s": cached[0],
        "call_median_ms": statistics.median(calls),
        "call_p99_ms": _p(calls, 0.99),
        "inprocess_call_median_us": statistics.median(inproc),
        "reset_median_ms": statistics.median(resets),
        "fork_median_ms": statistics.median(forks),
        "hash_median_ms": statistics.median(hashes),
        "peak_rss_mb": _rss_mb(),
        "native_services": len(natives),
    }


# --------------------------------------------------------------------------------------------
# Peer: FastMCP, one server per service, mounted on a parent


def run_peer() -> dict[str, Any]:
    import anyio
    from fastmcp import Client, FastMCP

    started = time.perf_counter()
    parent = FastMCP("hub")
    for index in range(N_SERVICES):
        child = FastMCP(f"svc{index:03d}")
        items = {f"item_{n:04d}": {"id": f"item_{n:04d}", "title": f"item {n}", "note": ""} for n in range(1, 11)}
        for k in range(N_TOOLS // 2):

            def get_item(item_id: str, _items: dict[str, Any] = items) -> dict[str, Any]:
                return {"success": True, "data": _items[item_id]}

            def set_note(item_id: str, note: str, _items: dict[str, Any] = items) -> dict[str, Any]:
                _items[item_id]["note"] = note
                return {"success": True, "data": _items[item_id]}

            child.tool(get_item, name=f"get_item_{k}", description="Get an item.")
            child.tool(set_note, name=f"set_note_{k}", description="Set an item's note.")
        parent.mount(child, namespace=f"svc{index:03d}")
    build_s = time.perf_counter() - started
    calls: list[float] = []

    async def via_client() -> float:
        async with Client(parent) as client:
            await client.list_tools()
            t = time.perf_counter()
            listed = await client.list_tools()
            elapsed = time.perf_counter() - t
            assert len(listed) == N_SERVICES * N_TOOLS, len(listed)
            for i in range(100):
                t = time.perf_counter()
                await client.call_tool(f"svc{i % N_SERVICES:03d}_get_item_{i % 10}", {"item_id": "item_0003"})
                calls.append((time.perf_counter() - t) * 1000)
            return elapsed

    list_s = anyio.run(via_client)
    return {
        "build_s": build_s,
        "list_tools_s": list_s,
        "call_median_ms": statistics.median(calls),
        "call_p99_ms": _p(calls, 0.99),
        "inprocess_call_median_us": None,
        "reset_median_ms": None,
        "fork_median_ms": None,
        "hash_median_ms": None,
        "peak_rss_mb": _rss_mb(),
    }


# --------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--side", choices=["ours", "peer"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(run_ours() if args.side == "ours" else run_peer()))
        return
    results = {}
    for side in ("ours", "peer"):
        out = subprocess.run([sys.executable, __file__, "--side", side], capture_output=True, text=True, check=True)
        results[side] = json.loads(out.stdout.strip().splitlines()[-1])
    ratios = {}
    for key in KEYS:
        ours, peer = results["ours"].get(key), results["peer"].get(key)
        ratios[key] = round(peer / ours, 1) if ours and peer else None
    report = {"ours": results["ours"], "peer": results["peer"], "ratios": ratios}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{'figure':28} {'ours':>12} {'FastMCP mount':>14} {'peer/ours':>10}")
    for key in KEYS:
        ours, peer = results["ours"].get(key), results["peer"].get(key)
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        print(f"{key:28} {fmt(ours):>12} {fmt(peer):>14} {ratios[key] if ratios[key] else '':>10}")


if __name__ == "__main__":
    main()
