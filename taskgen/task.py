"""The ``Task`` model and its JSONL files.

A task holds the instruction, the services it needs and the distractor services mounted beside
them, the initial world (a seed), the oracle plan (calls whose arguments may reference earlier
results with ``{"$ref": "steps.<i>.<path>"}``), the rubric, the expected report values and
metadata (the walk, transfers, capabilities, policies). Tasks are plain data: JSONL in and out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hub.rubric import Rubric
from servers.framework import Envelope


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Transfer(BaseModel):
    """A value that travels from one step's result into a later step's argument."""

    model_config = ConfigDict(extra="forbid")

    type: str
    from_step: int
    to_step: int
    from_service: str
    to_service: str
    argument: str


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    version: int = 1
    seed: int
    instruction: str
    services: list[str]
    distractor_services: list[str] = Field(default_factory=list)
    plan: list[PlanStep]
    rubric: Rubric
    expected_report: dict[str, Any] = Field(default_factory=dict)
    policies: list[str] = Field(default_factory=list)
    transfers: list[Transfer] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy_rubric(cls, data: Any) -> Any:
        """A task written before rubrics had versions carries a version-1 rubric: it is scored with
        the semantics it was made for, never silently with today's."""
        if isinstance(data, dict) and isinstance(data.get("rubric"), dict) and "version" not in data["rubric"]:
            data = {**data, "rubric": {**data["rubric"], "version": 1}}
        return data

    @property
    def rubric_version(self) -> int:
        return self.rubric.version

    @property
    def mounted(self) -> list[str]:
        return sorted({*self.services, *self.distractor_services})


def resolve(value: Any, results: Sequence[Envelope]) -> Any:
    """Replace ``{"$ref": "steps.2.data.items.0.email"}`` by the value in step 2's envelope."""
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            parts = str(value["$ref"]).split(".")
            if parts[0] != "steps":
                raise KeyError(f"bad reference {value['$ref']!r}")
            node: Any = results[int(parts[1])]
            for part in parts[2:]:
                node = node[int(part)] if isinstance(node, list) else node[part]
            return node
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value


def leaves(value: Any) -> list[Any]:
    """Every scalar inside nested dicts and lists (the values a plan's arguments or results hold)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)]
    return [value]


def write_jsonl(tasks: Iterable[Task], path: str | Path) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(json.dumps(task.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_jsonl(path: str | Path) -> Iterator[Task]:
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield Task.model_validate_json(line)
                except ValueError as exc:
                    raise ValueError(f"{path}:{number}: not a task: {exc}") from exc
