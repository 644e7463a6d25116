"""Start-up and call cost of the library now that catalog services run from their specs.

Prints, each the median of ``--repeat`` fresh processes (the disk schema cache warm, as on any
machine after the first run):

- ``help_s``: ``compoworld --help``;
- ``services_list_s``: ``compoworld services list``;
- ``hub_build_s``: a new Python process importing the hub and building the default hub (every
  service) in process;
- ``hub_serve_first_list_s``: launching ``compoworld hub serve`` (stdio, every service) to its
  first ``tools/list`` answer, through the MCP client;
- ``call_ratio_vs_generated``: a spec-run service's in-process call (``service.call``) against the
  same service ejected as Python code (``compoworld services eject``, what ``servers/built`` held),
  side by side in one process on the same calls: engine median / ejected median (target ≤ 1.5).

Targets (issue "Catalog services run from their specs"): help ≤ 0.5 s, services list ≤ 1.5 s,
hub build ≤ 1.0 s, hub serve first list ≤ 2.0 s. ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from serving import first_listing_s  # bench/serving.py: launch to the first tools/list over stdio

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"help_s": 0.5, "services_list_s": 1.5, "hub_build_s": 1.0, "hub_serve_first_list_s": 2.0,
           "call_ratio_vs_generated": 1.5}  # fmt: skip
CLI = str(Path(sys.executable).with_name("compoworld"))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _wall(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=_env(), check=True, capture_output=True)
    return time.perf_counter() - started


def _hub_build() -> float:
    code = (
        "import time; t = time.perf_counter(); from hub.core import Hub; Hub.native(); print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), check=True, capture_output=True,
                          text=True)  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def _call_ratio(name: str = "fleet", rounds: int = 2000) -> tuple[float, float, float]:
    sys.path.insert(0, str(ROOT))
    from servers.construction.loader import load_service
    from servers.construction.spec import CATALOG_DIR, load_spec
    from servers.construction.template import compile_spec
    from servers.engine import build_service

    spec = load_spec(CATALOG_DIR / f"{name}.json")
    engine, ejected = build_service(spec), load_service(compile_spec(spec, formatted=False), name, "bench")
    states = {id(engine): engine.seed_state(0), id(ejected): ejected.seed_state(0)}
    vehicle = sorted(states[id(engine)].vehicles)[0]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_vehicle", {"vehicle_id": vehicle}),
        ("list_vehicles", {"status": "active", "limit": 5}),
        ("tag_vehicle", {"vehicle_id": vehicle, "tag": "bench"}),
        ("untag_vehicle", {"vehicle_id": vehicle, "tag": "bench"}),
        ("plan_trip", {"vehicle_id": "veh_9999", "driver_id": "drv_9999", "destination": "Oslo",
                       "customer": "Acme", "planned_for": "2026-03-05T09:00:00Z"}),  # a 404: the check path
    ]  # fmt: skip
    times: dict[int, list[float]] = {id(engine): [], id(ejected): []}
    for _ in range(rounds):
        for service in (engine, ejected):  # interleaved: both see the same machine noise
            state = states[id(service)]
            started = time.perf_counter()
            for tool, arguments in calls:
                service.call(state, tool, arguments)
            times[id(service)].append((time.perf_counter() - started) / len(calls))
    a, b = statistics.median(times[id(engine)]), statistics.median(times[id(ejected)])
    return a / b, a * 1e6, b * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    _hub_build()  # warms the disk schema cache, as any earlier run on the machine does
    results: dict[str, Any] = {
        "help_s": statistics.median(_wall([CLI, "--help"]) for _ in range(args.repeat)),
        "services_list_s": statistics.median(_wall([CLI, "services", "list"]) for _ in range(args.repeat)),
        "hub_build_s": statistics.median(_hub_build() for _ in range(args.repeat)),
        "hub_serve_first_list_s": statistics.median(
            asyncio.run(first_listing_s(["-m", "training.cli", "hub", "serve"])) for _ in range(args.repeat)
        ),
    }
    ratio, engine_us, ejected_us = _call_ratio()
    results |= {"call_ratio_vs_generated": ratio, "call_engine_us": engine_us, "call_generated_us": ejected_us}
    results = {k: round(v, 3) for k, v in results.items()}
    results["met"] = {k: results[k] <= target for k, target in TARGETS.items()}
    if args.json:
        print(json.dumps(results))
        return
    for key, value in results.items():
        if key != "met":
            target = TARGETS.get(key)
            mark = "" if target is None else f"  (target ≤ {target}: {'met' if results['met'][key] else 'MISSED'})"
            print(f"{key:26s} {value}{mark}")


if __name__ == "__main__":
    main()
