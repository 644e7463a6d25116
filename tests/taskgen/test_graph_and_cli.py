"""The dependency graph, the tasks CLI and the optional LLM rewrite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hub.core import Hub
from taskgen.generate import Generation, GenerationConfig
from taskgen.graph import build_graph, summary
from taskgen.rewrite import Rewriter
from tests.conftest import ScriptedOpenAI

FEW = "crm,email,calendar,tracker,invoicing,sms,helpdesk"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "training.cli", *args], capture_output=True, text=True, timeout=300)


def test_graph_links_tools_across_services_by_semantic_type(hub: Hub) -> None:
    graph = build_graph(hub.registry)
    info = summary(graph)
    assert info["tools"] == len(hub.registry.tools)
    assert info["cross_service_edges"] > 1000 and info["state_edges"] > 0
    edges = graph.get_edge_data("crm__list_deals", "email__send_message") or {}
    assert any(d["type"] == "email_address" and d["cross"] for d in edges.values())


def test_cli_generates_stats_and_shows_tasks(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    # A handful of services keeps each subprocess's hub small; the full hub is tested in-process.
    # (random walks: business patterns need the library's breadth, more than a handful of services)
    made = run("tasks", "generate", "-n", "4", "--seed", "3", "--services", FEW, "--source", "walks", "--out", str(out))
    assert made.returncode == 0, made.stderr
    stats = json.loads(run("tasks", "stats", str(out), "--json").stdout)
    assert stats["n_tasks"] == 4 and "gate_rejections" in stats and "distinct_service_combos" in stats
    made_by = json.loads(out.with_suffix(".stats.json").read_text())["config"]  # the file says what made it
    assert GenerationConfig.model_validate(made_by) == GenerationConfig(
        n=4, seed=3, services=FEW.split(","), source="walks"
    )
    first = json.loads(out.read_text().splitlines()[0])
    shown = run("tasks", "show", first["id"], "--file", str(out))
    assert shown.returncode == 0 and first["instruction"][:40] in shown.stdout.replace("\n", " ")
    graphml = tmp_path / "graph.graphml"
    graph = run("tasks", "graph", "--services", FEW, "--graphml", str(graphml), "--json")
    assert graph.returncode == 0 and json.loads(graph.stdout)["tools"] > 100 and graphml.exists()
    assert "<graphml" in graphml.read_text()[:2000]


def test_llm_rewrite_is_kept_only_when_it_does_not_leak(openai_server: ScriptedOpenAI, batch: Generation) -> None:
    task = batch.tasks[0]
    rewriter = Rewriter("writer-1", base_url=openai_server.url)
    fluent = "Please, as discussed: " + task.instruction
    openai_server.replies = [fluent]
    rewritten, outcome = rewriter.rewrite(task)
    assert outcome == "rewritten" and rewritten.instruction == fluent
    assert rewritten.meta["templated"] == task.instruction
    secret = next(v for v in task.meta["carried_values"] if len(v) >= 3 and v not in task.meta["given_values"])
    openai_server.replies = [task.instruction + f" The value is {secret}."]
    kept, outcome = rewriter.rewrite(task)
    assert outcome == "leak" and kept.instruction == task.instruction
    openai_server.replies = ["Do the thing."]
    kept, outcome = rewriter.rewrite(task)
    assert outcome == "dropped_literal" and kept.instruction == task.instruction
