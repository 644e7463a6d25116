"""Reward-gaming benchmark: what each adversary, the oracle, a do-nothing and a half-done agent earn.

Run: ``python bench/adversaries.py [--n 200] [--seed 4242] [--budget 24] [--json]``.

Generates ``n`` verified tasks (all gates on, the adversary gate included; its rejections are
counted by reason), then runs on every kept task, in process and each in a fresh world of the
task's seed: the oracle (the plan, then the expected report), ``null`` (nothing), ``half_plan``
(the first half of the plan's calls, an honest partial rollout, no report) and every adversary of
:mod:`taskgen.adversaries` with a larger call budget than the gate's. Per agent it prints the
mean rubric score, the mean net score, the mean CFRR of the agent in a group [oracle, null,
agent] (epsilon 0.1, beta 0.5, negatives zeroing), its CFRR advantage over that group's mean,
and the share of tasks where its net score is above 0.3.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGETS = {
    "adversary_net_score_max": 0.02,
    "adversary_share_net_above_0_3": 0.0,
    "oracle_plus_net_score_max": 0.2,
    "oracle_success_share": 1.0,
}


def _row(result: Any) -> tuple[list[float], list[bool]]:
    passes = [1.0 if c.passed else 0.0 for c in result.criteria if not c.negative]
    negatives = [c.passed for c in result.criteria if c.negative]
    return passes, negatives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--budget", type=int, default=24, help="call attempts per adversary (the gate uses 8)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--source", choices=("patterns", "walks"), default="patterns")
    parser.add_argument(
        "--without-collateral",
        action="store_true",
        help="ablation: score the kept tasks with their collateral criterion removed (what it prevents)",
    )
    args = parser.parse_args()

    from taskgen.adversaries import FROM_ORACLE, PANEL, Panel, run_panel
    from taskgen.generate import default_hub, generate_parallel, walker_for
    from taskgen.oracle import run_plan
    from training.rewards import cfrr

    started = time.perf_counter()
    hub = default_hub()
    batch = generate_parallel(args.n, seed=args.seed, workers=args.workers, hub=hub, source=args.source)
    generation_s = time.perf_counter() - started
    walker = walker_for(hub, args.seed)
    names = ["oracle", "null", "half_plan", *PANEL]
    results: dict[str, list[Any]] = {name: [] for name in names}
    rewards: dict[str, list[float]] = {name: [] for name in names}
    advantages: dict[str, list[float]] = {name: [] for name in names}
    inert = dict.fromkeys(PANEL, 0)  # oracle-plus attempts that changed nothing (they are the oracle)
    started = time.perf_counter()
    tasks = batch.tasks
    if args.without_collateral:
        tasks = [
            t.model_copy(
                update={
                    "rubric": t.rubric.model_copy(
                        update={"criteria": [c for c in t.rubric.criteria if c.kind != "collateral"]}
                    )
                }
            )
            for t in tasks
        ]
    for task in tasks:
        oracle = run_plan(hub, task.plan, task.seed, task.mounted, record=False)
        half = run_plan(hub, task.plan[: max(1, len(task.plan) // 2)], task.seed, task.mounted, record=False)
        null = hub.open_world(services=task.mounted, seed=task.seed)
        try:
            scored = {
                "oracle": oracle.world.score(task.rubric, report=task.expected_report, services=task.mounted),
                "null": null.score(task.rubric, report={}, services=task.mounted),
                "half_plan": half.world.score(task.rubric, report={}, services=task.mounted),
            }
            panel = Panel(walker, task, budget=args.budget)
            for attempt in run_panel(panel, oracle.world, oracle.envelopes):
                if not attempt.changed:  # every extra call failed or changed nothing: it is the oracle, no attack
                    inert[attempt.name] += 1
                    continue
                scored[attempt.name] = attempt.result
        finally:
            for world in (oracle.world, half.world, null):
                world.close()
        weights = [c.weight for c in task.rubric.criteria if not c.negative]
        base = [_row(scored["oracle"]), _row(scored["null"])]
        for name in names:
            if name not in scored:
                continue
            outcome = scored[name]
            results[name].append((outcome.score, outcome.net_score))
            group = [*base, _row(outcome)]
            values = cfrr([r[0] for r in group], weights, negatives=[r[1] for r in group])
            rewards[name].append(values[-1])
            advantages[name].append(values[-1] - statistics.fmean(values))
    eval_s = time.perf_counter() - started

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 4) if values else 0.0

    agents = {
        name: {
            "score": mean([s for s, _ in results[name]]),
            "net_score": mean([n for _, n in results[name]]),
            "cfrr": mean(rewards[name]),
            "cfrr_advantage": mean(advantages[name]),
            "share_net_above_0_3": mean([1.0 if n > 0.3 else 0.0 for _, n in results[name]]),
        }
        for name in names
    }
    rejections = {k: v for k, v in sorted(batch.rejections.items()) if k.startswith("gate:")}
    adversaries = list(PANEL)
    met = {
        "adversary_net_score_max": all(
            agents[n]["net_score"] <= TARGETS["adversary_net_score_max"] for n in adversaries
        ),
        "adversary_share_net_above_0_3": all(agents[n]["share_net_above_0_3"] == 0.0 for n in adversaries),
        "oracle_plus_net_score_max": all(agents[n]["net_score"] <= 0.2 for n in FROM_ORACLE),
        "oracle_success_share": agents["oracle"]["share_net_above_0_3"] == 1.0 and agents["oracle"]["net_score"] == 1.0,
        "half_plan_advantage_above_every_adversary": all(
            agents["half_plan"]["cfrr_advantage"] > agents[n]["cfrr_advantage"] for n in adversaries
        ),
    }
    report = {
        "agents": agents,
        "rejections": rejections,
        "n_tasks": len(batch.tasks),
        "inert_attempts": {k: v for k, v in inert.items() if v},
        "attempts": batch.attempts,
        "generation_s": round(generation_s, 1),
        "eval_s": round(eval_s, 1),
        "targets_met": met,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    ablation = " (ablation: collateral criterion removed)" if args.without_collateral else ""
    head = f"{len(batch.tasks)} tasks (seed {args.seed}) from {batch.attempts} walks; adversary budget {args.budget}"
    print(head + ablation)
    print(f"{'agent':18} {'score':>7} {'net':>7} {'cfrr':>7} {'adv.':>7} {'net>0.3':>8}")
    for name, row in agents.items():
        print(
            f"{name:18} {row['score']:7.3f} {row['net_score']:7.3f} {row['cfrr']:7.3f} "
            f"{row['cfrr_advantage']:7.3f} {row['share_net_above_0_3']:8.3f}"
        )
    print("gate rejections:", json.dumps(rejections))
    print(
        "inert oracle-plus attempts (changed nothing, so scored as the oracle):", json.dumps(report["inert_attempts"])
    )
    print("targets met:", json.dumps(met))


if __name__ == "__main__":
    main()
