"""Training settings: the models ``compoworld train`` builds from its flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from training.cli import app
from training.config import GRPOTraining


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["grpo", "--model", "tiny", "--tasks", "t.jsonl", "--reward", "accuracy"], "--reward"),
        (["grpo", "--model", "tiny", "--tasks", "t.jsonl", "--num-generations", "0"], "--num-generations"),
        (["sft", "--model", "tiny", "--data", "d.jsonl", "--batch-size", "0"], "--batch-size"),
    ],
)
def test_a_flag_value_the_settings_cannot_hold_is_a_usage_error(flags: list[str], named: str) -> None:
    result = CliRunner().invoke(app, ["train", *flags])
    assert result.exit_code == 2 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert named in result.output and "Traceback" not in result.output


def test_grpo_rollouts_are_recorded_under_the_output_s_name_unless_a_run_is_named() -> None:
    assert GRPOTraining(model="tiny", tasks=Path("t.jsonl"), output=Path("runs/grpo-7")).run_name == "grpo-7"
    assert GRPOTraining(model="tiny", tasks=Path("t.jsonl"), run="mine").run_name == "mine"
