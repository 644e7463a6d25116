"""Our SFT export and the published CompoWorld example data load together (fixtures/README.md names the sample)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agent_spec import make_agent
from harness.config import RunConfig
from harness.export import export_sft
from harness.runner import run
from harness.store import RunStore
from taskgen.generate import generate
from tests.conftest import full_hub
from training.sft import load_sft_dataset

datasets = pytest.importorskip("datasets")  # the train extra

PUBLISHED = Path(__file__).parent / "fixtures" / "compoworld_example_sample.jsonl"


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    hub = full_hub()
    tasks = generate(3, seed=1, hub=hub, source="patterns").tasks
    folder = tmp_path_factory.mktemp("sft")
    store = RunStore(folder / "runs.db")
    run(hub, tasks, [make_agent("oracle-recovery")], store, "r", RunConfig(surface="gateway"))
    run(hub, tasks, [make_agent("oracle")], store, "r", RunConfig(surface="direct"))
    export_sft(store, "r", folder / "sft.jsonl")
    return folder / "sft.jsonl"


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_ours_and_the_published_sample_load_together(ours: Path) -> None:
    dataset = load_sft_dataset([ours, PUBLISHED])
    assert len(dataset) == len(_records(ours)) + len(_records(PUBLISHED))
    assert {"460", "2075"} <= set(dataset["task_id"])  # the published ids are numbers: loaded as strings


def test_datasets_load_dataset_reads_ours_then_the_published_sample(ours: Path, tmp_path: Path) -> None:
    dataset = datasets.load_dataset(
        "json", data_files=[str(ours), str(PUBLISHED)], split="train", cache_dir=str(tmp_path / "cache")
    )
    assert len(dataset) == len(_records(ours)) + len(_records(PUBLISHED))
    assert {m["task_id"] for m in dataset["meta"]} >= {"460", "2075"}
    assert {type(m["domain"]) for m in dataset["meta"]} == {str}


def test_reasoning_content_survives_loading(ours: Path) -> None:
    loaded = load_sft_dataset([ours, PUBLISHED])
    written = _records(ours) + _records(PUBLISHED)
    for row, record in zip(loaded, written, strict=True):
        kept = [m.get("reasoning_content") for m in row["messages"]]
        assert kept == [m.get("reasoning_content") for m in record["messages"]]
    assert any(m.get("reasoning_content") for row in loaded for m in row["messages"])


def test_call_ids_and_tool_names_survive_loading(ours: Path) -> None:
    for row in load_sft_dataset([ours, PUBLISHED]):
        calls = {c["id"]: c["function"]["name"] for m in row["messages"] for c in m.get("tool_calls") or []}
        replies = [m for m in row["messages"] if m["role"] == "tool"]
        assert replies and all(calls[m["tool_call_id"]] == m["name"] for m in replies)


def test_arguments_load_as_the_same_object_from_an_object_or_a_json_string(tmp_path: Path) -> None:
    record = _records(PUBLISHED)[1]
    call = record["messages"][2]["tool_calls"][0]["function"]
    call["arguments"] = {"service": "eraser", "page": {"size": 2}}
    as_string = json.loads(json.dumps(record))
    as_string["messages"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps(call["arguments"])
    path = tmp_path / "both.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(as_string) + "\n")
    first, second = load_sft_dataset(path)
    assert first["messages"] == second["messages"]
    assert first["messages"][2]["tool_calls"][0]["function"]["arguments"] == call["arguments"]
