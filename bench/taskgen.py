"""Task-generation benchmark: verified tasks per second and the shape of 1,000 generated tasks.

Run: ``python bench/taskgen.py [--n 1000] [--workers 2] [--source patterns|walks] [--json]``. Prints the generation rate
in one process and with ``--workers`` processes (same tasks either way: generation is
deterministic per seed), then the statistics of the batch against the issue's targets.

Both rates are measured on a built hub (``setup_s`` is the time to build it): the worker
processes are forked from this one and share its hub, as ``compoworld tasks generate --workers``
shares the hub it builds once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGETS = {
    "tasks_per_s": 50,  # on 2 processes, every gate (the adversary gate included)
    "median_services": 5,
    "median_written_services": 3,
    "median_distractors": 10,
    "median_oracle_calls": 12,
    "rule_share": 0.40,
    "rule_branch_share": 0.13,
    "trap_share": 0.30,
    "distinct_service_combos": 200,
}
"""Issue "Workflows people ask for" (pattern tasks); walk tasks were held to 60 tasks/s, 3 services."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rate-n", type=int, default=150, help="tasks for the single-process rate")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--source", choices=("patterns", "walks"), default="patterns")
    args = parser.parse_args()

    from taskgen.generate import default_hub, generate, generate_parallel, prepared, stats

    started = time.perf_counter()
    hub = default_hub()
    hub_s = time.perf_counter() - started
    # One-time work per hub and seed, not per task: the seeded state of every service and the
    # walker's caches of tool signatures and seeded values. Both rates below exclude it.
    prepared(hub, args.seed)
    generate(2, seed=args.seed + 1, hub=hub, source=args.source)  # warm what the first attempts would otherwise build
    setup_s = time.perf_counter() - started
    # The parallel run goes first: its workers are forked from this process, and would otherwise
    # inherit the caches the single-process run warms for this seed.
    started = time.perf_counter()
    batch = generate_parallel(args.n, seed=args.seed, workers=args.workers, hub=hub, source=args.source)
    parallel_rate = len(batch.tasks) / (time.perf_counter() - started)
    started = time.perf_counter()
    single = generate(args.rate_n, seed=args.seed, hub=hub, source=args.source)
    single_rate = len(single.tasks) / (time.perf_counter() - started)
    data = stats(batch.tasks, dict(batch.rejections))
    report = {
        "hub_s": round(hub_s, 2),
        "setup_s": round(setup_s, 2),
        "tasks_per_s_1_process": round(single_rate, 1),
        f"tasks_per_s_{args.workers}_processes": round(parallel_rate, 1),
        "attempts": batch.attempts,
        "acceptance": round(len(batch.tasks) / max(1, batch.attempts), 3),
        **data,
        "targets": TARGETS,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        if key != "targets":
            target = TARGETS.get(key) or (TARGETS["tasks_per_s"] if key.startswith("tasks_per_s") else None)
            print(f"{key:28} {json.dumps(value):>24}   {'target ' + str(target) if target else ''}")


if __name__ == "__main__":
    main()
