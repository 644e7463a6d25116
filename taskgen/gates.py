"""The four gates every generated task passes before it is kept.

1. ``oracle``: the oracle plan runs without an error and scores 1.0 (net 1.0 too).
2. ``null``: a do-nothing agent passes none of the positive criteria and scores 0 (negative
   criteria pass trivially for it: they act as penalties, not points).
3. ``necessary``: removing any single write step of the oracle plan fails at least one criterion.
4. ``leak``: no carried or reported value appears in the instruction.
"""

from __future__ import annotations

from hub.core import Hub
from taskgen.compose import leaks
from taskgen.oracle import OracleRun, continue_plan, run_plan
from taskgen.task import Task

GATES = ("oracle", "null", "necessary", "leak")


def check_gates(hub: Hub, task: Task, oracle: OracleRun | None = None) -> list[str]:
    """The names of the gates ``task`` fails (empty: keep it); ``oracle`` reuses a fresh oracle run."""
    failed: list[str] = []
    positives = [c for c in task.rubric.criteria if not c.negative]
    if not positives:
        return ["oracle"]
    writes = [i for i, step in enumerate(task.plan) if hub.registry.tools[step.tool].kind == "write"]
    if oracle is None or not set(writes) <= set(oracle.checkpoints):
        oracle = run_plan(hub, task.plan, task.seed, task.mounted, record=False, checkpoints=writes)
    try:
        result = oracle.world.score(task.rubric, report=task.expected_report)
        if not all(e.get("success") for e in oracle.envelopes) or result.score < 1.0 or result.net_score < 1.0:
            failed.append("oracle")
    finally:
        oracle.world.close()
    null = hub.open_world(services=task.mounted, seed=task.seed)
    try:
        result = null.score(task.rubric, report={})
        if result.score != 0 or any(c.passed for c in result.criteria if not c.negative):
            failed.append("null")
    finally:
        null.close()
    for index in writes:
        # Resume from the oracle's world just before the step, so the steps before it are not re-run.
        start = oracle.checkpoints.pop(index)
        dropped = continue_plan(start, task.plan, oracle.envelopes[:index], index, skip=[index], record=False)
        try:
            if dropped.world.score(task.rubric, report=task.expected_report).score >= 1.0:
                failed.append("necessary")
                break
        finally:
            dropped.world.close()
    for leftover in oracle.checkpoints.values():
        leftover.close()
    if leaks(task):
        failed.append("leak")
    return failed
