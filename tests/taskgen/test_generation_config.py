"""The generation config: one model for the CLI and the Python API, the same tasks as the functions it calls."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hub.core import Hub
from taskgen.generate import Generation, GenerationConfig, generate_tasks


def test_a_config_generates_what_generate_gives_for_its_values(hub: Hub, batch: Generation) -> None:
    found: list[int] = []
    config = GenerationConfig(n=2, seed=11, source="walks")
    made = generate_tasks(config, hub, on_progress=found.append)
    assert [t.id for t in made.tasks] == [t.id for t in batch.tasks[:2]]  # the batch: generate(12, seed=11, hub=hub)
    assert found == [1, 2]


def test_a_config_rejects_what_no_generator_knows() -> None:
    with pytest.raises(ValidationError, match="source"):
        GenerationConfig.model_validate({"source": "dreams"})
    with pytest.raises(ValidationError, match="policy"):
        GenerationConfig.model_validate({"policy": 0.5})
