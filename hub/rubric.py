"""Rubrics: declarative, weighted criteria over a world's final state and the agent's report.

A rubric is data, never code: each criterion names a check that one small checker evaluates.

- ``record``: a record in ``service``'s ``collection`` whose fields equal ``match`` (and whose text
  fields contain the values of ``contains``) exists (``expect="exists"``), was created during the
  episode (``expect="created"``: present now, absent from the initial world) or does not exist
  (``expect="absent"``). ``collection`` is a top-level field of the
  service state holding records by id (``messages``, ``deals``…); ``match`` values compare by
  equality, except that a list field *contains* a scalar match value (``to`` contains an address)
  and strings compare case-insensitively when ``casefold`` is set.
- ``unchanged``: the record ``record_id`` of ``collection`` is exactly as in the initial world.
- ``service_untouched``: no change at all in ``service`` since the initial world.
- ``report``: the agent's final report has ``field`` equal to ``value`` (numbers within ``tolerance``).

Positive criteria earn their weight; ``negative`` criteria guard against collateral damage. The
**score** is the weighted fraction of positive criteria passed; the **net score** is zero when
any negative criterion fails (or the score minus ``penalty`` per failure, floored at 0, when a
penalty is configured). A do-nothing agent scores 0 on a rubric whose positive criteria all
require an effect or a report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from servers.state import diff


class _Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    description: str
    weight: float = Field(default=1.0, gt=0)
    negative: bool = False


class RecordCriterion(_Criterion):
    kind: Literal["record"] = "record"
    service: str
    collection: str
    match: dict[str, Any]
    contains: dict[str, str] = Field(default_factory=dict, description="Text fields that must contain a value.")
    expect: Literal["exists", "absent", "created"] = "exists"
    casefold: bool = True


class UnchangedCriterion(_Criterion):
    kind: Literal["unchanged"] = "unchanged"
    service: str
    collection: str
    record_id: str


class ServiceUntouchedCriterion(_Criterion):
    kind: Literal["service_untouched"] = "service_untouched"
    service: str


class ReportCriterion(_Criterion):
    kind: Literal["report"] = "report"
    field: str
    value: Any
    tolerance: float = 0.005


Criterion = Annotated[
    RecordCriterion | UnchangedCriterion | ServiceUntouchedCriterion | ReportCriterion, Field(discriminator="kind")
]


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    criteria: list[Criterion]
    penalty: float | None = Field(default=None, ge=0, description="Net score penalty per failed negative; None zeroes.")


class CriterionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    passed: bool
    negative: bool
    weight: float
    detail: str


class ScoreResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: float
    net_score: float
    success: bool
    criteria: list[CriterionResult]


def _same(actual: Any, expected: Any, casefold: bool) -> bool:
    if isinstance(actual, list) and not isinstance(expected, list):
        return any(_same(item, expected, casefold) for item in actual)
    if casefold and isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(actual, int | float) and isinstance(expected, int | float) and not isinstance(actual, bool):
        return abs(float(actual) - float(expected)) < 1e-9
    return bool(actual == expected)


def _records(state: Mapping[str, Any] | None, collection: str) -> dict[str, Any]:
    """The records of ``collection``: a top-level state field, or a ``/`` path for nested ones
    (simulated services keep theirs under ``collections/<name>``)."""
    node: Any = state or {}
    for part in collection.split("/"):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, dict) else {}


def check(
    criterion: Any,
    initial: Mapping[str, Any],
    final: Mapping[str, Any],
    report: Mapping[str, Any] | None,
) -> CriterionResult:
    """Evaluate one criterion; ``initial``/``final`` are ``{service: state JSON}``."""
    passed: bool
    if isinstance(criterion, RecordCriterion):
        records = _records(final.get(criterion.service), criterion.collection)
        hits = [
            rid
            for rid, rec in records.items()
            if isinstance(rec, dict)
            and all(k in rec and _same(rec[k], v, criterion.casefold) for k, v in criterion.match.items())
        ]
        if criterion.expect == "created":  # only records that were not there at the start count
            existing = _records(initial.get(criterion.service), criterion.collection)
            hits = [rid for rid in hits if rid not in existing]
        passed = not hits if criterion.expect == "absent" else bool(hits)
        detail = f"{len(hits)} matching record(s) in {criterion.service}.{criterion.collection}"
    elif isinstance(criterion, UnchangedCriterion):
        before = _records(initial.get(criterion.service), criterion.collection).get(criterion.record_id)
        after = _records(final.get(criterion.service), criterion.collection).get(criterion.record_id)
        changes = diff(before, after)
        passed = before is not None and not changes
        detail = "unchanged" if passed else f"{len(changes)} change(s) to {criterion.record_id!r}"
    elif isinstance(criterion, ServiceUntouchedCriterion):
        changes = diff(initial.get(criterion.service), final.get(criterion.service))
        passed = not changes
        detail = "no changes" if passed else f"{len(changes)} change(s), first at {changes[0].path}"
    else:
        actual = (report or {}).get(criterion.field)
        expected = criterion.value
        if isinstance(actual, int | float) and isinstance(expected, int | float):
            passed = abs(float(actual) - float(expected)) <= criterion.tolerance
        else:
            passed = actual is not None and _same(actual, expected, True)
        detail = f"reported {actual!r}, expected {expected!r}"
    return CriterionResult(
        id=criterion.id, passed=passed, negative=criterion.negative, weight=criterion.weight, detail=detail
    )


def score(
    rubric: Rubric,
    initial: Mapping[str, Any],
    final: Mapping[str, Any],
    report: Mapping[str, Any] | None = None,
) -> ScoreResult:
    """Score a final state (and report) against ``rubric``; states are ``{service: state JSON}``."""
    results = [check(c, initial, final, report) for c in rubric.criteria]
    positive = [r for r in results if not r.negative]
    total = sum(r.weight for r in positive)
    value = sum(r.weight for r in positive if r.passed) / total if total else 0.0
    failed_negative = sum(1 for r in results if r.negative and not r.passed)
    if failed_negative == 0:
        net = value
    elif rubric.penalty is None:
        net = 0.0
    else:
        net = max(0.0, value - rubric.penalty * failed_negative)
    return ScoreResult(
        score=round(value, 6),
        net_score=round(net, 6),
        success=all(r.passed for r in results),
        criteria=results,
    )
