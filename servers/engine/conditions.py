"""Guards of spec-run tools: a small evaluator of the spec's conditions.

A condition is ``{"left": operand, "op": op, "value": literal}`` or ``{..., "right": operand}``;
an operand is a parameter, ``record.<field>`` (the call's target record), ``<ref param>-><field>``
or ``record.<ref field>-><field>`` (the record a reference points to) or ``now`` (the service
clock). A comparison with a missing value (a null, a dangling reference) neither triggers a
guard's ``when`` nor fails its ``require``: it is *unknown*.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from servers.construction.spec import Condition, Guard

MISSING = object()
"""An operand that has no value: a null field or parameter, or a reference to no record."""

Lookup = Callable[[str, str], Any]
"""``(ref head, field)`` → the field of the record the head points to, or :data:`MISSING`."""

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not_in": lambda a, b: a not in b,
}


class Scope:
    """What operands read during one call: its arguments, its target record, the linked records."""

    def __init__(self, values: Mapping[str, Any], record: Any, clock: Any, linked: Lookup) -> None:
        self.values, self.record, self.clock, self.linked = values, record, clock, linked

    def operand(self, text: str) -> Any:
        if text == "now":
            return self.clock
        head, _, follow = text.partition("->")
        if follow:
            return self.linked(head, follow)
        if head.startswith("record."):
            value = getattr(self.record, head.removeprefix("record."))
        else:
            value = self.values.get(head)
        return MISSING if value is None else value


def holds(cond: Condition, scope: Scope) -> bool | None:
    """Whether the condition holds; None when an operand it compares is missing."""
    left = scope.operand(cond.left)
    if cond.op in ("present", "absent"):
        return (left is not MISSING) == (cond.op == "present")
    right = scope.operand(cond.right) if cond.right is not None else cond.value
    if left is MISSING or right is MISSING:
        return None
    if cond.op in ("in", "not_in") and cond.right is None:
        right = tuple(right)
    return _COMPARE[cond.op](*days(left, right))


def days(left: Any, right: Any) -> tuple[Any, Any]:
    """A date compared with a moment (a due date with ``now``) is compared with the moment's day:
    "not in the past" lets today through, and Python refuses to order a date and a datetime."""
    if isinstance(left, dt.datetime) and type(right) is dt.date:
        return left.date(), right
    if isinstance(right, dt.datetime) and type(left) is dt.date:
        return left, right.date()
    return left, right


def broken(guards: list[Guard], scope: Scope) -> Guard | None:
    """The first guard whose ``when`` all hold and some ``require`` fails (unknown never fails)."""
    for guard in guards:
        if all(holds(c, scope) is True for c in guard.when) and any(holds(c, scope) is False for c in guard.require):
            return guard
    return None
