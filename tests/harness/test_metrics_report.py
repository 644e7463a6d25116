"""Run metrics and reports over a real run: 4 generated tasks × oracle/null/random × 3 rollouts."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.agent_spec import make_agent
from harness.config import RunConfig
from harness.metrics import pass_at_k, pass_curves, pass_hat_k, score_histogram, summarize, summary
from harness.report import pick_episode, print_report, write_html
from harness.runner import run
from harness.store import RunStore
from taskgen.generate import generate
from taskgen.task import Task
from tests.conftest import full_hub

ROLLOUTS = 3
AGENTS = ("oracle", "null", "random")


@dataclass
class Run:
    store: RunStore
    name: str
    tasks: list[Task]
    figures: dict[str, Any]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Run:
    hub = full_hub()
    tasks = generate(4, seed=4, hub=hub).tasks
    store = RunStore(tmp_path_factory.mktemp("metrics") / "runs.db")
    run(hub, tasks, [make_agent(name) for name in AGENTS], store, "r1", RunConfig(rollouts=ROLLOUTS))
    return Run(store, "r1", tasks, summary(store, "r1"))


# -- the estimators -------------------------------------------------------------------------------


def test_pass_at_k_matches_hand_computation() -> None:
    # n = 5 rollouts, c = 2 successes: 1 - C(3, k) / C(5, k)
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)
    assert pass_at_k(5, 2, 4) == 1.0  # fewer than 4 failures: any 4 draws hold a success


def test_pass_hat_k_matches_hand_computation() -> None:
    # n = 5, c = 2: C(2, k) / C(5, k)
    assert pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)
    assert pass_hat_k(5, 2, 3) == 0.0


def test_estimators_at_the_extremes() -> None:
    assert pass_at_k(4, 0, 2) == 0.0 and pass_hat_k(4, 0, 2) == 0.0
    assert pass_at_k(4, 4, 3) == 1.0 and pass_hat_k(4, 4, 3) == 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 1, 0), (3, 4, 1), (3, -1, 1)])
def test_estimators_reject_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_pass_curves_average_over_tasks() -> None:
    curves = pass_curves({"a": [True, False, False], "b": [True, True, False]})
    assert curves["pass_at_k"] == pytest.approx({"1": 0.5, "2": (2 / 3 + 1) / 2, "3": 1.0}, abs=1e-6)
    assert curves["pass_hat_k"] == pytest.approx({"1": 0.5, "2": (0 + 1 / 3) / 2, "3": 0.0}, abs=1e-6)


def test_pass_curves_stop_at_the_fewest_rollouts() -> None:
    curves = pass_curves({"a": [True, False, True, True], "b": [False, True]})
    assert list(curves["pass_at_k"]) == ["1", "2"]


def test_summarize_groups_synthetic_rows_by_agent_and_task() -> None:
    def episode(task: str, rollout: int, success: bool) -> dict[str, Any]:
        return {
            "agent": "a",
            "task_id": task,
            "surface": "direct",
            "model": "",
            "rollout": rollout,
            "score": 1.0 if success else 0.5,
            "net_score": 1.0 if success else 0.0,
            "success": int(success),
            "n_calls": 2,
            "n_errors": 1 if not success else 0,
            "finish_reason": "completed",
            "duration_s": 0.1,
        }

    outcomes = {"t1": [True, False, False], "t2": [True, True, False]}
    rows = [episode(t, i, ok) for t, oks in outcomes.items() for i, ok in enumerate(oks)]
    figures = summarize(rows, [], [])["a"]
    assert figures["episodes"] == 6 and figures["rollouts_per_task"] == 3
    assert figures["success_rate"] == pytest.approx(0.5)
    assert figures["mean_score"] == pytest.approx(0.75)
    assert figures["tool_error_rate"] == pytest.approx(3 / 12)
    assert figures["pass_at_k"]["2"] == pytest.approx(5 / 6, abs=1e-6)


def test_score_histogram_puts_one_in_the_last_bin() -> None:
    counts = score_histogram([0.0, 0.05, 0.3, 0.99, 1.0])
    assert len(counts) == 10
    assert counts[0] == 2 and counts[3] == 1 and counts[9] == 2


# -- figures of a real run ------------------------------------------------------------------------


def test_summary_is_keyed_by_agent_in_run_order_and_json_serialisable(stored: Run) -> None:
    assert list(stored.figures) == list(AGENTS)
    assert json.loads(json.dumps(stored.figures)) == stored.figures


def test_oracle_always_succeeds(stored: Run) -> None:
    oracle = stored.figures["oracle"]
    assert oracle["episodes"] == len(stored.tasks) * ROLLOUTS
    assert oracle["success_rate"] == 1.0
    assert oracle["mean_score"] == 1.0 and oracle["mean_net_score"] == 1.0
    assert oracle["tool_error_rate"] == 0.0


def test_null_scores_zero_and_takes_no_action(stored: Run) -> None:
    null = stored.figures["null"]
    assert null["mean_score"] == 0.0 and null["mean_net_score"] == 0.0
    assert null["mean_calls"] == 0.0
    assert null["finish_reasons"] == {"no_action": len(stored.tasks) * ROLLOUTS}


def test_pass_at_1_is_the_success_rate(stored: Run) -> None:
    for figures in stored.figures.values():
        assert figures["pass_at_k"]["1"] == pytest.approx(figures["success_rate"])
        assert figures["pass_hat_k"]["1"] == pytest.approx(figures["success_rate"])


def test_pass_curves_are_monotone_in_k(stored: Run) -> None:
    for figures in stored.figures.values():
        at = [figures["pass_at_k"][str(k)] for k in range(1, ROLLOUTS + 1)]
        hat = [figures["pass_hat_k"][str(k)] for k in range(1, ROLLOUTS + 1)]
        assert at == sorted(at)
        assert hat == sorted(hat, reverse=True)
        assert all(h <= a + 1e-12 for a, h in zip(at, hat, strict=True))


def test_criterion_kinds(stored: Run) -> None:
    oracle, null = stored.figures["oracle"]["criteria_by_kind"], stored.figures["null"]["criteria_by_kind"]
    kinds = {c.kind for t in stored.tasks for c in t.rubric.criteria}
    assert set(oracle) == kinds
    assert all(side["rate"] == 1.0 for sides in oracle.values() for side in sides.values())
    assert all(sides["positive"]["rate"] == 0.0 for sides in null.values() if "positive" in sides)
    n_criteria = sum(len(t.rubric.criteria) for t in stored.tasks) * ROLLOUTS
    assert sum(side["n"] for sides in oracle.values() for side in sides.values()) == n_criteria


def test_per_service_breakdown_covers_the_tasks_services(stored: Run) -> None:
    services = stored.figures["oracle"]["services"]
    assert {s for t in stored.tasks for s in t.services} <= set(services)
    planned = Counter(step.tool.split("__", 1)[0] for t in stored.tasks for step in t.plan)
    for service, count in planned.items():
        assert services[service]["calls"] == count * ROLLOUTS
        assert services[service]["criteria_pass_rate"] in (1.0, None)


def test_tool_errors_agree_with_the_stored_steps(stored: Run) -> None:
    steps = stored.store.steps(stored.name)
    random_steps = [s for s in steps if s["agent"] == "random"]
    figures = stored.figures["random"]
    assert figures["calls"] == len(random_steps)
    assert figures["tool_errors"] == sum(1 for s in random_steps if not s["success"])
    assert sum(item["errors"] for item in figures["services"].values()) == figures["tool_errors"]


# -- reports --------------------------------------------------------------------------------------


def test_print_report_names_every_agent(stored: Run) -> None:
    console = Console(record=True, width=200)
    print_report(stored.store, stored.name, console)
    text = console.export_text()
    for agent in AGENTS:
        assert agent in text
    assert "pass@k" in text


def test_html_report_is_self_contained(stored: Run, tmp_path: Path) -> None:
    path = write_html(stored.store, stored.name, tmp_path / "out" / "report.html")
    assert path.is_file()
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "@import" not in style and "url(" not in style
    for agent in AGENTS:
        assert html.escape(agent) in page


def test_html_report_renders_one_oracle_trajectory(stored: Run, tmp_path: Path) -> None:
    chosen = pick_episode(stored.store, stored.name)
    assert chosen is not None and chosen["agent"] == "oracle" and chosen["n_calls"] > 0
    task = next(t for t in stored.tasks if t.id == chosen["task_id"])
    page = write_html(stored.store, stored.name, tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.escape(task.instruction) in page
    for step in task.plan:
        assert html.escape(step.tool) in page
    for criterion in task.rubric.criteria:
        assert html.escape(criterion.description) in page
