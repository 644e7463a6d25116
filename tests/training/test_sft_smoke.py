"""SFT on exported trajectories with TRL on CPU: a tiny local model, loss goes down."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def sft_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    subprocess.run(
        [sys.executable, "-m", "training.cli", "demo", "--out", str(out), "-n", "8"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out / "sft.jsonl"


def test_dataset_loads_with_messages_and_per_row_tools(sft_file: Path) -> None:
    from training.sft import load_sft_dataset

    dataset = load_sft_dataset(sft_file)
    assert len(dataset) == 8
    row = dataset[0]
    assert row["messages"][0]["role"] == "system"
    assert any(m.get("tool_calls") for m in row["messages"])
    assert json.loads(row["tools"])[0]["function"]["name"] == "list_services"
    split = load_sft_dataset(sft_file, held_out=0.25)
    assert set(split["train"]["task_id"]).isdisjoint(split["test"]["task_id"])


@pytest.mark.slow
def test_train_sft_command_lowers_the_loss(sft_file: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training.cli",
            "train",
            "sft",
            "--model",
            "tiny",
            "--data",
            str(sft_file),
            "--output",
            str(tmp_path / "model"),
            "--max-steps",
            "30",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    losses = json.loads(result.stdout.strip().splitlines()[-1])["losses"]
    assert len(losses) >= 4 and losses[-1] < losses[0] * 0.85
    assert (tmp_path / "model" / "config.json").exists()


@pytest.mark.slow
def test_train_grpo_command_runs_a_step_with_the_environment_and_cfrr(sft_file: Path, tmp_path: Path) -> None:
    tasks = sft_file.parent / "tasks.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training.cli",
            "train",
            "grpo",
            "--model",
            "tiny",
            "--tasks",
            str(tasks),
            "--output",
            str(tmp_path / "grpo"),
            "--max-steps",
            "1",
            "--num-generations",
            "2",
            "--max-completion-length",
            "32",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    log = json.loads(result.stdout.strip().splitlines()[-1])["log"]
    step = log[0]
    assert "rewards/cfrr_reward/mean" in step and "tools/call_frequency" in step
    assert "rewards/CompoWorldEnv/mean" in step  # get_reward of the environment is logged too
