"""Run metrics: plain, JSON-serialisable figures per agent, computed from a run's stored rows.

Everything here reads the run store's rows (``episodes``, ``criteria``, ``steps``) and nothing
else, so a report can be rebuilt at any time from the SQLite file alone, even while a run is
still writing (the store is in WAL mode).

**Success** is an episode that passes every criterion, negative ones included.

**pass@k and pass^k.** With ``n`` rollouts of one task of which ``c`` succeed, the unbiased
estimators (Chen et al. 2021 for pass@k; τ-bench for pass^k) are

- ``pass@k = 1 - C(n - c, k) / C(n, k)``: the probability that at least one of ``k`` rollouts
  drawn without replacement from the ``n`` succeeds (can the agent do it at all?);
- ``pass^k = C(c, k) / C(n, k)``: the probability that all ``k`` drawn rollouts succeed (does it
  do it reliably?).

Both are defined for ``1 <= k <= n``; at ``k = 1`` both equal ``c / n``. An agent's figure is
the mean over its tasks. ``k`` runs from 1 to the smallest ``n`` among the agent's tasks, so
every ``k`` averages over the same tasks; then pass@k never decreases and pass^k never
increases as ``k`` grows. Rollouts are grouped by (task, surface), so a run that mixes surfaces
does not pool them.

**Tool errors** are calls whose envelope says ``success: false``; discovery calls (gateway
meta-tools) and criteria without a service (reports) are counted under ``NO_SERVICE``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from math import comb
from typing import Any

from harness.store import RunStore

Row = Mapping[str, Any]

NO_SERVICE = "(none)"
DIGITS = 6


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: ``1 - C(n-c, k) / C(n, k)`` (n rollouts, c successes)."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k for one task: ``C(c, k) / C(n, k)`` (n rollouts, c successes)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c!r} must lie in 0..n={n!r}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k!r} must lie in 1..n={n!r}")


def _rate(hits: int, total: int) -> float | None:
    return round(hits / total, DIGITS) if total else None


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), DIGITS) if values else None


def pass_curves(outcomes: Mapping[Any, Sequence[bool]]) -> dict[str, dict[str, float]]:
    """pass@k and pass^k for k = 1..min n, averaged over groups (one group: one task's rollouts)."""
    groups = [(len(v), sum(bool(x) for x in v)) for v in outcomes.values() if v]
    if not groups:
        return {"pass_at_k": {}, "pass_hat_k": {}}
    top = min(n for n, _ in groups)
    at = {str(k): round(sum(pass_at_k(n, c, k) for n, c in groups) / len(groups), DIGITS) for k in range(1, top + 1)}
    hat = {str(k): round(sum(pass_hat_k(n, c, k) for n, c in groups) / len(groups), DIGITS) for k in range(1, top + 1)}
    return {"pass_at_k": at, "pass_hat_k": hat}


def criteria_by_kind(criteria: Iterable[Row]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{kind: {"positive"|"negative": {n, passed, rate}}}``; sides without criteria are left out."""
    counts: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for row in criteria:
        side = "negative" if row["negative"] else "positive"
        tally = counts[row["kind"] or "unknown"].setdefault(side, [0, 0])
        tally[0] += 1
        tally[1] += int(bool(row["passed"]))
    return {
        kind: {side: {"n": n, "passed": p, "rate": _rate(p, n)} for side, (n, p) in sorted(sides.items())}
        for kind, sides in sorted(counts.items())
    }


def services_breakdown(criteria: Iterable[Row], steps: Iterable[Row]) -> dict[str, dict[str, Any]]:
    """Per service: criteria checked/passed and their pass rate, calls, tool errors, error rate."""
    table: dict[str, dict[str, Any]] = {}

    def entry(service: str) -> dict[str, Any]:
        return table.setdefault(service or NO_SERVICE, {"criteria": 0, "criteria_passed": 0, "calls": 0, "errors": 0})

    for row in criteria:
        item = entry(row["service"])
        item["criteria"] += 1
        item["criteria_passed"] += int(bool(row["passed"]))
    for row in steps:
        item = entry(row["service"])
        item["calls"] += 1
        item["errors"] += int(not row["success"])
    for item in table.values():
        item["criteria_pass_rate"] = _rate(item["criteria_passed"], item["criteria"])
        item["error_rate"] = _rate(item["errors"], item["calls"])
    return dict(sorted(table.items()))


def agent_figures(episodes: Sequence[Row], criteria: Sequence[Row], steps: Sequence[Row]) -> dict[str, Any]:
    """Every figure for one agent, from that agent's rows only."""
    outcomes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row in episodes:
        outcomes[(row["task_id"], row["surface"])].append(bool(row["success"]))
    n_calls = sum(int(row["n_calls"]) for row in episodes)
    n_errors = sum(int(row["n_errors"]) for row in episodes)
    return {
        "episodes": len(episodes),
        "tasks": len({row["task_id"] for row in episodes}),
        "rollouts_per_task": min((len(v) for v in outcomes.values()), default=0),
        "surfaces": sorted({row["surface"] for row in episodes}),
        "models": sorted({row["model"] for row in episodes if row["model"]}),
        "mean_score": _mean([float(row["score"]) for row in episodes]),
        "mean_net_score": _mean([float(row["net_score"]) for row in episodes]),
        "success_rate": _rate(sum(bool(row["success"]) for row in episodes), len(episodes)),
        **pass_curves(outcomes),
        "criteria_by_kind": criteria_by_kind(criteria),
        "services": services_breakdown(criteria, steps),
        "calls": n_calls,
        "tool_errors": n_errors,
        "tool_error_rate": _rate(n_errors, n_calls),
        "mean_calls": _mean([float(row["n_calls"]) for row in episodes]),
        "mean_duration_s": _mean([float(row["duration_s"]) for row in episodes]),
        "finish_reasons": dict(Counter(row["finish_reason"] for row in episodes).most_common()),
    }


def summarize(
    episodes: Sequence[Row],
    criteria: Sequence[Row],
    steps: Sequence[Row],
    order: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """``{agent: figures}`` from stored rows; agents in ``order`` first, the others sorted."""
    by_agent: dict[str, dict[str, list[Row]]] = defaultdict(lambda: {"episodes": [], "criteria": [], "steps": []})
    for name, rows in (("episodes", episodes), ("criteria", criteria), ("steps", steps)):
        for row in rows:
            by_agent[row["agent"]][name].append(row)
    present = [a for a in by_agent if by_agent[a]["episodes"]]
    agents = [a for a in dict.fromkeys(order) if a in present] + sorted(a for a in present if a not in order)
    return {a: agent_figures(**by_agent[a]) for a in agents}


def agent_order(store: RunStore, run: str) -> list[str]:
    """The agents in the order the run was configured with (empty when unknown)."""
    try:
        config = store.config(run)
    except ValueError:  # a config no version of the store wrote: the report still shows every agent
        return []
    return config.agent_names if config else []


def summary(store: RunStore, run: str) -> dict[str, dict[str, Any]]:
    """Every figure of ``run``, keyed by agent (see the module docstring for the definitions)."""
    return summarize(store.episodes(run), store.criteria(run), store.steps(run), agent_order(store, run))


def score_histogram(scores: Iterable[float], width: float = 0.1) -> list[int]:
    """Counts of scores in bins ``[0, w), [w, 2w), ... [1 - w, 1]`` (1.0 falls in the last bin)."""
    bins = round(1 / width)
    counts = [0] * bins
    for value in scores:
        index = min(bins - 1, max(0, int(float(value) / width + 1e-9)))
        counts[index] += 1
    return counts
