"""Checking workflow patterns against the library: what ``compoworld tasks patterns`` prints.

Each pattern is instantiated ``attempts`` times (its own random streams) and gated like any
generated task; the report gives, per pattern, how many attempts became verified tasks, the
services they used, the rejection reasons, and the instructions written. A pattern author runs it
after every edit: a pattern that never lands names the reaction no service could carry out, and
``dropped`` counts, per reaction, the kept tasks that went without it (a reaction whose hop found no
one, or an optional one no service offered: the request silently asks for less than the pattern
says; a reaction a house rule skipped is not dropped).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from taskgen.gates import check_gates
from taskgen.generate import TRIGGER_TRIES, default_hub, pattern_distractors
from taskgen.instantiate import instantiate
from taskgen.pattern import load_patterns
from taskgen.story import compose_flow
from taskgen.walk import WalkError, walker_for
from taskgen.workflow import Workflows


def check_patterns(attempts: int = 20, seed: int = 0, only: list[str] | None = None) -> dict[str, Any]:
    hub = default_hub()
    walker = walker_for(hub, seed)
    workflows = Workflows(hub, walker)
    rows = []
    for pattern in load_patterns():
        if only and pattern.id not in only:
            continue
        rejections: Counter[str] = Counter()
        services: Counter[str] = Counter()
        examples: list[str] = []
        dropped: Counter[str] = Counter()
        kept = 0
        for index in range(attempts):
            rng = random.Random(f"patterns-check:{pattern.id}:{seed}:{index}")
            flow, reason = None, ""
            for _ in range(TRIGGER_TRIES):
                try:
                    flow = instantiate(workflows, pattern, rng)
                    break
                except WalkError as exc:
                    reason = exc.reason
            if flow is None:
                rejections[reason] += 1
                continue
            stage = flow.stages[0]
            branch = stage.branch
            present = {d.reaction.id for d in stage.done}
            if branch is not None and branch.held:  # the rule skipped it, and what acts on its record
                present |= {branch.rule.skip} | {r.id for r in pattern.reactions if r.follows == branch.rule.skip}
            missing = [r.id for r in pattern.reactions if r.id not in present]
            try:
                task = compose_flow(flow, f"{pattern.id}-{index}", seed, rng, pattern_distractors(workflows, flow, rng))
            finally:
                flow.close()
            failed = check_gates(hub, task, walker)
            if failed:
                rejections.update(f"gate:{g}" for g in failed)
                continue
            kept += 1
            dropped.update(missing)
            services.update(task.services)
            examples.append(task.instruction)
        rows.append({"id": pattern.id, "category": pattern.category, "attempts": attempts, "kept": kept,
                     "services": [s for s, _ in services.most_common()], "rejections": dict(rejections),
                     "dropped": dict(dropped), "examples": examples})  # fmt: skip
    return {"seed": seed, "patterns": rows}
