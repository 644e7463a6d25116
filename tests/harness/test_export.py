"""SFT export: self-describing runs (no hub needed) and records in the published layout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.agent_spec import make_agent
from harness.config import RunConfig
from harness.env import function_spec
from harness.export import export_sft, sft_record
from harness.runner import run
from harness.store import RunStore
from hub.core import Hub
from hub.surfaces import GATEWAY_TOOLS
from servers.state import WORLD_EPOCH
from taskgen.generate import generate
from taskgen.task import Task
from tests.conftest import full_hub
from training.cli import app

HUB_MODULES = ["hub.core", "hub.world", "hub.surfaces", "hub.registry", "harness.env", "servers.registry"]
"""What building or listing a hub needs; hidden, nothing of the hub or its services can be imported."""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Hub, list[Task], RunStore]:
    hub = full_hub()
    tasks = generate(3, seed=6, hub=hub, source="patterns").tasks
    store = RunStore(tmp_path_factory.mktemp("store") / "runs.db")
    run(hub, tasks, [make_agent("oracle")], store, "r", RunConfig(surface="direct"))
    run(hub, tasks, [make_agent("oracle-recovery")], store, "r", RunConfig(surface="gateway"))
    return hub, tasks, store


def _listed(hub: Hub, task: Task, surface: str) -> list[dict[str, Any]]:
    """The tools as the export rebuilt them from a live hub before runs kept them."""
    listing = GATEWAY_TOOLS if surface == "gateway" else hub.registry.listing(task.mounted)
    return [function_spec(t) for t in listing]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_needs_no_hub_and_gives_the_records_a_hub_would(
    setup: tuple[Hub, list[Task], RunStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub, tasks, store = setup
    by_id = {t.id: t for t in tasks}
    expected = [
        sft_record(by_id[t.task_id], t, _listed(hub, by_id[t.task_id], t.surface)) for t in store.trajectories("r")
    ]
    for name in HUB_MODULES:
        monkeypatch.setitem(sys.modules, name, None)  # `import hub.core` now raises ImportError
    monkeypatch.setattr("taskgen.generate.default_hub", lambda *a, **k: pytest.fail("export built a hub"))
    out = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(app, ["export", "sft", "r", "-o", str(out), "--store", str(store.path)])
    assert result.exit_code == 0, result.output
    assert _lines(out) == json.loads(json.dumps(expected))


def test_an_episode_stored_without_its_tools_gets_them_rebuilt(
    setup: tuple[Hub, list[Task], RunStore], tmp_path: Path
) -> None:
    _, tasks, store = setup
    old = RunStore(tmp_path / "old.db")
    old.start_run("old", RunConfig(), tasks)
    trajectory = next(store.trajectories("r"))
    old.add("old", trajectory.model_copy(update={"tools": []}))
    out = tmp_path / "sft.jsonl"
    export_sft(old, "old", out, rebuild_tools=lambda task, surface: [{"rebuilt": [task.id, surface]}])
    assert _lines(out)[0]["tools"] == [{"rebuilt": [trajectory.task_id, trajectory.surface]}]


def test_an_episode_stored_without_its_tools_is_refused_without_a_way_to_rebuild_them(
    setup: tuple[Hub, list[Task], RunStore], tmp_path: Path
) -> None:
    _, tasks, store = setup
    old = RunStore(tmp_path / "old.db")
    old.start_run("old", RunConfig(), tasks)
    old.add("old", next(store.trajectories("r")).model_copy(update={"tools": []}))
    with pytest.raises(ValueError, match="without the tools it offered"):
        export_sft(old, "old", tmp_path / "sft.jsonl")


def test_records_have_the_published_layout_and_types(setup: tuple[Hub, list[Task], RunStore], tmp_path: Path) -> None:
    _, tasks, store = setup
    out = tmp_path / "sft.jsonl"
    export_sft(store, "r", out)
    records = _lines(out)
    assert records and all(list(r) == ["tools", "meta", "source", "messages"] for r in records)
    for record in records:
        meta = record["meta"]
        task = next(t for t in tasks if t.id == meta["task_id"])
        assert isinstance(meta["domain"], str) and meta["capabilities"] == task.meta["capabilities"]
        assert record["messages"][0]["content"].startswith(f"Today's date is {WORLD_EPOCH.date().isoformat()}.")
        calls = {c["id"]: c for m in record["messages"] for c in m.get("tool_calls", [])}
        assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls.values())
        for message in (m for m in record["messages"] if m["role"] == "tool"):
            assert message["name"] == calls[message["tool_call_id"]]["function"]["name"]


def test_recovered_errors_are_exported(setup: tuple[Hub, list[Task], RunStore], tmp_path: Path) -> None:
    _, _, store = setup
    out = tmp_path / "sft.jsonl"
    export_sft(store, "r", out, agents=["oracle-recovery"])
    records = _lines(out)
    assert records and all(r["meta"]["src"] == "compoworld/oracle-recovery" for r in records)
    for record in records:
        replies = [json.loads(m["content"]) for m in record["messages"] if m["role"] == "tool"]
        assert sum(not r.get("success", True) for r in replies) == 1
        assert sum("reasoning_content" in m for m in record["messages"]) == 1
