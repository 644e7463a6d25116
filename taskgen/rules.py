"""House rules: a threshold on a value of the workflow that sends it down one branch or the other.

The value is an amount (a money role: "invoices above 5,000 EUR"), a date (a date role, compared by
day: "leases ending before Friday 13 March 2026") or a measure (a quantity, a duration, a
percentage, a rating: "orders of more than 40 units"). The threshold is drawn near the source
record's own value (a round number, or a day a few days off, as a person would state it), on the
side that makes the rule hold in about half the tasks that state one: when it holds, the reaction
the rule names is skipped (and its alternative done instead); the rubric scores the branch taken.
"""

from __future__ import annotations

import datetime as dt
import random

from servers.roles import ROLES
from taskgen.flowmodel import Branch, Located, is_currency, round_amount, spoken_amount
from taskgen.pattern import MEASURES, Rule

DATE_ROLES = frozenset(ROLES["date"]) - {"system", "birth"}
BOUNDS = {"percentage": (0.0, 100.0), "rating": (1.0, 5.0)}
"""Measures whose threshold must stay in their range ("ratings below 8" is no rule)."""
OFFSETS = (2, 3, 5, 7, 10, 14)
"""Days between a date and a threshold stated near it."""


def _role(rule: Rule) -> str:
    return rule.source.split(".", 1)[1].split(":")[0]


def compared(located: Located, rule: Rule) -> tuple[float, str, str] | None:
    """(value, kind, unit) the rule compares on ``located``: an amount (kind "amount", unit its
    currency when the record names one), a date as a day number (kind "date"), or a measure (kind
    its semantic type); None when the record has no such value, or two dates that disagree."""
    role = _role(rule)
    found = located.fields(role)
    if role in DATE_ROLES:
        days = {v[:10] for _, v, kind in found if kind in ("date", "date_time") and isinstance(v, str)}
        if len(days) != 1:
            return None  # "ends before ..." must mean one day
        try:
            day = dt.date.fromisoformat(days.pop())
        except ValueError:
            return None
        return float(day.toordinal()), "date", ""
    numbers = [v for _, v, _ in found if isinstance(v, int | float)]
    if not numbers:
        return None
    if role in MEASURES:
        return float(numbers[0]), role, ""
    currency = next((v for v in located.record.values() if isinstance(v, str) and is_currency(located, v)), "")
    return float(numbers[0]), "amount", currency


def stated(branch: Branch) -> str:
    """The threshold as the rule states it: "5,000 EUR", "Friday 13 March 2026", "40"."""
    if branch.kind == "date":
        day = dt.date.fromordinal(int(branch.threshold))
        return f"{day:%A} {day.day} {day:%B %Y}"
    return spoken_amount(branch.threshold) + (f" {branch.unit}" if branch.unit else "")


def recorded(branch: Branch) -> float | str:
    """The threshold as task metadata keeps it: the number, or the day in ISO form."""
    return dt.date.fromordinal(int(branch.threshold)).isoformat() if branch.kind == "date" else branch.threshold


def _round_measure(value: float) -> float:
    """A count, length or share as a person states it: whole below 10, a multiple of 5 below 100."""
    if value < 10:
        return float(round(value))
    return float(round(value / 5) * 5) if value < 100 else round_amount(value)


def rule_branch(
    located: Located | None, rule: Rule, rng: random.Random, held: bool | None = None, today: dt.date | None = None
) -> Branch | None:
    """``rule`` with a threshold on ``located``'s value of the rule's role, holding as ``held``
    says (drawn when None); None when the record has no positive value of that role. A day is
    stated on the same side of ``today`` as the record's: "shifts starting after 17 February" about
    next week's shifts, or "surveys that closed before 23 March" on 2 March, reads as nonsense."""
    if located is None:
        return None
    found = compared(located, rule)
    if found is None:
        return None
    value, kind, unit = found
    if value <= 0:
        return None
    coin = rng.random() < 0.5
    held = coin if held is None else held
    if kind == "date":
        offset = rng.choice(OFFSETS)
        threshold = value + offset if (rule.op == "<") == held else value - offset
        if today is not None and (value < today.toordinal()) != (threshold < today.toordinal()):
            return None
    else:
        factor = rng.choice((0.5, 0.6, 0.75, 0.8)) if (rule.op == ">") == held else rng.choice((1.25, 1.5, 2.0))
        threshold = round_amount(value * factor) if kind == "amount" else _round_measure(value * factor)
        low, high = BOUNDS.get(kind, (0.0, float("inf")))
        if not low < threshold < high:
            return None
    holds = value > threshold if rule.op == ">" else value < threshold
    if threshold <= 0 or threshold == value or holds != held:
        return None
    return Branch(rule, threshold, value, held, unit=unit, kind=kind)


def repeat_branch(located: Located, model: Branch) -> Branch | None:
    """The rule of ``model`` (its threshold as stated) on a second record handled the same way:
    whether it holds is the record's own business; None when the record has no value to compare
    or sits exactly on the threshold (where "above" would be a quibble)."""
    found = compared(located, model.rule)
    if found is None or found[0] == model.threshold:
        return None
    value, kind, unit = found
    if unit != model.unit or kind != model.kind:
        return None  # one threshold cannot be stated in two currencies
    held = value > model.threshold if model.rule.op == ">" else value < model.threshold
    return Branch(model.rule, model.threshold, value, held, unit=unit, kind=kind)
