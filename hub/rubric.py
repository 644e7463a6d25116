"""Rubrics: declarative, weighted criteria over a world's final state and the agent's report.

A rubric is data, never code: each criterion names a check that one small checker evaluates.

- ``record``: a record in ``service``'s ``collection`` whose fields equal ``match``, whose list
  fields include every item of ``includes`` and whose text fields contain (case-insensitively)
  the values of ``contains`` exists (``expect="exists"``), was created during the episode
  (``expect="created"``: present now, absent from the initial world) or does not exist
  (``expect="absent"``). ``collection`` is a top-level field of the service state holding records
  by id (``messages``, ``deals``…). A ``match`` value compares by equality (strings
  case-insensitively when ``casefold`` is set); a list field compares **as a set, exactly**
  (a scalar match value against a list field means the one-element set). Created-record criteria
  of one collection are matched one-to-one: one new record satisfies at most one of them.
- ``unchanged``: the record ``record_id`` of ``collection`` is exactly as in the initial world.
- ``service_untouched``: no change at all in ``service`` since the initial world.
- ``collateral``: every change in every service of the world (records created, deleted, fields
  changed — see :mod:`hub.collateral`) is one the task allows (``allowed``: the oracle's own
  changes), except the system-maintained fields of ``ignore``. Negative; one per task.
- ``report``: the agent's final report holds, under the key ``field`` (compared after
  normalising case and separators: ``Invoice Number`` is ``invoice_number``), a **scalar** equal
  to ``value`` (numbers within ``tolerance``; a list or an object never passes).

Positive criteria earn their weight; ``negative`` criteria guard against collateral damage. The
**score** is the weighted fraction of positive criteria passed; the **net score** is zero when
any negative criterion fails (or the score minus ``penalty`` per failure, floored at 0, when a
penalty is configured). A do-nothing agent scores 0 on a rubric whose positive criteria all
require an effect or a report.

**Versions.** ``Rubric.version`` is the checker semantics a rubric was made for. Version 1 (tasks
written before version 2; they have no ``version`` key) is scored as it always was: ``contains``
unchecked, a list field passing when any item matches, a report list passing when any item
matches, no one-to-one matching. Version 2 (:data:`RUBRIC_VERSION`) is the above, and its model
refuses a criterion with nothing to match and a report value that is not a scalar. Scores of
different versions are never comparable; stores and exports keep the version next to a score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hub.collateral import Unit, unexplained, units
from servers.state import diff

RUBRIC_VERSION = 2
"""The checker semantics of rubrics made now (see the module docstring)."""

Scalar = str | int | float | bool


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
    match: dict[str, Any] = Field(
        default_factory=dict,
        description='Field values; {"$record": "c3"} is the id of a record criterion c3 matched (a comment on '
        "the task the agent created, whatever id it got).",
    )
    contains: dict[str, str] = Field(default_factory=dict, description="Text fields that must contain a value.")
    includes: dict[str, list[Any]] = Field(
        default_factory=dict, description="List fields that must include these items (others may be there too)."
    )
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


class CollateralCriterion(_Criterion):
    kind: Literal["collateral"] = "collateral"
    negative: bool = True
    allowed: list[Unit] = Field(default_factory=list, description="The changes the task allows (the oracle's).")
    ignore: dict[str, list[str]] = Field(
        default_factory=dict, description="Per service, the fields the system maintains (never count)."
    )


class ReportCriterion(_Criterion):
    kind: Literal["report"] = "report"
    field: str
    value: Any
    tolerance: float = 0.005


Criterion = Annotated[
    RecordCriterion | UnchangedCriterion | ServiceUntouchedCriterion | CollateralCriterion | ReportCriterion,
    Field(discriminator="kind"),
]


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=RUBRIC_VERSION, ge=1, le=RUBRIC_VERSION)
    criteria: list[Criterion]
    penalty: float | None = Field(default=None, ge=0, description="Net score penalty per failed negative; None zeroes.")

    @model_validator(mode="after")
    def _checkable(self) -> Rubric:
        """From version 2 on, every criterion checks something: no generator can emit a void one."""
        if self.version < 2:
            return self
        earlier: set[str] = set()
        for c in self.criteria:
            if isinstance(c, RecordCriterion) and not (c.match or c.contains or c.includes):
                raise ValueError(f"criterion {c.id!r}: a record criterion needs match, contains or includes")
            if isinstance(c, RecordCriterion):
                for key, value in c.match.items():
                    ref = record_ref(value)
                    if ref is not None and ref not in earlier:
                        raise ValueError(
                            f"criterion {c.id!r}: match {key!r} refers to {ref!r}, no earlier record criterion"
                        )
                earlier.add(c.id)
            if isinstance(c, ReportCriterion):
                if not isinstance(c.value, Scalar) or c.value == "":
                    raise ValueError(f"criterion {c.id!r}: a report value must be a non-empty scalar")
                if not normal_key(c.field):
                    raise ValueError(f"criterion {c.id!r}: a report criterion needs a key")
            if isinstance(c, CollateralCriterion) and not c.negative:
                raise ValueError(f"criterion {c.id!r}: the collateral criterion is negative")
        return self


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


def normal_key(key: str) -> str:
    """A report key as compared: lower case, runs of anything but letters and digits as ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", str(key).casefold()).strip("_")


def _scalar_same(actual: Any, expected: Any, casefold: bool) -> bool:
    if casefold and isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual is expected
    if isinstance(actual, int | float) and isinstance(expected, int | float):
        return abs(float(actual) - float(expected)) < 1e-9
    return bool(actual == expected)


def _same(actual: Any, expected: Any, casefold: bool, version: int = RUBRIC_VERSION) -> bool:
    if version < 2:
        if isinstance(actual, list) and not isinstance(expected, list):
            return any(_same(item, expected, casefold, version) for item in actual)
        if casefold and isinstance(actual, str) and isinstance(expected, str):
            return actual.strip().casefold() == expected.strip().casefold()
        if isinstance(actual, int | float) and isinstance(expected, int | float) and not isinstance(actual, bool):
            return abs(float(actual) - float(expected)) < 1e-9
        return bool(actual == expected)
    if isinstance(actual, list) or isinstance(expected, list):
        # Sets, exactly: every expected item is there and nothing else is.
        have = actual if isinstance(actual, list) else [actual]
        want = expected if isinstance(expected, list) else [expected]
        return all(any(_item_same(a, w, casefold) for w in want) for a in have) and all(
            any(_item_same(a, w, casefold) for a in have) for w in want
        )
    return _scalar_same(actual, expected, casefold)


def _includes(actual: Any, items: list[Any], casefold: bool) -> bool:
    have = actual if isinstance(actual, list) else [actual]
    return all(any(_item_same(a, item, casefold) for a in have) for item in items)


def _item_same(have: Any, item: Any, casefold: bool) -> bool:
    """A list item matches a value; an item that is a sub-record (an event's attendee) matches a
    scalar one of its fields equals (the attendee's email)."""
    if isinstance(have, dict) and not isinstance(item, dict):
        return any(_scalar_same(v, item, casefold) for v in have.values() if not isinstance(v, dict | list))
    return _scalar_same(have, item, casefold)


def _contains(actual: Any, text: str) -> bool:
    return isinstance(actual, str) and str(text).strip().casefold() in actual.casefold()


def _records(state: Mapping[str, Any] | None, collection: str) -> dict[str, Any]:
    """The records of ``collection``: a top-level state field, or a ``/`` path for nested ones
    (simulated services keep theirs under ``collections/<name>``)."""
    node: Any = state or {}
    for part in collection.split("/"):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, dict) else {}


def record_ref(value: Any) -> str | None:
    """The criterion id of a ``{"$record": id}`` match value, else None."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("$record"), str):
        return str(value["$record"])
    return None


def _match_one(have: Any, want: Any, fold: bool, version: int, refs: Mapping[str, list[str]] | None) -> bool:
    ref = record_ref(want)
    if ref is None:
        return _same(have, want, fold, version)
    # unknown when a criterion is checked on its own: taken as met, so a lone check never fails
    # for want of the records another criterion matched
    return refs is None or have in refs.get(ref, ())


def record_hits(
    criterion: RecordCriterion,
    initial: Mapping[str, Any],
    final: Mapping[str, Any],
    version: int = RUBRIC_VERSION,
    refs: Mapping[str, list[str]] | None = None,
) -> list[str]:
    """The ids of the records ``criterion`` matches (new ones only, for ``expect="created"``);
    ``refs`` holds, per criterion id, the records it matched (for ``{"$record": id}`` values)."""
    records = _records(final.get(criterion.service), criterion.collection)
    fold = criterion.casefold
    ids: Any = records
    if criterion.expect == "created":  # only records that were not there at the start count
        existing = _records(initial.get(criterion.service), criterion.collection)
        ids = [rid for rid in records if rid not in existing] if existing is not records else []
    else:
        key = criterion.match.get("id")
        if isinstance(key, str) and isinstance(records.get(key), dict) and records[key].get("id") == key:
            ids = [key]  # records are kept by id: no other record can have this one
    hits = []
    for rid in ids:
        rec = records[rid]
        if not isinstance(rec, dict):
            continue
        if not all(k in rec and _match_one(rec[k], v, fold, version, refs) for k, v in criterion.match.items()):
            continue
        if version >= 2 and not (
            all(k in rec and _contains(rec[k], v) for k, v in criterion.contains.items())
            and all(k in rec and _includes(rec[k], v, fold) for k, v in criterion.includes.items())
        ):
            continue
        hits.append(rid)
    return hits


def _report_value(report: Mapping[str, Any] | None, key: str, version: int) -> Any:
    if not report:
        return None
    if version < 2:
        return report.get(key)
    wanted = normal_key(key)
    return next((v for k, v in report.items() if normal_key(k) == wanted), None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(",", "").lstrip("$€£").strip()
        try:
            return float(text)
        except ValueError:
            return None
    return None


def check(
    criterion: Any,
    initial: Mapping[str, Any],
    final: Mapping[str, Any],
    report: Mapping[str, Any] | None,
    version: int = RUBRIC_VERSION,
    refs: Mapping[str, list[str]] | None = None,
) -> CriterionResult:
    """Evaluate one criterion on its own; ``initial``/``final`` are ``{service: state JSON}``.

    Created-record criteria are matched one-to-one only by :func:`score`, which sees them all."""
    passed: bool
    if isinstance(criterion, RecordCriterion):
        hits = record_hits(criterion, initial, final, version, refs)
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
    elif isinstance(criterion, CollateralCriterion):
        extra = unexplained(units(initial, final, criterion.ignore), criterion.allowed)
        passed = not extra
        shown = "; ".join(u.describe() for u in extra[:3]) + (f"; … {len(extra) - 3} more" if len(extra) > 3 else "")
        detail = "every change is asked for" if passed else f"{len(extra)} change(s) not asked for: {shown}"
    else:
        actual = _report_value(report, criterion.field, version)
        expected = criterion.value
        if version < 2:
            if isinstance(actual, int | float) and isinstance(expected, int | float):
                passed = abs(float(actual) - float(expected)) <= criterion.tolerance
            else:
                passed = actual is not None and _same(actual, expected, True, 1)
        elif actual is None or not isinstance(actual, Scalar):
            passed = False  # a list or an object is not an answer
        elif isinstance(expected, int | float) and not isinstance(expected, bool):
            number = _number(actual)
            passed = number is not None and abs(number - float(expected)) <= criterion.tolerance
        else:
            passed = _scalar_same(actual if isinstance(expected, bool) else str(actual), expected, True)
        detail = f"reported {actual!r}, expected {expected!r}"
    return CriterionResult(
        id=criterion.id, passed=passed, negative=criterion.negative, weight=criterion.weight, detail=detail
    )


def _one_to_one(candidates: dict[str, list[str]]) -> set[str]:
    """The criteria that get a record of their own (a maximum bipartite matching, by augmenting
    paths: groups are a handful of criteria)."""
    owner: dict[str, str] = {}

    def place(criterion: str, seen: set[str]) -> bool:
        for rid in candidates[criterion]:
            if rid in seen:
                continue
            seen.add(rid)
            if rid not in owner or place(owner[rid], seen):
                owner[rid] = criterion
                return True
        return False

    for criterion in candidates:
        place(criterion, set())
    return set(owner.values())


def score(
    rubric: Rubric,
    initial: Mapping[str, Any],
    final: Mapping[str, Any],
    report: Mapping[str, Any] | None = None,
) -> ScoreResult:
    """Score a final state (and report) against ``rubric``; states are ``{service: state JSON}``."""
    version = rubric.version
    results = []
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    refs: dict[str, list[str]] = {}  # criterion id -> the records it matched, in criteria order
    referred = {
        ref
        for c in rubric.criteria
        if isinstance(c, RecordCriterion)
        for v in c.match.values()
        if (ref := record_ref(v))
    }
    for c in rubric.criteria:
        if version >= 2 and isinstance(c, RecordCriterion) and c.expect == "created":
            # the hits are found once: for the criterion, and for the one-to-one matching below
            hits = record_hits(c, initial, final, version, refs)
            groups.setdefault((c.service, c.collection), {})[c.id] = refs[c.id] = hits
            detail = f"{len(hits)} matching record(s) in {c.service}.{c.collection}"
            results.append(CriterionResult(id=c.id, passed=bool(hits), negative=c.negative, weight=c.weight,
                                           detail=detail))  # fmt: skip
        else:
            results.append(check(c, initial, final, report, version, refs))
            if isinstance(c, RecordCriterion) and c.id in referred:
                refs[c.id] = record_hits(c, initial, final, version, refs)
    if version >= 2:
        for (service, collection), candidates in groups.items():
            if len(candidates) < 2:
                continue
            placed = _one_to_one(candidates)
            for i, r in enumerate(results):
                if r.id in candidates and r.passed and r.id not in placed:
                    results[i] = r.model_copy(
                        update={"passed": False, "detail": f"no new {service}.{collection} record of its own"}
                    )
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
