"""The settings of a training run, as models shared by ``compoworld train`` and the Python API.

``compoworld train sft|grpo`` builds an :class:`SFTTraining` or a :class:`GRPOTraining` from its flags and
hands it to :func:`training.sft.train_sft` or :func:`training.grpo.train_grpo`; a GRPO run stores its
settings with its rollouts (``RunConfig.training`` in the run store), so a report says how they were made.
The names avoid TRL's own ``SFTConfig``/``GRPOConfig``, which these settings fill in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Reward = Literal["cfrr", "rubric", "success"]


class SFTTraining(BaseModel):
    """Supervised fine-tuning on SFT JSONL files (ours and the published CompoWorld ones)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="model path or hub id; 'tiny' builds the local CPU smoke model")
    data: list[Path] = Field(min_length=1)
    output: Path = Path("runs/sft-model")
    max_steps: int = Field(-1, description="-1: full epochs")
    epochs: float = 1.0
    learning_rate: float = 2e-5
    batch_size: int = Field(2, ge=1)
    max_length: int = Field(4096, ge=1)
    lora: bool = False
    cpu: bool = False
    turns: int | None = Field(None, description="keep each conversation up to its N-th assistant turn")
    assistant_only_loss: bool = False


class GRPOTraining(BaseModel):
    """GRPO with tool calls into task worlds; every rollout is recorded into the run store."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="model path or hub id; 'tiny' builds the local CPU smoke model")
    tasks: Path
    output: Path = Path("runs/grpo-model")
    max_steps: int = 10
    num_generations: int = Field(4, ge=1, description="rollouts per task: the CFRR group")
    max_completion_length: int = 512
    learning_rate: float = 1e-6
    reward: Reward = "cfrr"
    max_tool_calling_iterations: int = 12
    lora: bool = False
    sft_data: list[Path] = Field(default_factory=list, description="what a tiny model's tokenizer learns from")
    temperature: float = 1.0
    max_tasks: int | None = None
    store: Path = Path("runs/runs.db")
    run: str | None = Field(None, description="run name of the recorded rollouts (default: the output's name)")

    @property
    def run_name(self) -> str:
        return self.run or self.output.name
