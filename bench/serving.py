"""Serving benchmark: our MCP servers against a plain FastMCP server of the same services (issue 15).

Run: ``python bench/serving.py`` (a table) or ``python bench/serving.py --json``
(``{"ours": {...}, "peer": {...}, "ratios": {...}, "targets": {...}, "met": {...}}``);
``--quick`` runs one repetition and few calls (a smoke run for tests, not for numbers).
Both sides run in the same invocation, since these machines are shared and noisy and only
side-by-side ratios are meaningful; every server is a subprocess of its own and the one client
(this process, the official ``mcp.Client``) measures both the same way.

The peer is the server a user would write with FastMCP 4: a script (written to a temporary file)
that takes our services from ``servers.registry.get_service`` and registers each tool as a
``fastmcp.tools.Tool`` whose parameters are our input schema and whose ``run`` calls
``service.call(state, tool, arguments)``, served with ``mcp.run()`` (stdio) or ``mcp.http_app()``
under uvicorn (HTTP).

Figures:

- ``startup_service_s``: launch (a new process) to the first ``tools/list`` answer over stdio for
  one service: ``compoworld services serve email`` against the peer script serving email.
- ``startup_hub_subset_s``: the same for ``compoworld hub serve --services email,crm,calendar``
  against the peer script serving those three services (tools named ``<service>__<tool>``).
- ``http_call_full_median_ms`` / ``http_call_full_p99_ms``: ``tools/call`` with arguments
  (``email__list_messages {"limit": 2}``) over streamable HTTP on the full default world (ours:
  ``HubHTTP(default_hub())``, a world opened with ``POST /admin/worlds``; peer: every native
  service in one FastMCP server), after the client has listed every page.
  ``http_call_small_*`` is the same on a 2-service world (email, crm).
- ``blocked_extra_ms``: how much a hung call in world A (3 s) adds to the median of calls in world
  B of the same server (calls started while A's call hangs, minus B's median alone). Ours: worlds
  of one ``HubHTTP`` whose world A sleeps in every call. Peer: FastMCP has no worlds, so one
  server of email and crm with a plain ``def`` tool that sleeps 3 s (FastMCP 4 runs sync tools
  on a worker thread), and B is another tool of it. ``blocked_extra_async_tool_ms`` (peer only)
  is the same with an ``async def`` tool that blocks, as the peer's ``ServiceTool.run`` does when
  a service call hangs.
- ``max_message_bytes``: the largest ``tools/list`` result (one page: its JSON) listing the full
  default world over HTTP (ours pages its listings; the peer sends one message);
  ``list_total_bytes`` sums the pages. The peer's tools carry what our hub's direct listing
  carries (name, description, input schema, annotations; no output schema), so the difference is
  the paging.

Targets (issue 15, 2 cores): startup_service_s <= 1.0, startup_hub_subset_s <= 1.5,
http_call_full_median_ms <= 3, blocked_extra_ms <= 20, max_message_bytes <= 1 MiB.
Every step has a deadline, and every subprocess is ended on the way out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ADMIN_TOKEN = "bench-admin"
SLOW_SEED = 4242  # world A: every call of a world opened with this seed hangs for HANG_S
HANG_S = 3.0
SERVICE = "email"
SUBSET = ("email", "crm", "calendar")
SMALL = ("email", "crm")
CALL = ("email__list_messages", {"limit": 2})
SERVER_START_S = 180.0  # an HTTP server of every service must answer within this
STARTUP_LIMIT_S = 120.0  # one stdio launch to first listing
CALL_LIMIT_S = 30.0

KEYS = (
    "startup_service_s",
    "startup_hub_subset_s",
    "http_call_full_median_ms",
    "http_call_full_p99_ms",
    "http_call_small_median_ms",
    "http_call_small_p99_ms",
    "blocked_extra_ms",
    "blocked_extra_async_tool_ms",
    "max_message_bytes",
    "list_total_bytes",
)
TARGETS: dict[str, float] = {
    "startup_service_s": 1.0,
    "startup_hub_subset_s": 1.5,
    "http_call_full_median_ms": 3.0,
    "blocked_extra_ms": 20.0,
    "max_message_bytes": 1_048_576,
}

# --------------------------------------------------------------------------------------------
# The peer: a plain FastMCP server of our services, as a user would write it


PEER_SCRIPT = '''\
"""A plain FastMCP server of CompoWorld services (the peer of bench/serving.py).

usage: peer.py SERVICE[,SERVICE...]|--all [--http PORT] [--hang]
One service: its tools under their own names; several: ``<service>__<tool>``.
"""

import json
import sys
import time
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations

from servers.registry import all_services, get_service

STATES: dict[str, Any] = {}


class ServiceTool(Tool):
    """One CompoWorld tool: its parameters are the tool's input schema, running it calls the service."""

    service_name: str
    tool_name: str

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        service, state = STATES[self.service_name]
        envelope = service.call(state, self.tool_name, arguments)
        return ToolResult(
            content=[TextContent(type="text", text=json.dumps(envelope))],
            structured_content=envelope,
            is_error=not envelope.get("success", False),
        )


def build(names: list[str], namespaced: bool) -> FastMCP:
    mcp = FastMCP("compoworld-peer")
    for name in names:
        service = get_service(name)
        STATES[name] = (service, service.seed_state(0))
        for tool in service.tools.values():
            mcp.add_tool(
                ServiceTool(
                    name=f"{name}__{tool.name}" if namespaced else tool.name,
                    description=tool.description,
                    parameters=tool.input_schema,
                    annotations=ToolAnnotations(
                        read_only_hint=tool.kind == "read", destructive_hint=tool.kind == "write"
                    ),
                    service_name=name,
                    tool_name=tool.name,
                )
            )
    return mcp


def hang(seconds: float = 3.0) -> str:
    """Wait ``seconds`` (a call to a hung backend)."""
    time.sleep(seconds)
    return "done"


async def hang_async(seconds: float = 3.0) -> str:
    """Wait ``seconds`` in a blocking call inside an async tool (as ServiceTool.run calls services)."""
    time.sleep(seconds)
    return "done"


if __name__ == "__main__":
    names = list(all_services()) if sys.argv[1] == "--all" else sys.argv[1].split(",")
    mcp = build(names, namespaced=len(names) > 1)
    if "--hang" in sys.argv:
        mcp.tool(hang)
        mcp.tool(hang_async)
    if "--http" in sys.argv:
        import uvicorn

        port = int(sys.argv[sys.argv.index("--http") + 1])
        uvicorn.run(mcp.http_app(), host="127.0.0.1", port=port, log_level="warning")
    else:
        mcp.run(show_banner=False)
'''


# --------------------------------------------------------------------------------------------
# Our HTTP server, with world A hanging (run as ``serving.py --serve-ours PORT``)


def serve_ours(port: int) -> None:
    import uvicorn

    from hub.http import HubHTTP, WorldAccess
    from servers.serving import CallFn
    from taskgen.generate import default_hub

    class SlowWorlds(HubHTTP):
        """World A (opened with SLOW_SEED) takes HANG_S seconds per call: a hung external tool."""

        def call_function(self, access: WorldAccess) -> CallFn:
            inner = super().call_function(access)
            if access.world.seed != SLOW_SEED:
                return inner

            def call(name: str, arguments: dict[str, Any]) -> Any:
                time.sleep(HANG_S)
                return inner(name, arguments)

            return call

    front = SlowWorlds(default_hub(), admin_token=ADMIN_TOKEN, call_timeout=HANG_S + 30)
    uvicorn.run(front.app(), host="127.0.0.1", port=port, log_level="warning")


# --------------------------------------------------------------------------------------------
# Helpers


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _die_with_parent() -> None:
    """Run in a server child before it starts: it gets SIGTERM when the bench dies, even killed
    with SIGKILL (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class Servers:
    """HTTP server subprocesses, each in its own process group, all ended on exit."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, *args, str(port)],
            cwd=ROOT,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.procs.append(proc)
        return proc, port

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _wait_ready(proc: subprocess.Popen[bytes], port: int, deadline: float) -> None:
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
            raise RuntimeError(f"server {proc.args!r} exited with {proc.returncode}: {err}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"server {proc.args!r} did not listen on port {port} in time")
        time.sleep(0.1)


# --------------------------------------------------------------------------------------------
# Measurements (client side)


async def first_listing_s(args: list[str]) -> float:
    """Seconds from launching ``python ARGS`` to the first ``tools/list`` answer over stdio."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=args, cwd=ROOT, env=_env())
    with open(os.devnull, "w") as devnull, anyio.fail_after(STARTUP_LIMIT_S):
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=devnull)) as client:
            listed = await client.list_tools()
            elapsed = time.perf_counter() - started
            assert listed.tools, "the server listed no tools"
    return elapsed


def _client(url: str, token: str | None = None) -> Any:
    import httpx2 as httpx
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx.AsyncClient(headers=headers, timeout=CALL_LIMIT_S + HANG_S)
    return Client(streamable_http_client(url, http_client=http))


async def _pages(client: Any) -> list[int]:
    """Every ``tools/list`` page, following cursors: the size in bytes of each page's JSON."""
    sizes: list[int] = []
    cursor: str | None = None
    for _ in range(10_000):
        page = await (client.list_tools(cursor=cursor) if cursor else client.list_tools())
        sizes.append(len(page.model_dump_json(by_alias=True, exclude_none=True).encode()))
        cursor = page.next_cursor
        if cursor is None:
            break
    return sizes


async def _call(client: Any, name: str, arguments: dict[str, Any]) -> float:
    """One ``tools/call``, in milliseconds; the envelope must be a success."""
    import anyio

    with anyio.fail_after(CALL_LIMIT_S + HANG_S):
        started = time.perf_counter()
        result = await client.call_tool(name, arguments)
        elapsed = (time.perf_counter() - started) * 1000
    envelope = result.structured_content
    if not isinstance(envelope, dict) or not envelope.get("success"):
        raise RuntimeError(f"{name} answered {str(envelope)[:300]}")
    return elapsed


async def _calls(url: str, token: str | None, n: int) -> tuple[list[float], list[int]]:
    """List every page (so the client knows every tool), then ``n`` timed calls after 10 untimed."""
    async with _client(url, token) as client:
        sizes = await _pages(client)
        for _ in range(10):
            await _call(client, *CALL)
        return [await _call(client, *CALL) for _ in range(n)], sizes


async def _blocked(
    b_url: str, b_token: str | None, hang: Callable[[], Coroutine[Any, Any, Any]], n: int
) -> tuple[float, float, int]:
    """B's call median alone and while ``hang()`` runs (only calls started during the hang)."""
    import anyio

    async with _client(b_url, b_token) as client:
        await _pages(client)
        for _ in range(10):
            await _call(client, *CALL)
        alone = [await _call(client, *CALL) for _ in range(n)]
        during: list[float] = []
        with anyio.fail_after(HANG_S + 2 * CALL_LIMIT_S):
            async with anyio.create_task_group() as group:
                group.start_soon(hang)
                await anyio.sleep(0.3)  # the hanging call is in the server now
                until = time.perf_counter() + HANG_S - 0.6
                while not during or time.perf_counter() < until:
                    during.append(await _call(client, *CALL))
    return statistics.median(alone), statistics.median(during), len(during)


def _summary(calls: list[float], prefix: str) -> dict[str, float]:
    return {f"{prefix}_median_ms": statistics.median(calls), f"{prefix}_p99_ms": _p(calls, 0.99)}


async def _http_ours(base: str, n: int) -> dict[str, Any]:
    import httpx2 as httpx

    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with httpx.AsyncClient(headers=admin, timeout=120) as http:

        async def world(**body: Any) -> dict[str, Any]:
            response = await http.post(f"{base}/admin/worlds", json={"surface": "direct", **body})
            if response.status_code != 201:
                raise RuntimeError(f"opening a world answered {response.status_code}: {response.text[:300]}")
            return dict(response.json())

        full = await world(seed=0)
        small = await world(seed=0, services=list(SMALL))
        a = await world(seed=SLOW_SEED, services=list(SMALL))
        b = await world(seed=0, services=list(SMALL))

    out: dict[str, Any] = {}
    calls, sizes = await _calls(full["url"], full["token"], n)
    out.update(_summary(calls, "http_call_full"))
    out["max_message_bytes"] = max(sizes)
    out["list_pages"], out["list_total_bytes"] = len(sizes), sum(sizes)
    calls, _ = await _calls(small["url"], small["token"], n)
    out.update(_summary(calls, "http_call_small"))

    async def hang() -> None:
        async with _client(a["url"], a["token"]) as client:
            await _call(client, *CALL)

    alone, during, count = await _blocked(b["url"], b["token"], hang, n)
    out.update(blocked_alone_median_ms=alone, blocked_during_median_ms=during, blocked_calls=count)
    out["blocked_extra_ms"] = during - alone
    return out


async def _http_peer(full_url: str, small_url: str, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    calls, sizes = await _calls(full_url, None, n)
    out.update(_summary(calls, "http_call_full"))
    out["max_message_bytes"] = max(sizes)
    out["list_pages"], out["list_total_bytes"] = len(sizes), sum(sizes)
    calls, _ = await _calls(small_url, None, n)
    out.update(_summary(calls, "http_call_small"))

    for tool, key in (("hang", "blocked_extra_ms"), ("hang_async", "blocked_extra_async_tool_ms")):

        async def hang(tool: str = tool) -> None:
            async with _client(small_url) as client:
                await client.call_tool(tool, {"seconds": HANG_S})

        alone, during, count = await _blocked(small_url, None, hang, n)
        suffix = key.removeprefix("blocked_extra").removesuffix("_ms")
        out.update({f"blocked{suffix}_alone_median_ms": alone, f"blocked{suffix}_during_median_ms": during})
        out[f"blocked{suffix}_calls"] = count
        out[key] = during - alone
    return out


# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _peer_script() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="compoworld-peer-") as folder:
        path = Path(folder) / "peer.py"
        path.write_text(PEER_SCRIPT)
        yield str(path)


def run(quick: bool) -> dict[str, dict[str, Any]]:
    import anyio

    reps, calls = (1, 20) if quick else (5, 200)
    ours: dict[str, Any] = {}
    peer: dict[str, Any] = {}
    cli = ["-m", "training.cli"]
    with _peer_script() as script:
        launches = {
            "startup_service_s": (
                [*cli, "services", "serve", SERVICE],
                [script, SERVICE],
            ),
            "startup_hub_subset_s": (
                [*cli, "hub", "serve", "--services", ",".join(SUBSET)],
                [script, ",".join(SUBSET)],
            ),
        }
        for key, (ours_args, peer_args) in launches.items():
            if not quick:  # one untimed launch each: both start with a warm file cache
                anyio.run(first_listing_s, ours_args)
                anyio.run(first_listing_s, peer_args)
            ours_s, peer_s = [], []
            for _ in range(reps):  # interleaved, so that noise falls on both sides alike
                ours_s.append(anyio.run(first_listing_s, ours_args))
                peer_s.append(anyio.run(first_listing_s, peer_args))
            ours[key], peer[key] = statistics.median(ours_s), statistics.median(peer_s)

        servers = Servers()
        try:  # the servers start together (their start is not measured), then are measured one by one
            ours_proc, ours_port = servers.start([__file__, "--serve-ours"])
            full_proc, full_port = servers.start([script, "--all", "--http"])
            small_proc, small_port = servers.start([script, ",".join(SMALL), "--hang", "--http"])
            deadline = time.monotonic() + SERVER_START_S
            for proc, port in ((ours_proc, ours_port), (full_proc, full_port), (small_proc, small_port)):
                _wait_ready(proc, port, deadline)
            ours.update(anyio.run(_http_ours, f"http://127.0.0.1:{ours_port}", calls))
            peer.update(
                anyio.run(_http_peer, f"http://127.0.0.1:{full_port}/mcp", f"http://127.0.0.1:{small_port}/mcp", calls)
            )
        finally:
            servers.close()
    return {"ours": ours, "peer": peer}


def report(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ours, peer = results["ours"], results["peer"]
    ratios: dict[str, float | None] = {}
    for key in KEYS:
        a, b = ours.get(key), peer.get(key)
        ratios[key] = round(b / a, 2) if a and b and a > 0 and b > 0 else None
    met = {key: ours.get(key) is not None and ours[key] <= target for key, target in TARGETS.items()}
    return {"ours": ours, "peer": peer, "ratios": ratios, "targets": TARGETS, "met": met}


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int) or (isinstance(value, float) and value >= 10_000):
        return f"{value:,.0f}"
    return f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="one repetition, 20 calls (a smoke run)")
    parser.add_argument("--serve-ours", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated bench still ends its servers
    if args.serve_ours:
        serve_ours(args.serve_ours)
        return
    result = report(run(args.quick))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'figure':28} {'ours':>12} {'FastMCP':>12} {'peer/ours':>10} {'target':>12} {'met':>4}")
    for key in KEYS:
        target = TARGETS.get(key)
        met = ("yes" if result["met"][key] else "NO") if key in TARGETS else ""
        ratio = result["ratios"][key]
        print(
            f"{key:28} {_fmt(result['ours'].get(key)):>12} {_fmt(result['peer'].get(key)):>12} "
            f"{'' if ratio is None else ratio:>10} {'' if target is None else '<= ' + _fmt(target):>12} {met:>4}"
        )


if __name__ == "__main__":
    main()
