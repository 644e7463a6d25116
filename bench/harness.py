"""Harness benchmark: oracle episodes per minute, in process and through the in-memory MCP surface.

Run: ``python bench/harness.py [--tasks 100] [--json]``. Recording is on (every call with its
write diff), as in a real run; episodes are also scored. The target is >= 1,000 oracle episodes
per minute on 2 cores on the in-process path; the MCP-surface rate is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from harness.agent_spec import make_agent
    from harness.episode import run_episode
    from taskgen.generate import default_hub, generate

    hub = default_hub()
    tasks = generate(args.tasks, seed=0, hub=hub).tasks
    oracle = make_agent("oracle")
    results = {}
    for surface in ("direct", "gateway"):
        for path in ("inprocess", "mcp"):
            run_episode(hub, tasks[0], oracle, surface, path)  # warm
            started = time.perf_counter()
            scores = [run_episode(hub, t, oracle, surface, path).score for t in tasks]  # type: ignore[arg-type]
            elapsed = time.perf_counter() - started
            assert all(s == 1.0 for s in scores)
            results[f"{path}_{surface}_episodes_per_min"] = round(len(tasks) / elapsed * 60)
    results["median_calls_per_task"] = sorted(len(t.plan) for t in tasks)[len(tasks) // 2]
    results["target_inprocess_episodes_per_min"] = 1000
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        print(f"{key:40} {value:>8}")


if __name__ == "__main__":
    main()
